// Command downstream runs the downstream simulator of docs/contract.md §6: the
// payment service behind the gateway, persisting to PostgreSQL. Its
// environment is simulator.Config: DOWNSTREAM_URL (where to listen, default
// http://127.0.0.1:8090) and SIMULATOR_DATABASE_URL (required).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/listen"
)

// shutdownGrace is how long in-flight requests may take after a signal.
const shutdownGrace = 10 * time.Second

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := simulator.ConfigFromEnv(envconfig.OS())
	if err != nil {
		logger.Error("downstream: bad configuration", "err", err)
		stop()
		os.Exit(2)
	}
	if err := run(ctx, cfg, logger, nil); err != nil {
		logger.Error("downstream: stopped", "err", err)
		stop()
		os.Exit(1)
	}
}

// run serves the simulator until ctx ends, then shuts down gracefully. When
// ready is not nil it receives the listening address once requests are served.
func run(ctx context.Context, cfg simulator.Config, logger *slog.Logger, ready chan<- string) error {
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	sim, err := simulator.New(ctx, pool, logger)
	if err != nil {
		return fmt.Errorf("start simulator: %w", err)
	}
	defer sim.Close()
	ln, err := listen.TCP("DOWNSTREAM_URL", cfg.URL, cfg.ListenAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           sim.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: the hang_after_commit_ms fault holds responses on
		// purpose, for as long as it says.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("downstream simulator listening", "addr", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("downstream simulator shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
