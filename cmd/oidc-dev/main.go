// Command oidc-dev is the dev stack's identity provider (`make up OIDC=1`,
// docs/identity.md): it runs Ory Hydra (./bin/hydra, in-memory storage, JWT
// access tokens) on HYDRA_URL and HYDRA_ADMIN_URL, its login-and-consent
// app on HYDRA_CONSENT_URL, and registers the dev clients: an agent
// (HYDRA_AGENT_CLIENT_ID/_SECRET: scopes payments and oncegate:mcp, for the
// REST API and the MCP endpoint) and an operator (HYDRA_OPERATOR_CLIENT_ID/
// _SECRET: scope oncegate:operator), by client credentials, and a person's
// console (HYDRA_CONSOLE_CLIENT_ID, authorization code with PKCE). Part of the
// harness: dev and tests only. It runs until SIGINT or SIGTERM and stops
// Hydra with it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oncegate/oncegate/harness/hydra"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("oidc-dev stopped", "err", err)
		os.Exit(1)
	}
}

// env is a required variable's value.
func env(name string) (string, error) {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s is required", name)
}

// portOf is a URL's port.
func portOf(name, raw string) (int, error) {
	u, err := url.Parse(raw)
	if err == nil {
		if p, perr := strconv.Atoi(u.Port()); perr == nil {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%s=%q: want http://127.0.0.1:<port>", name, raw)
}

func run(logger *slog.Logger) error {
	vars := map[string]string{}
	var errs []error
	for _, name := range []string{"HYDRA_URL", "HYDRA_ADMIN_URL", "HYDRA_CONSENT_URL", "ONCEGATE_OIDC_AUDIENCE", "ONCEGATE_MCP_RESOURCE",
		"HYDRA_AGENT_CLIENT_ID", "HYDRA_AGENT_CLIENT_SECRET", "HYDRA_OPERATOR_CLIENT_ID", "HYDRA_OPERATOR_CLIENT_SECRET",
		"HYDRA_CONSOLE_CLIENT_ID", "HYDRA_CONSOLE_REDIRECT_URI", "ONCEGATE_RUN_DIR"} {
		v, err := env(name)
		vars[name] = v
		errs = append(errs, err)
	}
	ports := map[string]int{}
	for _, name := range []string{"HYDRA_URL", "HYDRA_ADMIN_URL", "HYDRA_CONSENT_URL"} {
		p, err := portOf(name, vars[name])
		ports[name] = p
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Hydra reads its configuration from the environment too (OIDC is its
	// oidc section, DSN its storage, ...): the stack's variables are named
	// so that none is one of Hydra's, and OIDC=1 of `make up OIDC=1` is
	// not passed on.
	if err := os.Unsetenv("OIDC"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	dir := filepath.Join(vars["ONCEGATE_RUN_DIR"], "hydra.d") // Hydra's own log
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h, err := hydra.Start(startCtx, hydra.Options{Dir: dir,
		PublicPort: ports["HYDRA_URL"], AdminPort: ports["HYDRA_ADMIN_URL"], ConsentPort: ports["HYDRA_CONSENT_URL"]})
	if err != nil {
		return err
	}
	defer h.Stop()
	audiences := []string{vars["ONCEGATE_OIDC_AUDIENCE"], vars["ONCEGATE_MCP_RESOURCE"]}
	for _, c := range []hydra.Client{
		hydra.MachineClient(vars["HYDRA_AGENT_CLIENT_ID"], vars["HYDRA_AGENT_CLIENT_SECRET"], []string{"payments", "oncegate:mcp"}, audiences),
		hydra.MachineClient(vars["HYDRA_OPERATOR_CLIENT_ID"], vars["HYDRA_OPERATOR_CLIENT_SECRET"], []string{"oncegate:operator"}, audiences),
		hydra.PersonClient(vars["HYDRA_CONSOLE_CLIENT_ID"], vars["HYDRA_CONSOLE_REDIRECT_URI"], []string{"openid", "oncegate:operator", "payments"}, audiences),
	} {
		if _, err := h.CreateClient(startCtx, c); err != nil {
			return err
		}
	}
	logger.Info("oidc-dev: Hydra is up, the dev clients are registered", "issuer", h.Issuer, "admin", h.AdminURL,
		"consent", h.Consent.URL, "log", h.Proc.LogPath)
	select {
	case <-ctx.Done():
	case <-exited(h):
		return fmt.Errorf("hydra exited; see %s", h.Proc.LogPath)
	}
	return nil
}

// exited is closed when Hydra's process has exited.
func exited(h *hydra.Hydra) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for h.Proc.Running() {
			time.Sleep(time.Second)
		}
		close(done)
	}()
	return done
}
