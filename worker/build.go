package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// reapSafetyMargin is how far behind this host's clock the reaper's cutoff
// stays. pgstore.Store.Reap is safe because the gateway refuses a
// fingerprint at or after its exp; but the gateway checks exp by its own
// clock, before it claims the operation and starts the workflow, so a row reaped
// exactly at exp by a worker whose clock runs ahead could be claimed afresh
// by a confirm the gateway still judged in time. The margin covers clock
// skew between hosts and that check-to-claim delay; it only keeps rows
// slightly longer.
const reapSafetyMargin = 5 * time.Minute

// Parts are what a worker's activities and background jobs use: the
// PostgreSQL truth, the combined store (Finalize writes through it), the
// tracer the downstream calls continue, the logger and the registry of the
// activities' and the truth's metrics.
type Parts struct {
	// Truth is the PostgreSQL truth.
	Truth *pgstore.Store
	// Store is the combined store on the same truth.
	Store idemstore.Store
	// Tracer continues the activity's trace into the downstream call.
	Tracer trace.TracerProvider
	// Logger logs.
	Logger *slog.Logger
	// Registerer receives the activities' metrics and the truth's gauges.
	Registerer prometheus.Registerer
}

// Build returns the worker of cfg on c, with the workflow and the
// activities of p registered (and cfg's failpoint armed), and starts the
// reaper when cfg.ReapInterval is positive; stopReaper stops it. The
// caller runs the worker: Run in the worker's own process, Start in the
// gateway's (ONCEGATE_INPROCESS_WORKER).
func Build(c client.Client, cfg Config, p Parts) (w sdkworker.Worker, stopReaper func(), err error) {
	actMetrics, err := activities.NewMetrics(p.Registerer)
	if err != nil {
		return nil, nil, err
	}
	if err := p.Registerer.Register(NewTruthCollector(p.Truth)); err != nil {
		return nil, nil, fmt.Errorf("register the truth's gauges: %w", err)
	}
	acts := &activities.Activities{
		Truth: p.Truth,
		Store: p.Store,
		// The downstream call continues the activity's trace (traceparent).
		HTTP: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
			otelhttp.WithTracerProvider(p.Tracer), otelhttp.WithPropagators(telemetry.Propagator))},
		Logger:  p.Logger,
		Metrics: actMetrics,
	}
	w = New(c, cfg.Temporal.TaskQueue, acts, cfg.Options())
	switch cfg.Failpoint {
	case FailpointAfterFinalize:
		armAfterFinalize(w, acts)
	case FailpointAfterExecuteFinalized:
		armAfterExecuteFinalized(w, acts)
	case FailpointBrokenLostReply:
		armBrokenLostReply(w, acts)
	}
	reaperMetrics, err := NewReaperMetrics(p.Registerer)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	if cfg.ReapInterval > 0 {
		p.Logger.Info("reaper starting", "interval", cfg.ReapInterval, "safety_margin", reapSafetyMargin,
			"batch_rows", cfg.ReapBatchRows, "max_rows", cfg.ReapMaxRows)
		go RunReaper(ctx, p.Truth, cfg.ReapInterval, cfg.ReapLimits(), func() time.Time {
			return time.Now().Add(-reapSafetyMargin)
		}, p.Logger, reaperMetrics)
	} else {
		p.Logger.Info("reaper disabled", "env", "ONCEGATE_REAP_INTERVAL")
	}
	return w, stop, nil
}

// armAfterFinalize replaces the Finalize activity with one that kills the
// process once Finalize has recorded the outcome, before the workflow task
// that ran it (as a local activity) can record its marker: the crash a
// local finalize must survive by running again.
func armAfterFinalize(w sdkworker.Worker, acts *activities.Activities) {
	w.RegisterActivityWithOptions(func(ctx context.Context, in operation.FinalizeInput) error {
		err := acts.Finalize(ctx, in)
		if err == nil {
			acts.Logger.Warn("failpoint "+FailpointAfterFinalize+": killing the worker", "operation_id", in.OperationID)
			failpoint.Crash()
		}
		return err
	}, activity.RegisterOptions{Name: workflows.ActivityFinalize, DisableAlreadyRegisteredCheck: true})
}

// armBrokenLostReply replaces the Execute activity with a broken one
// (FailpointBrokenLostReply): a downstream reply that never came back is
// reported as a definite refusal instead of an unknown outcome.
func armBrokenLostReply(w sdkworker.Worker, acts *activities.Activities) {
	w.RegisterActivityWithOptions(func(ctx context.Context, in operation.Input) (operation.ExecuteResult, error) {
		res, err := acts.Execute(ctx, in)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == operation.ErrTypeDownstreamUnavailable {
			acts.Logger.Warn("failpoint "+FailpointBrokenLostReply+": a lost reply reported as a refusal", "operation_id", in.OperationID)
			return res, temporal.NewNonRetryableApplicationError("broken: "+err.Error(), operation.ErrTypeBusinessRefusal, nil,
				operation.BusinessRefusal{StatusCode: 422, Code: "broken_build"})
		}
		return res, err
	}, activity.RegisterOptions{Name: workflows.ActivityExecute, DisableAlreadyRegisteredCheck: true})
}

// armAfterExecuteFinalized replaces the Execute activity with one that
// kills the process once it has finalized a DONE outcome itself, before
// its completion reaches Temporal: the crash after which the truth and the
// fast path hold the outcome while the workflow has not heard of it.
func armAfterExecuteFinalized(w sdkworker.Worker, acts *activities.Activities) {
	w.RegisterActivityWithOptions(func(ctx context.Context, in operation.Input) (operation.ExecuteResult, error) {
		res, err := acts.Execute(ctx, in)
		if err == nil && res.Finalized != nil {
			acts.Logger.Warn("failpoint "+FailpointAfterExecuteFinalized+": killing the worker", "operation_id", in.OperationID)
			failpoint.Crash()
		}
		return res, err
	}, activity.RegisterOptions{Name: workflows.ActivityExecute, DisableAlreadyRegisteredCheck: true})
}
