// Package activities holds the side effects of the operation workflow as
// methods on Activities: claiming the PostgreSQL truth, calling the
// downstream, reconciling an unknown answer, marking an operation for review
// and recording its terminal outcome. Only these activities call the
// downstream, always with the operation_id as Idempotency-Key and as
// client_reference.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"
)

// ReasonLimitExceeded is the reason of an operation whose claim the truth
// refused over budget after its takeover.
const ReasonLimitExceeded = "limit_exceeded: the amount no longer fits the subject's budget"

// ReasonMandateRefused is the reason of an operation whose claim the truth
// refused under its mandate after its takeover (revoked, expired or used
// up meanwhile); the refusal's code follows it.
const ReasonMandateRefused = "mandate_refused: the operation is no longer inside its mandate: "

// HeaderIdempotencyKey is the header carrying the operation_id to an HTTP downstream.
const HeaderIdempotencyKey = downstream.HeaderIdempotencyKey

// heartbeatEvery is how often an activity heartbeats while it waits on the
// downstream (a variable only so that a test can shorten it).
var heartbeatEvery = 5 * time.Second

// Activities holds the dependencies of the workflow's activities. The worker
// registers it as a struct; each method is an activity named after it.
type Activities struct {
	// Truth is the PostgreSQL truth (pgstore): the workflow's claim, review
	// and downstream state are written there alone.
	Truth idemstore.Store
	// Store is the combined store (combined): a terminal outcome is written
	// to the truth, then to the Redis fast path, owner-checked.
	Store idemstore.Store
	// HTTP calls the downstream; nil means http.DefaultClient. Its transport
	// carries the activity's trace to the downstream (otelhttp in the worker).
	HTTP *http.Client
	// Logger logs; nil means slog.Default().
	Logger *slog.Logger
	// Metrics receives the activities' measurements; nil records nothing.
	Metrics *Metrics
}

// ClaimTruth inserts the operation's truth record IN_FLIGHT, or reads back
// the existing one: a terminal record is returned as is (the workflow then
// answers it without executing); NEEDS_REVIEW is returned with its reason.
// A record with another param_hash is a non-retryable ErrTypeParamMismatch.
func (a *Activities) ClaimTruth(ctx context.Context, in operation.Input) (operation.ClaimResult, error) {
	in, err := in.Resolved(catalog.PlanOf)
	if err != nil {
		return operation.ClaimResult{}, fmt.Errorf("claim truth %s: %w", in.OperationID, err)
	}
	owner := in.Ownership.Owner()
	d, err := a.Truth.Acquire(ctx, idemstore.Claim{
		OperationID:    in.OperationID,
		ParamHash:      in.ParamHash,
		Owner:          owner,
		Subject:        in.Subject,
		Scope:          in.Scope,
		InFlightTTL:    in.InFlightTTL,
		TerminalTTL:    in.TerminalTTL,
		FingerprintExp: in.FingerprintExp,
		BoundParams:    in.BoundParams,
		ApprovalSHA256: in.ApprovalSHA256,
		ActingClient:   in.ActingClient,
		Charge:         in.Charge,
		Mandate:        in.Mandate,
	})
	if err != nil {
		return operation.ClaimResult{}, fmt.Errorf("claim truth %s: %w", in.OperationID, err)
	}
	rec := d.Record
	switch d.Outcome {
	case idemstore.OutcomeAcquired, idemstore.OutcomeInFlight:
		holder := rec.Owner
		if holder == "" {
			holder = d.Owner
		}
		if holder != "" && holder != owner {
			a.logger().Warn("truth record held by another gateway claim; the workflow finalizes it as that owner",
				"operation_id", in.OperationID, "owner", owner, "truth_owner", holder)
		}
		claimedAt := rec.ClaimedAt
		if claimedAt.IsZero() {
			claimedAt = d.ClaimedAt
		}
		res := operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}, Owner: holder, ClaimedAt: claimedAt}
		if rec.State == operation.StateNeedsReview {
			res.State, res.Reason = operation.StateNeedsReview, rec.Reason
		}
		return res, nil
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		return operation.ClaimResult{Final: rec.Final()}, nil
	case idemstore.OutcomeLimitExceeded:
		// The truth never held this claim (its gateway died before its
		// truth claim) and it no longer fits the subject's budget: it ends
		// here, never sent.
		a.logger().Warn("claim refused over budget", "operation_id", in.OperationID, "subject", in.Subject)
		return operation.ClaimResult{Final: operation.Final{State: operation.StateFailed, Reason: ReasonLimitExceeded,
			FailureKind: operation.FailureNotSent}}, nil
	case idemstore.OutcomeMandateRefused:
		// As over budget: the truth never held this claim, and its mandate
		// no longer covers it; it ends here, never sent.
		a.logger().Warn("claim refused under its mandate", "operation_id", in.OperationID, "reason", d.MandateRefusal)
		return operation.ClaimResult{Final: operation.Final{State: operation.StateFailed,
			Reason: ReasonMandateRefused + string(d.MandateRefusal), FailureKind: operation.FailureNotSent}}, nil
	case idemstore.OutcomeParamMismatch:
		a.logger().Error("truth holds the operation with another param_hash", "operation_id", in.OperationID)
		return operation.ClaimResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("claim truth %s: param_hash mismatch", in.OperationID), operation.ErrTypeParamMismatch, nil)
	default:
		return operation.ClaimResult{}, fmt.Errorf("claim truth %s: unexpected outcome %q", in.OperationID, d.Outcome)
	}
}

// Execute sends the operation to its downstream through the catalog's
// kind (package downstream): the operation_id as idempotency key and as
// client_reference, the same on every attempt. Its answer is the result; a
// definite refusal is a non-retryable ErrTypeBusinessRefusal whose details
// are a operation.BusinessRefusal; a call that could not be built a
// non-retryable ErrTypeNotSent; anything else (a 5xx, 408, 429, a timeout,
// a transport error) a retryable ErrTypeDownstreamUnavailable.
func (a *Activities) Execute(ctx context.Context, in operation.Input) (operation.ExecuteResult, error) {
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	log := a.logger().With("operation_id", in.OperationID, "attempt", attempt, "trace_id", telemetry.TraceID(ctx))
	in, kind, err := kindOf(in)
	if err != nil {
		return operation.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), operation.ErrTypeNotSent, err)
	}
	began := time.Now()
	stop := heartbeat(ctx)
	ans, err := kind.Execute(ctx, a.call(in))
	stop()
	a.Metrics.observeDownstream(in.Scope, "execute", ans.StatusCode, time.Since(began))
	var refusal *downstream.Refusal
	switch {
	case err == nil:
		log.Info("execute: done", "status", ans.StatusCode)
		res := operation.ExecuteResult{
			StatusCode: ans.StatusCode,
			Result:     ans.Result,
			ResultRef:  operation.ExtractResultRef(ans.Result, in.Downstream.ResultRef),
		}
		if in.ExecuteFinalizes && in.Downstream.Business == nil {
			res.Finalized = a.finalizeDone(ctx, in, res, log)
		}
		return res, nil
	case errors.As(err, &refusal):
		details := refusal.BusinessRefusal
		log.Info("execute: refused by the downstream", "status", ans.StatusCode, "code", refusal.Code)
		return operation.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), operation.ErrTypeBusinessRefusal, nil, details)
	case errors.Is(err, downstream.ErrNotSent):
		return operation.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), operation.ErrTypeNotSent, err)
	default:
		log.Warn("execute: outcome unknown", "status", ans.StatusCode, "error", err)
		return operation.ExecuteResult{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), operation.ErrTypeDownstreamUnavailable, err)
	}
}

// finalizeDoneBudget bounds Execute's own finalize of a DONE outcome (and
// so does half the time its attempt has left): past it the workflow
// finalizes, as it does for every other outcome.
const finalizeDoneBudget = 5 * time.Second

// finalizeDone records the DONE outcome of res, the downstream's answer to
// in, as the workflow's finalize would (Finalize: the truth, then the fast
// path, owner-checked, under in.Ownership), the moment it is known: the
// fast path's announcement answers the confirm waiting for it, before the
// workflow hears of the answer. The outcome's time is decided here, once.
// It returns the outcome recorded, or nil when it could not record it
// (any error, or the budget ran out): the workflow's finalize then does,
// and answers what the truth holds.
func (a *Activities) finalizeDone(ctx context.Context, in operation.Input, res operation.ExecuteResult, log *slog.Logger) *operation.Final {
	final := operation.Final{State: operation.StateDone, Result: res.Result, ResultRef: res.ResultRef,
		CompletedAt: time.Now().UTC().Truncate(time.Millisecond)}
	budget := finalizeDoneBudget
	if activity.IsActivity(ctx) {
		budget = min(budget, time.Until(activity.GetInfo(ctx).Deadline)/2)
	}
	fctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err := a.Finalize(fctx, operation.FinalizeInput{OperationID: in.OperationID, Ownership: in.Ownership, Final: final,
		Scope: in.Scope, TerminalTTL: in.TerminalTTL})
	if err != nil {
		log.Warn("execute: the outcome is left to the workflow's finalize", "error", err)
		return nil
	}
	return &final
}

// Reconcile asks the downstream, through the catalog's kind, whether it has
// the operation: Found with its record, or not found (which the workflow
// weighs against the processing window). No answer is a retryable
// ErrTypeDownstreamUnavailable; a downstream with no way to ask a
// non-retryable ErrTypeNoStatusEndpoint.
func (a *Activities) Reconcile(ctx context.Context, in operation.Input) (operation.ReconcileResult, error) {
	in, kind, err := kindOf(in)
	if err != nil || !in.Downstream.Reconciles() {
		return operation.ReconcileResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("reconcile %s: no status endpoint", in.OperationID), operation.ErrTypeNoStatusEndpoint, err)
	}
	log := a.logger().With("operation_id", in.OperationID, "trace_id", telemetry.TraceID(ctx))
	began := time.Now()
	stop := heartbeat(ctx)
	ans, err := kind.Reconcile(ctx, a.call(in))
	stop()
	a.Metrics.observeDownstream(in.Scope, "reconcile", ans.StatusCode, time.Since(began))
	switch {
	case errors.Is(err, downstream.ErrNoStatus):
		return operation.ReconcileResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("reconcile %s: %v", in.OperationID, err), operation.ErrTypeNoStatusEndpoint, err)
	case err != nil:
		a.Metrics.observeReconcile(in.Scope, "error")
		log.Warn("reconcile: no answer", "status", ans.StatusCode, "error", err)
		return operation.ReconcileResult{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("reconcile %s: %v", in.OperationID, err), operation.ErrTypeDownstreamUnavailable, err)
	case ans.Found:
		a.Metrics.observeReconcile(in.Scope, "found")
		log.Info("reconcile: found")
		return operation.ReconcileResult{
			Found:     true,
			Result:    ans.Result,
			ResultRef: operation.ExtractResultRef(ans.Result, in.Downstream.ResultRef),
		}, nil
	default:
		a.Metrics.observeReconcile(in.Scope, "not_found")
		log.Info("reconcile: not found")
		return operation.ReconcileResult{Found: false}, nil
	}
}

// kindOf returns in resolved (see operation.Input.Resolved: an activity
// scheduled before the plan existed carries only the catalog's downstream)
// and the kind its plan names.
func kindOf(in operation.Input) (operation.Input, downstream.Kind, error) {
	in, err := in.Resolved(catalog.PlanOf)
	if err != nil {
		return in, nil, fmt.Errorf("%w: %w", downstream.ErrNotSent, err)
	}
	kind, err := downstream.For(in.Downstream.Kind)
	return in, kind, err
}

// call is the downstream call of in.
func (a *Activities) call(in operation.Input) downstream.Call {
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return downstream.Call{OperationID: in.OperationID, Params: in.Params, Downstream: in.Downstream, HTTP: hc}
}

// MarkNeedsReview moves the truth record to NEEDS_REVIEW. A record already
// terminal is a non-retryable ErrTypeAlreadyTerminal.
func (a *Activities) MarkNeedsReview(ctx context.Context, in operation.MarkNeedsReviewInput) error {
	err := a.Truth.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: in.OperationID, Reason: in.Reason})
	switch {
	case err == nil:
		a.logger().Warn("operation needs manual review", "operation_id", in.OperationID, "reason", in.Reason)
		return nil
	case errors.Is(err, idemstore.ErrAlreadyTerminal):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("mark needs review %s: %v", in.OperationID, err), operation.ErrTypeAlreadyTerminal, err)
	default:
		return fmt.Errorf("mark needs review %s: %w", in.OperationID, err)
	}
}

// RecordDownstreamState keeps the business state the downstream reported
// (such as a payout's "pending") on the operation's truth record, where the
// gateway shows it to agents and operators.
func (a *Activities) RecordDownstreamState(ctx context.Context, in operation.RecordDownstreamStateInput) error {
	if err := a.Truth.RecordDownstreamState(ctx, idemstore.DownstreamStateParams{OperationID: in.OperationID, State: in.State}); err != nil {
		return fmt.Errorf("record downstream state %s: %w", in.OperationID, err)
	}
	a.logger().Info("downstream state", "operation_id", in.OperationID, "downstream_state", in.State)
	return nil
}

// Finalize records the terminal outcome in PostgreSQL, then in Redis,
// owner-checked, as the ownership's truth owner (Ownership.TruthOwner: the
// truth record may belong to another gateway claim, and Redis then
// refuses). idemstore.ErrFastPathNotOwner (the truth was written, only the
// fast path is held by a newer owner, who refills it) is logged and is not
// an error. Another terminal outcome already in the truth is a
// non-retryable ErrTypeAlreadyTerminal; another owner of the truth record a
// non-retryable ErrTypeNotOwner.
func (a *Activities) Finalize(ctx context.Context, in operation.FinalizeInput) error {
	own := in.Owners()
	fin := idemstore.Finalization{
		OperationID: in.OperationID,
		Owner:       own.TruthOwner(),
		Final:       in.Final,
		TerminalTTL: in.TerminalTTL,
	}
	err := a.Store.Finalize(ctx, fin)
	log := a.logger().With("operation_id", in.OperationID, "state", in.State)
	if (err == nil || errors.Is(err, idemstore.ErrFastPathNotOwner)) && fin.ReleasesBudget() {
		a.Metrics.observeRelease(in.Scope, in.FailureKind)
	}
	switch {
	case err == nil:
		a.Metrics.observeInFlight(in.Scope, string(in.State), own.ClaimedAt())
		log.Info("finalized")
		return nil
	case errors.Is(err, idemstore.ErrFastPathNotOwner):
		log.Info("finalized the truth; the fast path is held by a newer owner", "error", err)
		return nil
	case errors.Is(err, idemstore.ErrAlreadyTerminal):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("finalize %s: %v", in.OperationID, err), operation.ErrTypeAlreadyTerminal, err)
	case errors.Is(err, idemstore.ErrNotOwner):
		log.Error("truth record held by another owner", "owner", own.TruthOwner(), "error", err)
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("finalize %s: %v", in.OperationID, err), operation.ErrTypeNotOwner, err)
	default:
		return fmt.Errorf("finalize %s: %w", in.OperationID, err)
	}
}

// logger returns the configured logger or the default one.
func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// heartbeat records a heartbeat every heartbeatEvery until stop is called;
// outside an activity it does nothing. The first is sent after
// heartbeatEvery, not at once: the SDK sends a first heartbeat
// synchronously (a round trip to the Temporal server, which writes the
// activity's state), so one at the start would delay every call of the
// downstream by it, while a call that answers within heartbeatEvery (almost
// every one) needs none: the activities run without a heartbeat timeout,
// and a heartbeat only tells a longer call of a cancellation.
func heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	every := heartbeatEvery
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
