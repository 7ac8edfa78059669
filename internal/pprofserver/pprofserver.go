// Package pprofserver serves Go's runtime profiles (net/http/pprof) on an
// address of their own, off unless an operator enables it (Config). The
// profiles expose the process's internals: bind them to loopback or a
// private network, never to the address agents reach.
package pprofserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// EnvAddr is the variable of Config.Addr, for the programs that start a
// gateway or worker with profiles on (a test asserts it is the tag's name).
const EnvAddr = "ONCEGATE_PPROF_ADDR"

// Config enables the profiles; it is part of the gateway's and the
// worker's configuration.
type Config struct {
	// Addr is the host:port the profiles are served on, such as
	// 127.0.0.1:6060; empty, nothing is served.
	Addr string `env:"ONCEGATE_PPROF_ADDR"`
}

// Handler returns the mux of the profile endpoints under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Start serves the profiles on c.Addr, in the background, and returns the
// function that stops the server. With no address it serves nothing and the
// function does nothing. A bad or busy address is an error, so that a
// profile asked for is never silently missing.
func Start(c Config, logger *slog.Logger) (func(), error) {
	addr := c.Addr
	if addr == "" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: listen: %w", EnvAddr, addr, err)
	}
	srv := &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof server stopped", "addr", addr, "err", err)
		}
	}()
	logger.Info("pprof profiles served", "addr", l.Addr().String(), "env", EnvAddr)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
