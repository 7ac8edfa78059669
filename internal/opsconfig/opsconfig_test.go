package opsconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(nil)
	require.NoError(t, err)
	assert.Equal(t, Config{GatewayURL: "http://127.0.0.1:8080", Token: "dev-ops"}, c)
	c, err = FromEnv(map[string]string{"GATEWAY_URL": "https://gw.example", "ONCEGATE_OPS_TOKEN": "tok"})
	require.NoError(t, err)
	assert.Equal(t, Config{GatewayURL: "https://gw.example", Token: "tok"}, c)
}
