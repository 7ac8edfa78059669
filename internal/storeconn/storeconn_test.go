package storeconn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/envconfig"
)

func TestConfig(t *testing.T) {
	c, err := envconfig.Parse[Config](map[string]string{"DATABASE_URL": "postgres://x", "REDIS_ADDRS": "a:1,b:2"})
	require.NoError(t, err)
	assert.NoError(t, c.Validate(), "REDIS_ADDRS alone is enough")

	c, err = envconfig.Parse[Config](map[string]string{"REDIS_URL": "redis://x"})
	assert.ErrorContains(t, err, `"DATABASE_URL" is not set`)
	assert.NoError(t, c.Validate())

	c, err = envconfig.Parse[Config](map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": " "})
	require.NoError(t, err)
	assert.ErrorIs(t, c.Validate(), ErrNoRedis)

	c, err = envconfig.Parse[Config](map[string]string{"DATABASE_URL": "postgres://x", "REDIS_ADDRS": "a:1", "REDIS_TLS_CA_FILE": "/ca.pem"})
	require.NoError(t, err)
	assert.ErrorContains(t, c.Validate(), "REDIS_TLS_CA_FILE=/ca.pem needs TLS on", "a CA without rediss:// means nothing")
	c.RedisURL = "rediss://a:1/0"
	assert.NoError(t, c.Validate())
}
