// Package storeconn is where the gateway's and the worker's stores are: the
// PostgreSQL truth and the Redis fast path, as part of each binary's
// configuration (internal/envconfig). Connecting is the stores' job
// (pgstore.Open, redisstore.Connect).
package storeconn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/oncegate/oncegate/idemstore/redisstore"
)

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
	// RedisTLSCAFile is a PEM of the CAs that sign the Redis servers'
	// certificates, trusted besides the system's roots, for a private CA;
	// it needs TLS on (a rediss:// REDIS_URL).
	RedisTLSCAFile string `env:"REDIS_TLS_CA_FILE"`
}

// ErrNoRedis is Validate's answer when neither Redis variable is set.
var ErrNoRedis = errors.New("REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes) is required")

// Validate reports what the tags cannot say: one of the Redis variables is
// required, and a CA file only means something with TLS on.
func (c Config) Validate() error {
	if c.RedisURL == "" && c.RedisAddrs == "" {
		return ErrNoRedis
	}
	if c.RedisTLSCAFile != "" && !strings.HasPrefix(strings.TrimSpace(c.RedisURL), "rediss://") {
		return fmt.Errorf("REDIS_TLS_CA_FILE=%s needs TLS on: a rediss:// REDIS_URL (with REDIS_ADDRS it gives username, password and TLS)", c.RedisTLSCAFile)
	}
	return nil
}

// Redis is where the Redis fast path is, as redisstore.Connect takes it.
func (c Config) Redis() redisstore.ConnConfig {
	return redisstore.ConnConfig{URL: c.RedisURL, Addrs: c.RedisAddrs, TLSCAFile: c.RedisTLSCAFile}
}
