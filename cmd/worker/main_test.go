package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTakenMetricsPortStopsTheWorkerAtError: a worker whose
// WORKER_METRICS_URL port another process holds exits non-zero at once and
// says so in an ERROR line naming the port and the variable.
func TestTakenMetricsPortStopsTheWorkerAtError(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "worker")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	_, port, _ := net.SplitHostPort(held.Addr().String())
	metricsURL := "http://127.0.0.1:" + port + "/metrics"

	cmd := exec.Command(bin)
	cmd.Env = []string{
		"WORKER_METRICS_URL=" + metricsURL,
		// Never reached: the port is checked before anything is dialled.
		"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?sslmode=disable",
		"REDIS_URL=redis://127.0.0.1:1/0",
		"TEMPORAL_ADDRESS=127.0.0.1:1",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the worker did not stop on a taken port: %s", stderr.String())
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the worker must exit non-zero, got %v: %s", err, stderr.String())
	assert.NotEqual(t, 0, exit.ExitCode())

	var found bool
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		var line struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Err   string `json:"err"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "every line is JSON: %s", sc.Text())
		if line.Err == "" {
			continue
		}
		found = true
		assert.Equal(t, "ERROR", line.Level, sc.Text())
		assert.Contains(t, line.Err, "port "+port+" (WORKER_METRICS_URL="+metricsURL+") is already in use")
		assert.Contains(t, line.Err, "move this one with WORKER_METRICS_URL")
	}
	assert.True(t, found, "no line says why: %s", stderr.String())
}
