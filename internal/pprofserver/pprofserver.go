// Package pprofserver serves Go's runtime profiles (net/http/pprof) on an
// address of their own, off unless an operator enables it with EnvAddr. The
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

// EnvAddr is the environment variable that enables the profiles: a
// host:port such as 127.0.0.1:6060. Unset or empty, nothing is served.
const EnvAddr = "ONCEGATE_PPROF_ADDR"

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

// StartFromEnv serves the profiles on the address getenv(EnvAddr) names, in
// the background, and returns the function that stops the server. With the
// variable unset it serves nothing and the function does nothing. A bad or
// busy address is an error, so that a profile asked for is never silently
// missing.
func StartFromEnv(getenv func(string) string, logger *slog.Logger) (func(), error) {
	addr := getenv(EnvAddr)
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
