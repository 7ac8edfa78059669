// Command worker runs the Temporal worker of oncegate: the operation
// workflow and its activities, which alone call the downstream APIs.
//
// Environment: DATABASE_URL (required), REDIS_URL or REDIS_ADDRS (Redis
// Cluster nodes, comma-separated; one of them required), TEMPORAL_ADDRESS
// (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default default),
// TEMPORAL_TLS, TEMPORAL_TLS_CA_FILE, TEMPORAL_TLS_CERT_FILE,
// TEMPORAL_TLS_KEY_FILE, TEMPORAL_TLS_SERVER_NAME (TLS and mTLS, see package
// temporalconn), ONCEGATE_TASK_QUEUE (default oncegate),
// ONCEGATE_REAP_INTERVAL (how often expired terminal truth records are
// deleted, a Go duration; default 10m, 0 disables),
// ONCEGATE_WORKER_STOP_TIMEOUT (how long running activities may finish at
// SIGTERM; default 30s), WORKER_METRICS_URL (where Prometheus metrics are
// served; default http://127.0.0.1:9091/metrics), ONCEGATE_WORKER_POLLERS
// (pollers per task kind; unset: the SDK's defaults), ONCEGATE_PPROF_ADDR
// (serve net/http/pprof there; unset: off). It runs until SIGINT or
// SIGTERM.
package main

import (
	"context"
	"fmt"
	"log"
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
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/temporalconn"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "worker")
	slog.SetDefault(logger)
	ctx := context.Background()
	stopPprof, err := pprofserver.StartFromEnv(os.Getenv, logger)
	if err != nil {
		log.Fatal(err)
	}
	defer stopPprof()

	databaseURL := os.Getenv("DATABASE_URL")
	if databaseURL == "" {
		log.Fatal("DATABASE_URL is required")
	}
	rdb, err := redisstore.Connect(os.Getenv("REDIS_URL"), os.Getenv("REDIS_ADDRS"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	reapInterval, err := reapIntervalFromEnv()
	if err != nil {
		log.Fatal(err)
	}

	pg, err := pgstore.Open(ctx, databaseURL)
	if err != nil {
		log.Fatalf("open truth: %v", err)
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
		log.Fatal(err)
	}
	sdkMetrics, meters, err := worker.SDKMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = meters.Shutdown(context.Background()) }()
	metricsCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	if err := worker.ServeMetrics(metricsCtx, envOr("WORKER_METRICS_URL", worker.DefaultMetricsURL), reg, logger); err != nil {
		log.Fatal(err)
	}

	tracer, err := telemetry.NewTracerProvider(ctx, "oncegate-worker")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = tracer.Shutdown(context.Background()) }()
	tracing, err := telemetry.TemporalInterceptor(tracer)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := temporalconn.FromEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	stopTimeout, err := stopTimeoutFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(conn.Apply(client.Options{
		// The workflow and its activities continue the gateway's trace.
		Interceptors:   []interceptor.ClientInterceptor{tracing},
		Logger:         temporallog.NewStructuredLogger(logger),
		MetricsHandler: sdkMetrics,
	}))
	if err != nil {
		log.Fatalf("dial temporal: %v", err)
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
	if reapInterval > 0 {
		logger.Info("reaper starting", "interval", reapInterval, "safety_margin", reapSafetyMargin)
		go worker.RunReaper(reapCtx, pg, reapInterval, func() time.Time {
			return time.Now().Add(-reapSafetyMargin)
		}, logger)
	} else {
		logger.Info("reaper disabled", "env", "ONCEGATE_REAP_INTERVAL")
	}

	// At SIGTERM the worker stops polling and lets the activities it runs
	// finish (a downstream call in flight gets its answer recorded) for up to
	// stopTimeout; then they are cancelled and Temporal retries or reconciles.
	wopts, err := worker.OptionsFromEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	wopts.WorkerStopTimeout = stopTimeout
	w := worker.New(c, envOr("ONCEGATE_TASK_QUEUE", workflows.TaskQueue), acts, wopts)
	logger.Info("worker starting", "task_queue", envOr("ONCEGATE_TASK_QUEUE", workflows.TaskQueue))
	if err := w.Run(sdkworker.InterruptCh()); err != nil {
		stopReaper()
		logger.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

// reapSafetyMargin is how far behind this host's clock the reaper's cutoff
// stays. pgstore.Store.Reap is safe because the gateway refuses a
// fingerprint at or after its exp; but the gateway checks exp by its own
// clock, before it acquires the key and starts the workflow, so a row reaped
// exactly at exp by a worker whose clock runs ahead could be claimed afresh
// by a confirm the gateway still judged in time. The margin covers clock
// skew between hosts and that check-to-claim delay; it only keeps rows
// slightly longer.
const reapSafetyMargin = 5 * time.Minute

// defaultReapInterval is the reaper's interval when ONCEGATE_REAP_INTERVAL is unset.
const defaultReapInterval = 10 * time.Minute

// reapIntervalFromEnv reads ONCEGATE_REAP_INTERVAL: a Go duration (such as
// 10m), 0 to disable the reaper, default defaultReapInterval.
func reapIntervalFromEnv() (time.Duration, error) {
	v := os.Getenv("ONCEGATE_REAP_INTERVAL")
	if v == "" {
		return defaultReapInterval, nil
	}
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("ONCEGATE_REAP_INTERVAL=%q: want a non-negative Go duration such as 10m, or 0 to disable", v)
	}
	return d, nil
}

// defaultStopTimeout is how long a stopping worker lets running activities
// finish when ONCEGATE_WORKER_STOP_TIMEOUT is unset: longer than a downstream
// call's timeout in the dev catalog.
const defaultStopTimeout = 30 * time.Second

// stopTimeoutFromEnv reads ONCEGATE_WORKER_STOP_TIMEOUT, a positive Go duration.
func stopTimeoutFromEnv() (time.Duration, error) {
	v := os.Getenv("ONCEGATE_WORKER_STOP_TIMEOUT")
	if v == "" {
		return defaultStopTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("ONCEGATE_WORKER_STOP_TIMEOUT=%q: want a positive Go duration such as 30s", v)
	}
	return d, nil
}

// envOr returns the variable's value, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
