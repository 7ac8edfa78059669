package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		addr    string
		wantErr string
	}{
		{"defaults", map[string]string{"SIMULATOR_DATABASE_URL": "postgres://x/y"}, "127.0.0.1:8090", ""},
		{"custom URL", map[string]string{"DOWNSTREAM_URL": "http://0.0.0.0:9999/", "SIMULATOR_DATABASE_URL": "postgres://x/y"}, "0.0.0.0:9999", ""},
		{"no port", map[string]string{"DOWNSTREAM_URL": "http://localhost", "SIMULATOR_DATABASE_URL": "postgres://x/y"}, "localhost:80", ""},
		{"missing database", map[string]string{}, "", "SIMULATOR_DATABASE_URL is required"},
		{"bad URL", map[string]string{"DOWNSTREAM_URL": "127.0.0.1:8090", "SIMULATOR_DATABASE_URL": "postgres://x/y"}, "", "DOWNSTREAM_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadConfig(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.addr, cfg.listenAddr)
		})
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	t.Parallel()
	cfg := config{listenAddr: "127.0.0.1:" + strconv.Itoa(testenv.MustFreePort(t)), databaseURL: testenv.NewDatabase(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()

	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run ended early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
}
