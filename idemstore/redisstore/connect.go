package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Connect builds the Redis client the gateway and the worker use.
//
// With addrs set (REDIS_ADDRS: host:port[,host:port...], nodes of a Redis
// Cluster; one is enough to discover the rest, listing all of them survives
// any one being down) it returns go-redis's cluster client, with the
// username, password and TLS (rediss://) of redisURL when redisURL is set
// too; a cluster has only database 0, so any other database in redisURL is
// refused. Otherwise it returns a single-node client on redisURL (REDIS_URL).
// The caller closes the client.
func Connect(redisURL, addrs string) (redis.UniversalClient, error) {
	nodes := splitAddrs(addrs)
	if len(nodes) == 0 {
		if strings.TrimSpace(redisURL) == "" {
			return nil, errors.New("connect redis: set REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes)")
		}
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, fmt.Errorf("parse REDIS_URL: %w", err)
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
	}
	return redis.NewUniversalClient(u), nil
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
