// Package storeconn is where the gateway's and the worker's stores are: the
// PostgreSQL truth and the Redis fast path, as part of each binary's
// configuration (internal/envconfig). Connecting is the stores' job
// (pgstore.Open, redisstore.Connect).
package storeconn

import "errors"

// Config names the stores. Both binaries embed it, so its fields read as
// their own (cfg.DatabaseURL).
type Config struct {
	// DatabaseURL is the PostgreSQL truth (pool_max_conns in it sizes the pool).
	DatabaseURL string `env:"DATABASE_URL,required,notEmpty"`
	// RedisURL is the Redis fast path, one server; required unless
	// RedisAddrs is set (pool_size in it sizes the pool).
	RedisURL string `env:"REDIS_URL"`
	// RedisAddrs lists Redis Cluster nodes, host:port comma-separated; set,
	// the cluster client is used (redisstore.Connect).
	RedisAddrs string `env:"REDIS_ADDRS"`
}

// ErrNoRedis is Validate's answer when neither Redis variable is set.
var ErrNoRedis = errors.New("REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes) is required")

// Validate reports what the tags cannot say: one of the Redis variables is
// required.
func (c Config) Validate() error {
	if c.RedisURL == "" && c.RedisAddrs == "" {
		return ErrNoRedis
	}
	return nil
}
