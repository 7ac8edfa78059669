package rebuild

import (
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/temporalconn"
)

// Config is the configuration of cmd/oncegate-rebuild (ARCHITECTURE.md,
// Configuration): the restored truth and the Temporal that outlived it.
type Config struct {
	// DatabaseURL is the restored truth (DATABASE_URL, as the gateway's).
	DatabaseURL string `env:"DATABASE_URL,required,notEmpty"`
	// Temporal is where and how the Temporal client connects
	// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS*).
	Temporal temporalconn.Config
}

// ConfigFromEnv reads the configuration from environ (envconfig.OS() in
// main) and loads the Temporal TLS files; every problem is reported at once.
func ConfigFromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	if err := errors.Join(err, c.Temporal.Load()); err != nil {
		return Config{}, fmt.Errorf("rebuild config: %w", err)
	}
	return c, nil
}
