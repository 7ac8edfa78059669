// Command worker runs the Temporal worker of oncegate: the operation
// workflow and its activities, which alone call the downstream APIs. Its
// environment is worker.Config (docs/ARCHITECTURE.md, Configuration). It
// runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	temporallog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

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

	rdb, err := redisstore.Connect(cfg.Config.Redis())
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
	if err := redisstore.CountRoundTrips(rdb, reg); err != nil {
		return err
	}
	store := combined.New(redisstore.New(rdb), pg, combined.Options{
		Logger:     logger,
		Registerer: reg,
	})
	defer store.Close()
	sdkMetrics, meters, err := telemetry.SDKMetrics(reg)
	if err != nil {
		return err
	}
	defer func() { _ = meters.Shutdown(context.Background()) }()

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

	w, stopReaper, err := worker.Build(c, cfg, worker.Parts{Truth: pg, Store: store, Tracer: tracer, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	// Stopped when the worker stops (Run returns on SIGINT/SIGTERM).
	defer stopReaper()
	metricsCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	metricsLn.Serve(metricsCtx, reg, logger)

	// At SIGTERM the worker stops polling and lets the activities it runs
	// finish (a downstream call in flight gets its answer recorded) for up to
	// cfg.StopTimeout; then they are cancelled and Temporal retries or reconciles.
	logger.Info("worker starting", "task_queue", cfg.Temporal.TaskQueue)
	if err := w.Run(sdkworker.InterruptCh()); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
