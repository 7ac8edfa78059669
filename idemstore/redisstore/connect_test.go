package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore/redisstore"
)

func TestConnect(t *testing.T) {
	t.Parallel()
	_, err := redisstore.Connect("", " , ")
	assert.ErrorContains(t, err, "REDIS_ADDRS")

	single, err := redisstore.Connect("redis://127.0.0.1:1/3", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })
	assert.IsType(t, &redis.Client{}, single)

	cluster, err := redisstore.Connect("rediss://u:secret@ignored:1/0", "127.0.0.1:1, 127.0.0.1:2")
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Close() })
	cc, ok := cluster.(*redis.ClusterClient)
	require.True(t, ok, "%T", cluster)
	opts := cc.Options()
	assert.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, opts.Addrs)
	assert.Equal(t, "u", opts.Username)
	assert.Equal(t, "secret", opts.Password)
	assert.NotNil(t, opts.TLSConfig, "rediss:// turns TLS on")

	oneSeed, err := redisstore.Connect("", "127.0.0.1:1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = oneSeed.Close() })
	assert.IsType(t, &redis.ClusterClient{}, oneSeed, "one seed node is still a cluster")

	_, err = redisstore.Connect("redis://127.0.0.1:1/2", "127.0.0.1:1")
	assert.ErrorContains(t, err, "only database 0")
	_, err = redisstore.Connect("http://x", "")
	assert.ErrorContains(t, err, "REDIS_URL")
}
