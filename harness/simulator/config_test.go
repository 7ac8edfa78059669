package simulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
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
		{"missing database", map[string]string{}, "", `required environment variable "SIMULATOR_DATABASE_URL" is not set`},
		{"bad URL", map[string]string{"DOWNSTREAM_URL": "127.0.0.1:8090", "SIMULATOR_DATABASE_URL": "postgres://x/y"}, "", "DOWNSTREAM_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ConfigFromEnv(tc.env)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.addr, cfg.ListenAddr)
		})
	}
}
