// Package opsconfig is the configuration of the operator's CLI,
// cmd/oncegate-ops: which gateway it talks to, with which token.
package opsconfig

import (
	"fmt"

	"github.com/oncegate/oncegate/internal/envconfig"
)

// Config is the ops CLI's configuration (ARCHITECTURE.md, Configuration).
type Config struct {
	// GatewayURL is the gateway's base URL.
	GatewayURL string `env:"GATEWAY_URL" envDefault:"http://127.0.0.1:8080"`
	// Token is the operator's bearer token (the dev stack's by default).
	Token string `env:"ONCEGATE_OPS_TOKEN" envDefault:"dev-ops"`
}

// FromEnv reads the configuration from environ (envconfig.OS() in main).
func FromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	if err != nil {
		return Config{}, fmt.Errorf("ops config: %w", err)
	}
	return c, nil
}
