// Command gateway serves the oncegate HTTP API (docs/contract.md §4). It only wires:
// configuration from the environment, the stores, Temporal, the catalog, the
// fingerprint and receipt keys, the authenticators, then the HTTP server
// with a graceful shutdown.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/engine"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/listen"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/worker"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(logger)
	if err := run(logger); err != nil {
		logger.Error("gateway stopped", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	cfg, err := api.ConfigFromEnv(envconfig.OS())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Bound first: a taken port stops the gateway at once, naming it.
	ln, err := listen.TCP("GATEWAY_URL", cfg.Gateway.GatewayURL, cfg.ListenAddr)
	if err != nil {
		return err
	}
	defer ln.Close()
	stopPprof, err := pprofserver.Start(cfg.Pprof, logger)
	if err != nil {
		return err
	}
	defer stopPprof()

	cat, err := catalog.Load(cfg.CatalogPath, cfg.Gateway.ConfirmWait)
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	lims, err := limits.Load(cfg.LimitsPath, cat)
	if err != nil {
		return fmt.Errorf("ONCEGATE_LIMITS: %w", err)
	}
	keys, err := fingerprint.ParseKeyring(cfg.FingerprintKeys)
	if err != nil {
		return fmt.Errorf("ONCEGATE_FINGERPRINT_KEYS: %w", err)
	}
	receipts, err := receipt.ParseKeyring(cfg.ReceiptKeys)
	if err != nil {
		return fmt.Errorf("ONCEGATE_RECEIPT_KEYS: %w", err)
	}
	authn, mcpAuthn, err := authenticators(ctx, cfg, logger)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	truth, err := pgstore.Open(ctx, cfg.DatabaseURL) // migrates the schema
	if err != nil {
		return fmt.Errorf("open truth database: %w", err)
	}
	defer truth.Close()
	rdb, err := redisstore.Connect(cfg.Config.Redis())
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := redisstore.CountRoundTrips(rdb, reg); err != nil {
		return err
	}
	fast := redisstore.New(rdb)
	store := combined.New(fast, truth, combined.Options{Logger: logger, Registerer: reg,
		IntentHorizon: cat.MaxIntentWindow()})
	defer store.Close()
	var outcomes idemstore.OutcomeFeed // nil: confirms wait for their workflows' results
	if cfg.OutcomeFeed {
		feed := fast.WatchOutcomes(logger.With("component", "outcome-feed"))
		defer func() { _ = feed.Close() }()
		outcomes = feed
	}

	tracer, err := telemetry.NewTracerProvider(ctx, "oncegate-gateway", cfg.Telemetry)
	if err != nil {
		return err
	}
	defer func() { _ = tracer.Shutdown(context.Background()) }()
	tracing, err := telemetry.TemporalInterceptor(tracer)
	if err != nil {
		return err
	}
	// The SDK's own request and long-request counters by operation show
	// what each answer costs Temporal (temporal_request_total,
	// temporal_long_request_total on /metrics).
	sdkMetrics, meters, err := telemetry.SDKMetrics(reg)
	if err != nil {
		return err
	}
	defer func() { _ = meters.Shutdown(context.Background()) }()
	tc, err := client.Dial(cfg.Temporal.Apply(client.Options{
		// The request's trace continues into the workflow and its activities.
		Interceptors:   []interceptor.ClientInterceptor{tracing},
		Logger:         tlog.NewStructuredLogger(logger.With("component", "temporal")),
		MetricsHandler: sdkMetrics,
	}))
	if err != nil {
		return fmt.Errorf("dial temporal %s: %w", cfg.Temporal.Address, err)
	}
	defer tc.Close()

	if cfg.Gateway.InProcessWorker {
		stopWorker, err := startInProcessWorker(tc, truth, store, tracer, logger, reg)
		if err != nil {
			return err
		}
		// After the HTTP server drained (deferred calls run last first).
		defer stopWorker()
	}

	var alert gateway.AlertHook = gateway.NopAlert{}
	if cfg.AlertWebhook != "" {
		alert = gateway.NewWebhookAlert(cfg.AlertWebhook, nil, logger)
	}
	svc, err := gateway.New(gateway.Deps{
		Catalog: cat, Keyring: keys, Receipts: receipts, Claims: store, Engine: engine.New(tc, cfg.Temporal.TaskQueue, logger),
		Logger: logger, Registerer: reg, AlertHook: alert, Config: cfg.Gateway,
		Limits: lims, Rates: redis_rate.NewLimiter(rdb), Budgets: truth,
		Approvals: truth, // approvals and passkeys live in the truth
		Mandates:  truth, // and the standing mandates
		Outcomes:  outcomes,
	})
	if err != nil {
		return err
	}
	srv, err := api.New(svc, api.Options{Authenticator: authn, MCPAuthenticator: mcpAuthn, Logger: logger, Registerer: reg, Gatherer: reg,
		TracerProvider: tracer, Config: cfg})
	if err != nil {
		return err
	}

	hs := &http.Server{
		Addr:              cfg.ListenAddr,
		Handler:           srv.Handler(),
		TLSConfig:         cfg.TLS,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() {
		logger.Info("gateway listening", "addr", cfg.ListenAddr, "https", cfg.TLS != nil, "instance", svc.InstanceID(),
			"task_queue", cfg.Temporal.TaskQueue, "temporal", cfg.Temporal.Address, "env", cfg.Gateway.Env)
		if cfg.TLS != nil {
			errc <- hs.ServeTLS(ln, "", "") // the certificate is in hs.TLSConfig
			return
		}
		errc <- hs.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Drain: stop accepting, let every request in flight get its answer
	// (a confirm waits at most its confirm wait), then close the stores.
	logger.Info("gateway shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("gateway drained")
	return nil
}

// startInProcessWorker starts the Temporal worker in the gateway's process
// (ONCEGATE_INPROCESS_WORKER), on the gateway's Temporal client, so that
// eager starts hand it their first workflow task. The worker's variables
// (pollers, stop timeout, reaper) apply; its metrics are on the gateway's
// /metrics.
func startInProcessWorker(tc client.Client, truth *pgstore.Store, store idemstore.Store, tracer trace.TracerProvider,
	logger *slog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	wcfg, err := worker.ConfigFromEnv(envconfig.OS())
	if err != nil {
		return nil, err
	}
	w, stopReaper, err := worker.Build(tc, wcfg, worker.Parts{Truth: truth, Store: store, Tracer: tracer,
		Logger: logger.With("component", "worker"), Registerer: reg})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		stopReaper()
		return nil, fmt.Errorf("start the in-process worker: %w", err)
	}
	logger.Info("in-process worker started", "task_queue", wcfg.Temporal.TaskQueue)
	return func() { w.Stop(); stopReaper() }, nil
}

// authenticators chain the token file, the JWT verifier and the OIDC
// issuers, whichever are configured: one chain for the REST API and one
// for the MCP endpoint, whose OIDC tokens are those issued for the MCP
// resource (api.OIDCAuthenticators; the issuers' keys are discovered in
// the background until ctx ends).
func authenticators(ctx context.Context, cfg api.Config, logger *slog.Logger) (rest, mcp auth.Authenticator, err error) {
	chain, err := staticAuthenticators(cfg)
	if err != nil {
		return nil, nil, err
	}
	oidcREST, oidcMCP, err := api.OIDCAuthenticators(ctx, cfg, logger.With("component", "oidc"))
	if err != nil {
		return nil, nil, err
	}
	if oidcREST == nil {
		if len(chain) == 0 {
			return nil, nil, errors.New("no authenticator: set ONCEGATE_OIDC_ISSUER, ONCEGATE_TOKENS or ONCEGATE_JWT_HS256_SECRET / ONCEGATE_JWT_PUBLIC_KEYS")
		}
		return chain, chain, nil
	}
	return append(slices.Clone(chain), oidcREST), append(slices.Clone(chain), oidcMCP), nil
}

// staticAuthenticators chains the token file and the JWT verifier, whichever are configured.
func staticAuthenticators(cfg api.Config) (auth.Chain, error) {
	var chain auth.Chain
	if cfg.TokensPath != "" {
		t, err := auth.LoadTokens(cfg.TokensPath)
		if err != nil {
			return nil, fmt.Errorf("ONCEGATE_TOKENS: %w", err)
		}
		chain = append(chain, t)
	}
	if cfg.JWTHS256Secret != "" || cfg.JWTPublicKeysPath != "" {
		jc := auth.JWTConfig{HS256Secret: []byte(cfg.JWTHS256Secret), Audience: cfg.JWTAudience}
		if cfg.JWTPublicKeysPath != "" {
			keys, err := auth.LoadPublicKeysPEM(cfg.JWTPublicKeysPath)
			if err != nil {
				return nil, fmt.Errorf("ONCEGATE_JWT_PUBLIC_KEYS: %w", err)
			}
			jc.PublicKeys = keys
		}
		j, err := auth.NewJWT(jc)
		if err != nil {
			return nil, fmt.Errorf("jwt: %w", err)
		}
		chain = append(chain, j)
	}
	return chain, nil
}
