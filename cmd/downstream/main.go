// Command downstream runs the downstream simulator of CONTRACT §6: the
// payment service behind the gateway, persisting to PostgreSQL.
//
// Environment:
//
//	DOWNSTREAM_URL          where to listen, as a URL (default http://127.0.0.1:8090)
//	SIMULATOR_DATABASE_URL  the simulator's PostgreSQL database (required)
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncegate/oncegate/internal/simulator"
)

// defaultDownstreamURL is where the simulator listens without DOWNSTREAM_URL.
const defaultDownstreamURL = "http://127.0.0.1:8090"

// shutdownGrace is how long in-flight requests may take after a signal.
const shutdownGrace = 10 * time.Second

// config is what the environment tells the simulator.
type config struct {
	listenAddr  string
	databaseURL string
}

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(os.Getenv)
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

// loadConfig reads the configuration from getenv.
func loadConfig(getenv func(string) string) (config, error) {
	raw := getenv("DOWNSTREAM_URL")
	if raw == "" {
		raw = defaultDownstreamURL
	}
	addr, err := listenAddr(raw)
	if err != nil {
		return config{}, fmt.Errorf("DOWNSTREAM_URL: %w", err)
	}
	db := getenv("SIMULATOR_DATABASE_URL")
	if db == "" {
		return config{}, errors.New("SIMULATOR_DATABASE_URL is required: the PostgreSQL URL of the simulator's database, e.g. postgres://user@127.0.0.1:5433/simulator")
	}
	return config{listenAddr: addr, databaseURL: db}, nil
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

// run serves the simulator until ctx ends, then shuts down gracefully. When
// ready is not nil it receives the listening address once requests are served.
func run(ctx context.Context, cfg config, logger *slog.Logger, ready chan<- string) error {
	pool, err := pgxpool.New(ctx, cfg.databaseURL)
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
	ln, err := net.Listen("tcp", cfg.listenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
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
