package simulator

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/oncegate/oncegate/internal/envconfig"
)

// Config is cmd/downstream's configuration (ARCHITECTURE.md,
// Configuration), parsed from the environment by ConfigFromEnv.
type Config struct {
	// URL is where the simulator is reached; ListenAddr comes from it.
	URL string `env:"DOWNSTREAM_URL" envDefault:"http://127.0.0.1:8090"`
	// DatabaseURL is the simulator's own PostgreSQL database, such as
	// postgres://user@127.0.0.1:5433/simulator.
	DatabaseURL string `env:"SIMULATOR_DATABASE_URL,required,notEmpty"`
	// ListenAddr is the host:port to listen on, taken from URL.
	ListenAddr string
}

// ConfigFromEnv reads the configuration from environ (envconfig.OS() in
// main); every problem is reported at once.
func ConfigFromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	addr, aerr := listenAddr(c.URL)
	if aerr != nil {
		aerr = fmt.Errorf("DOWNSTREAM_URL: %w", aerr)
	}
	if err := errors.Join(err, aerr); err != nil {
		return Config{}, fmt.Errorf("downstream config: %w", err)
	}
	c.ListenAddr = addr
	return c, nil
}

// listenAddr turns a service URL into the host:port to listen on.
func listenAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", raw, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("%q is not an http://host:port URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
