// Command worker runs the Temporal worker of oncegate: the operation
// workflow and its activities, which alone call the downstream APIs. Its
// environment is worker.Config (docs/ARCHITECTURE.md, Configuration). It
// runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	temporallog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/worker"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "worker")
	slog.SetDefault(logger)
	if err := run(logger); err != nil {
		// At ERROR, with the cause: a worker that cannot start (a taken
		// metrics port, an unreachable store) says why and exits non-zero.
		logger.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx := context.Background()
	cfg, err := worker.ConfigFromEnv(envconfig.OS())
	if err != nil {
		return err
	}
	// Bound first: a taken port stops the worker before it connects to anything.
	metricsLn, err := worker.ListenMetrics(cfg.MetricsURL)
	if err != nil {
		return err
	}
	defer metricsLn.Close()
	stopPprof, err := pprofserver.Start(cfg.Pprof, logger)
	if err != nil {
		return err
	}
	defer stopPprof()

	rdb, err := redisstore.Connect(cfg.Config)
	if err != nil {
		return err
	}
	defer rdb.Close()

	pg, err := pgstore.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open truth: %w", err)
	}
	defer pg.Close()
	reg := worker.NewRegistry()
	store := combined.New(redisstore.New(rdb), pg, combined.Options{
		Logger:     logger,
		Registerer: reg,
	})
	defer store.Close()
	reg.MustRegister(worker.NewTruthCollector(pg))
	actMetrics, err := activities.NewMetrics(reg)
	if err != nil {
		return err
	}
	sdkMetrics, meters, err := telemetry.SDKMetrics(reg)
	if err != nil {
		return err
	}
	defer func() { _ = meters.Shutdown(context.Background()) }()
	metricsCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	metricsLn.Serve(metricsCtx, reg, logger)

	tracer, err := telemetry.NewTracerProvider(ctx, "oncegate-worker", cfg.Telemetry)
	if err != nil {
		return err
	}
	defer func() { _ = tracer.Shutdown(context.Background()) }()
	tracing, err := telemetry.TemporalInterceptor(tracer)
	if err != nil {
		return err
	}
	c, err := client.Dial(cfg.Temporal.Apply(client.Options{
		// The workflow and its activities continue the gateway's trace.
		Interceptors:   []interceptor.ClientInterceptor{tracing},
		Logger:         temporallog.NewStructuredLogger(logger),
		MetricsHandler: sdkMetrics,
	}))
	if err != nil {
		return fmt.Errorf("dial temporal: %w", err)
	}
	defer c.Close()

	acts := &activities.Activities{
		Truth: pg,
		Store: store,
		// The downstream call continues the activity's trace (traceparent).
		HTTP: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
			otelhttp.WithTracerProvider(tracer), otelhttp.WithPropagators(telemetry.Propagator))},
		Logger:  logger,
		Metrics: actMetrics,
	}
	// Stopped when the worker stops (Run returns on SIGINT/SIGTERM).
	reapCtx, stopReaper := context.WithCancel(ctx)
	defer stopReaper()
	if cfg.ReapInterval > 0 {
		logger.Info("reaper starting", "interval", cfg.ReapInterval, "safety_margin", reapSafetyMargin)
		go worker.RunReaper(reapCtx, pg, cfg.ReapInterval, func() time.Time {
			return time.Now().Add(-reapSafetyMargin)
		}, logger)
	} else {
		logger.Info("reaper disabled", "env", "ONCEGATE_REAP_INTERVAL")
	}

	// At SIGTERM the worker stops polling and lets the activities it runs
	// finish (a downstream call in flight gets its answer recorded) for up to
	// cfg.StopTimeout; then they are cancelled and Temporal retries or reconciles.
	w := worker.New(c, cfg.TaskQueue, acts, cfg.Options())
	logger.Info("worker starting", "task_queue", cfg.TaskQueue)
	if err := w.Run(sdkworker.InterruptCh()); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// reapSafetyMargin is how far behind this host's clock the reaper's cutoff
// stays. pgstore.Store.Reap is safe because the gateway refuses a
// fingerprint at or after its exp; but the gateway checks exp by its own
// clock, before it claims the operation and starts the workflow, so a row reaped
// exactly at exp by a worker whose clock runs ahead could be claimed afresh
// by a confirm the gateway still judged in time. The margin covers clock
// skew between hosts and that check-to-claim delay; it only keeps rows
// slightly longer.
const reapSafetyMargin = 5 * time.Minute
