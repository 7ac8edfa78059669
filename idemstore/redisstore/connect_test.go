package redisstore_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/redisstore"
)

func TestConnect(t *testing.T) {
	t.Parallel()
	_, err := redisstore.Connect(redisstore.ConnConfig{Addrs: " , "})
	assert.ErrorContains(t, err, "REDIS_ADDRS")

	single, err := redisstore.Connect(redisstore.ConnConfig{URL: "redis://127.0.0.1:1/3"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })
	assert.IsType(t, &redis.Client{}, single)

	cluster, err := redisstore.Connect(redisstore.ConnConfig{URL: "rediss://u:secret@ignored:1/0", Addrs: "127.0.0.1:1, 127.0.0.1:2"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Close() })
	cc, ok := cluster.(*redis.ClusterClient)
	require.True(t, ok, "%T", cluster)
	opts := cc.Options()
	assert.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, opts.Addrs)
	assert.Equal(t, "u", opts.Username)
	assert.Equal(t, "secret", opts.Password)
	require.NotNil(t, opts.TLSConfig, "rediss:// turns TLS on")
	assert.Empty(t, opts.TLSConfig.ServerName, "each node is verified against its own address, not REDIS_URL's host")

	oneSeed, err := redisstore.Connect(redisstore.ConnConfig{Addrs: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = oneSeed.Close() })
	assert.IsType(t, &redis.ClusterClient{}, oneSeed, "one seed node is still a cluster")

	_, err = redisstore.Connect(redisstore.ConnConfig{URL: "redis://127.0.0.1:1/2", Addrs: "127.0.0.1:1"})
	assert.ErrorContains(t, err, "only database 0")
	_, err = redisstore.Connect(redisstore.ConnConfig{URL: "http://x"})
	assert.ErrorContains(t, err, "REDIS_URL")
}

// TestConnectPrivateCA: REDIS_TLS_CA_FILE's CAs are trusted (single node
// and cluster); a file without TLS on, a missing file and one without a
// certificate are refused, naming the variable.
func TestConnectPrivateCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, testenv.NewSelfSigned(t, "test CA").CertPEM, 0o600))
	for _, c := range []redisstore.ConnConfig{
		{URL: "rediss://127.0.0.1:1/0", TLSCAFile: ca},
		{URL: "rediss://127.0.0.1:1/0", Addrs: "127.0.0.1:1", TLSCAFile: ca},
	} {
		rdb, err := redisstore.Connect(c)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		var tc *tls.Config
		switch r := rdb.(type) {
		case *redis.Client:
			tc = r.Options().TLSConfig
		case *redis.ClusterClient:
			tc = r.Options().TLSConfig
		}
		require.NotNil(t, tc)
		assert.NotNil(t, tc.RootCAs, "the CA file's pool, %+v", c)
	}
	_, err := redisstore.Connect(redisstore.ConnConfig{URL: "redis://127.0.0.1:1/0", TLSCAFile: ca})
	assert.ErrorContains(t, err, "REDIS_TLS_CA_FILE")
	_, err = redisstore.Connect(redisstore.ConnConfig{URL: "rediss://127.0.0.1:1/0", TLSCAFile: filepath.Join(dir, "missing.pem")})
	assert.ErrorContains(t, err, "REDIS_TLS_CA_FILE")
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("no certificate here"), 0o600))
	_, err = redisstore.Connect(redisstore.ConnConfig{URL: "rediss://127.0.0.1:1/0", TLSCAFile: empty})
	assert.ErrorContains(t, err, "no PEM certificate")
}
