package api

import (
	"testing"

	"github.com/oncegate/oncegate/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigRedisAddrs: REDIS_ADDRS alone (a Redis Cluster) is enough; with
// neither it and REDIS_URL the error names both.
func TestConfigRedisAddrs(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL": "postgres://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc", "ONCEGATE_ENV": gateway.EnvDev,
		"REDIS_ADDRS": "127.0.0.1:7001,127.0.0.1:7002",
	}
	c, err := ConfigFromEnv(env)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7001,127.0.0.1:7002", c.RedisAddrs)
	assert.Empty(t, c.RedisURL)

	delete(env, "REDIS_ADDRS")
	_, err = ConfigFromEnv(env)
	assert.ErrorContains(t, err, "REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes) is required")
}
