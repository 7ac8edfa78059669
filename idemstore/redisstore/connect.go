package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ConnConfig is where Redis is and how to reach it: what the gateway's and
// the worker's configuration say (internal/storeconn's Redis).
type ConnConfig struct {
	// URL is REDIS_URL: one server, or the credentials and TLS of a
	// cluster's nodes.
	URL string
	// Addrs is REDIS_ADDRS: Redis Cluster nodes, host:port comma-separated.
	Addrs string
	// TLSCAFile is REDIS_TLS_CA_FILE: a PEM of the CAs that sign the
	// servers' certificates, trusted besides the system's roots.
	TLSCAFile string
}

// Connect builds the Redis client the gateway and the worker use.
//
// With addrs set (REDIS_ADDRS: host:port[,host:port...], nodes of a Redis
// Cluster; one is enough to discover the rest, listing all of them survives
// any one being down) it returns go-redis's cluster client, with the
// username, password and TLS (rediss://) of redisURL when redisURL is set
// too; a cluster has only database 0, so any other database in redisURL is
// refused. Otherwise it returns a single-node client on redisURL (REDIS_URL).
// With c.TLSCAFile set, its CAs are trusted besides the system's roots.
// The caller closes the client.
func Connect(c ConnConfig) (redis.UniversalClient, error) {
	redisURL := c.URL
	nodes := splitAddrs(c.Addrs)
	if len(nodes) == 0 {
		if strings.TrimSpace(redisURL) == "" {
			return nil, errors.New("connect redis: set REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes)")
		}
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, fmt.Errorf("parse REDIS_URL: %w", err)
		}
		if err := trustCA(opts.TLSConfig, c.TLSCAFile); err != nil {
			return nil, err
		}
		return redis.NewClient(opts), nil
	}
	u := &redis.UniversalOptions{Addrs: nodes, IsClusterMode: true}
	if strings.TrimSpace(redisURL) != "" {
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, fmt.Errorf("parse REDIS_URL: %w", err)
		}
		if opts.DB != 0 {
			return nil, fmt.Errorf("REDIS_URL names database %d, but a Redis Cluster (REDIS_ADDRS) has only database 0", opts.DB)
		}
		u.Username, u.Password, u.TLSConfig = opts.Username, opts.Password, opts.TLSConfig
		if u.TLSConfig != nil {
			// Each node's certificate is checked against the address it is
			// dialled at, not against REDIS_URL's host.
			u.TLSConfig.ServerName = ""
		}
	}
	if err := trustCA(u.TLSConfig, c.TLSCAFile); err != nil {
		return nil, err
	}
	return redis.NewUniversalClient(u), nil
}

// trustCA adds the CAs of the PEM file caFile (REDIS_TLS_CA_FILE) to the
// system's roots in tc; an empty caFile changes nothing, and a file
// without TLS on is refused.
func trustCA(tc *tls.Config, caFile string) error {
	if caFile == "" {
		return nil
	}
	if tc == nil {
		return fmt.Errorf("REDIS_TLS_CA_FILE=%s needs TLS on: a rediss:// REDIS_URL", caFile)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("REDIS_TLS_CA_FILE: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("REDIS_TLS_CA_FILE %s: no PEM certificate in it", caFile)
	}
	tc.RootCAs = pool
	return nil
}

// splitAddrs splits a comma-separated list of host:port, dropping empty items.
func splitAddrs(addrs string) []string {
	var out []string
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
