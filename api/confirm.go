package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/workflows"

	"github.com/oncegate/oncegate/status"
)

// startTimeout bounds the store and Temporal calls that must finish even
// when the agent hangs up (starting the workflow, refilling the fast path).
const startTimeout = 10 * time.Second

// confirmRequest is the body of POST /v1/actions/{scope}/confirm.
type confirmRequest struct {
	// Fingerprint is the preview's fingerprint, copied verbatim.
	Fingerprint string `json:"fingerprint"`
	// Params are all params, bound and free.
	Params json.RawMessage `json:"params"`
	// AcknowledgeRepeatOf acknowledges the amnesia guard's recent operation.
	AcknowledgeRepeatOf string `json:"acknowledge_repeat_of,omitempty"`
}

// handleConfirm serves POST /v1/actions/:scope/confirm.
func (s *Server) handleConfirm(c echo.Context) error {
	action, r, ok := s.lookupAction(c)
	if !ok {
		return s.render(c, r)
	}
	var req confirmRequest
	r, ok = decodeBody(c, &req)
	if ok && req.Fingerprint == "" {
		r, ok = memberMissingReply("fingerprint", "string"), false
	}
	if ok {
		r, ok = requireMember("params", req.Params)
	}
	if !ok {
		r.scope = action.Scope
		return s.render(c, r)
	}
	r = s.confirm(c.Request().Context(), identityOf(c), action, req, traceIDOf(c))
	r.scope = action.Scope
	return s.render(c, r)
}

// confirmCall is one confirm in progress.
type confirmCall struct {
	id      auth.Identity
	action  *catalog.Action
	payload fingerprint.Payload
	bound   boundParams
	owner   string
	traceID string
}

// confirm is the confirm path of ARCHITECTURE.md: verify, amnesia guard,
// expiry, acquire, then start / attach / replay.
func (s *Server) confirm(ctx context.Context, id auth.Identity, action *catalog.Action, req confirmRequest, traceID string) reply {
	bp, r, ok := bindParams(action, req.Params)
	if !ok {
		return r
	}
	now := s.now()
	p, err := s.keys.Verify(req.Fingerprint, fingerprint.Expectation{
		Subject: id.Subject, Scope: action.Scope, ParamHash: bp.paramHash, Now: now, AllowExpired: true,
	})
	switch {
	case errors.Is(err, fingerprint.ErrInvalid):
		s.securityEvent(ctx, EventInvalidFingerprint, id, action.Scope, "", traceID, err.Error())
		return newReply(status.FingerprintInvalid)
	case errors.Is(err, fingerprint.ErrSubjectMismatch):
		s.securityEvent(ctx, EventSubjectMismatch, id, action.Scope, p.Nonce, traceID, "fingerprint issued to "+p.Subject)
		return newReply(status.SubjectMismatch)
	case errors.Is(err, fingerprint.ErrScopeMismatch):
		s.securityEvent(ctx, EventScopeMismatch, id, action.Scope, p.Nonce, traceID, "fingerprint issued for "+p.Scope)
		return opReply(status.ScopeMismatch, p.Nonce)
	case errors.Is(err, fingerprint.ErrParamMismatch):
		s.securityEvent(ctx, EventParamMismatch, id, action.Scope, p.Nonce, traceID, "bound params differ from the fingerprint's")
		return opReply(status.ParamMismatch, p.Nonce)
	case err != nil:
		return internalErrorReply("", fmt.Errorf("verify fingerprint: %w", err))
	}
	call := confirmCall{
		id: id, action: action, payload: p, bound: bp, traceID: traceID,
		owner: s.instance + ":" + randomHex(8),
	}
	if p.RecentOperation != "" && req.AcknowledgeRepeatOf != p.RecentOperation {
		return s.repeatUnacknowledged(ctx, call)
	}
	if now.Unix() >= p.Exp {
		return s.confirmExpired(ctx, call)
	}
	// The claim must not be abandoned half-way when the agent hangs up (a
	// lost answer): a Redis claim whose truth check and release were
	// cancelled is an orphan that answers in_progress to every retry and
	// status query until the grace period, while nothing runs.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	d, err := s.store.Acquire(actx, idemstore.Claim{
		OperationID: p.Nonce, ParamHash: bp.paramHash, Owner: call.owner, Subject: id.Subject, Scope: action.Scope,
		InFlightTTL: action.InFlightTTL, TerminalTTL: action.TerminalTTL, FingerprintExp: p.ExpiresAt(),
		BoundParams: bp.canonical,
	})
	if err != nil {
		return s.storeErrorReply(action.Scope, "", fmt.Errorf("confirm %s: %w", p.Nonce, err))
	}
	s.metrics.claims.WithLabelValues(string(d.Outcome)).Inc()
	switch d.Outcome {
	case idemstore.OutcomeAcquired:
		// The truth may already hold the operation under another owner (the
		// fast path lost the key while its workflow runs): attach to it.
		earlier := d.TruthFound && d.Record.Owner != "" && d.Record.Owner != call.owner
		if s.cfg.Failpoint == FailpointAfterClaim && !earlier {
			crashNow()
		}
		if earlier && d.Record.State == idemstore.StateNeedsReview {
			rec := d.Record
			rec.OperationID = p.Nonce
			return s.answerFor(rec, true)
		}
		claimedAt := time.Time{}
		if d.TruthFound && !earlier {
			claimedAt = d.ClaimedAt
			if claimedAt.IsZero() {
				claimedAt = s.now()
			}
		}
		return s.startAndAwait(ctx, call, earlier, claimedAt)
	case idemstore.OutcomeInFlight:
		return s.confirmInFlight(ctx, call, d)
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		rec := d.Record
		if rec.State == "" {
			rec.State = idemstore.State(d.Outcome)
		}
		rec.OperationID = p.Nonce
		return s.answerFor(rec, true)
	case idemstore.OutcomeParamMismatch:
		s.securityEvent(ctx, EventStoreParamMismatch, id, action.Scope, p.Nonce, traceID, "the store holds this operation with another param_hash")
		return opReply(status.ParamMismatch, p.Nonce)
	}
	return internalErrorReply(p.Nonce, fmt.Errorf("confirm %s: unknown outcome %q", p.Nonce, d.Outcome))
}

// repeatUnacknowledged answers a fingerprint of the amnesia guard confirmed
// without acknowledge_repeat_of.
func (s *Server) repeatUnacknowledged(ctx context.Context, call confirmCall) reply {
	recentID := call.payload.RecentOperation
	var recent *idemstore.Record
	if rec, err := s.store.Get(ctx, recentID); err == nil && rec.Subject == call.id.Subject {
		recent = &rec
	}
	return s.repeatUnacknowledgedReply(call.payload.Nonce, recentID, recent)
}

// confirmExpired answers a fingerprint past exp: a replay when it was
// consumed, else fingerprint_expired.
func (s *Server) confirmExpired(ctx context.Context, call confirmCall) reply {
	rec, err := s.store.Get(ctx, call.payload.Nonce)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return fingerprintExpiredReply(call.payload.ExpiresAt())
	case err != nil:
		return s.storeErrorReply(call.action.Scope, "", fmt.Errorf("confirm expired %s: %w", call.payload.Nonce, err))
	}
	rec.OperationID = call.payload.Nonce
	if rec.State.Terminal() || rec.State == idemstore.StateNeedsReview {
		return s.answerFor(rec, true)
	}
	// Claimed before exp and still in flight: the same handling as any
	// in-flight claim, orphan takeover included.
	return s.confirmInFlight(ctx, call, idemstore.ClaimDecision{
		Outcome: idemstore.OutcomeInFlight, Owner: rec.Owner, ClaimedAt: rec.ClaimedAt, Record: rec,
	})
}

// confirmInFlight answers a claim held by another owner: review, orphan
// takeover, or a short wait on the existing workflow.
func (s *Server) confirmInFlight(ctx context.Context, call confirmCall, d idemstore.ClaimDecision) reply {
	nonce := call.payload.Nonce
	if d.Record.State == idemstore.StateNeedsReview {
		rec := d.Record
		rec.OperationID = nonce
		return s.answerFor(rec, true)
	}
	// An orphan: claimed longer ago than the grace period and Temporal has no
	// workflow of that ID. Its owner died between the claim and the start
	// (with or without a truth record: the PostgreSQL-only path writes one at
	// claim time). Only workflows call the downstream, so nothing ran yet and
	// taking the claim over cannot execute anything twice.
	if !d.ClaimedAt.IsZero() && s.now().Sub(d.ClaimedAt) >= s.cfg.ClaimGrace {
		dctx, dcancel := temporalContext(ctx)
		_, err := s.temporal.DescribeWorkflowExecution(dctx, nonce, "")
		dcancel()
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			err := s.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: nonce, FromOwner: d.Owner, ToOwner: call.owner, TTL: call.action.InFlightTTL})
			switch {
			case err == nil:
				s.log.WarnContext(ctx, "took over orphaned claim", "operation_id", nonce, "from", d.Owner,
					"to", call.owner, "claimed_at", d.ClaimedAt, "trace_id", call.traceID)
				return s.startAndAwait(ctx, call, false, time.Time{})
			case !errors.Is(err, idemstore.ErrNotOwner):
				return s.storeErrorReply(call.action.Scope, nonce, fmt.Errorf("takeover %s: %w", nonce, err))
			}
			// Someone else took it over first: wait on theirs.
		} else if err != nil {
			s.log.WarnContext(ctx, "describe workflow", "operation_id", nonce, "err", err, "trace_id", call.traceID)
		}
	}
	run := s.temporal.GetWorkflow(ctx, nonce, "")
	return s.await(ctx, call, run, d.Owner, true)
}

// startAndAwait starts the operation's workflow (or attaches to an existing
// one of the same ID) and waits a short budget for its outcome. earlier
// marks an operation that an earlier call already started, so that its
// outcome is answered as a replay. truthClaimedAt, when set, says this
// call's claim inserted the truth record itself at that time: the workflow
// then takes it as its claim instead of claiming it again, and finalizes the
// fast path under this very claim, so the answer does not refill it a
// second time.
func (s *Server) startAndAwait(ctx context.Context, call confirmCall, earlier bool, truthClaimedAt time.Time) reply {
	truthClaimed := !truthClaimedAt.IsZero()
	nonce := call.payload.Nonce
	params, err := call.bound.downstreamParams()
	if err != nil {
		return internalErrorReply(nonce, err)
	}
	summary := workflows.Summary(call.action.Scope, params, call.action.SummaryField)
	in := workflows.OperationInput{
		OperationID: nonce, Subject: call.id.Subject, Scope: call.action.Scope, ParamHash: call.bound.paramHash,
		Owner: call.owner, Params: params, BoundParams: call.bound.canonical, FingerprintExp: call.payload.ExpiresAt(),
		InFlightTTL: call.action.InFlightTTL, TerminalTTL: call.action.TerminalTTL,
		Downstream: call.action.Downstream.Plan(), Summary: summary, TruthClaimed: truthClaimed, ClaimedAt: truthClaimedAt,
	}
	opts := client.StartWorkflowOptions{
		ID:                       nonce,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    workflows.StartSearchAttributes(in),
		StaticSummary:            summary,
		Memo:                     map[string]any{"trace_id": call.traceID},
	}
	// The start must not be abandoned when the agent hangs up.
	sctx, cancel := temporalContext(ctx)
	defer cancel()
	run, err := s.startWorkflow(sctx, opts, in)
	attached := false
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &already) {
			s.log.ErrorContext(ctx, "start workflow", "operation_id", nonce, "err", err, "trace_id", call.traceID)
			s.releaseUnstarted(sctx, call)
			return unavailableReply(nonce, detailWorkflowEngine)
		}
		attached = true
		run = s.temporal.GetWorkflow(ctx, nonce, "")
	}
	s.log.InfoContext(ctx, "operation started", "operation_id", nonce, "scope", call.action.Scope,
		"subject", call.id.Subject, "attached", attached, "trace_id", call.traceID)
	refillOwner := call.owner
	if truthClaimed && !attached {
		refillOwner = "" // the workflow's Finalize writes the fast path under this claim
	}
	return s.await(ctx, call, run, refillOwner, attached || earlier)
}

// temporalContext detaches a Temporal call from the caller's cancellation
// and bounds it by startTimeout. An agent that hangs up must not cancel a
// call in flight: that would leave the work half done, and a cancelled call
// interrupts the Temporal dev server's SQLite connection for good (seen:
// every later query then fails with "interrupted (9)").
func temporalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
}

// startRetries bounds the starts retried after a transient refusal.
const startRetries = 3

// startWorkflow starts the operation's workflow, retrying a few times (within
// ctx) when the Temporal frontend refuses transiently: unavailable,
// overloaded, or a namespace its cache does not know yet. A start is safe to
// repeat: the workflow ID makes a second one attach or be refused.
func (s *Server) startWorkflow(ctx context.Context, opts client.StartWorkflowOptions, in workflows.OperationInput) (client.WorkflowRun, error) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		run, err := s.temporal.ExecuteWorkflow(ctx, opts, workflows.OperationWorkflowName, in)
		if err == nil || attempt == startRetries || !transientStartError(err) {
			return run, err
		}
		s.log.WarnContext(ctx, "start workflow refused transiently; retrying", "operation_id", opts.ID, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// transientStartError reports whether a refused start is worth repeating
// here: only what the SDK does not retry itself (its gRPC interceptor
// already retries Unavailable, ResourceExhausted, Aborted and Unknown
// within the call's deadline): a namespace a frontend that just started does
// not know yet.
func transientStartError(err error) bool {
	var nsNotFound *serviceerror.NamespaceNotFound
	return errors.As(err, &nsNotFound)
}

// releaseUnstarted gives the claim back after a failed start, so that
// nothing is consumed and the same fingerprint can be sent again at once
// (temporarily_unavailable promises that) — but only when Temporal confirms
// that no workflow of the ID exists: a start that failed behind a timeout may
// have succeeded. Otherwise the claim stays, and a retry attaches to the
// workflow or, after the grace period, takes the orphan over.
func (s *Server) releaseUnstarted(ctx context.Context, call confirmCall) {
	nonce := call.payload.Nonce
	_, err := s.temporal.DescribeWorkflowExecution(ctx, nonce, "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return
	}
	if err := s.store.Release(ctx, idemstore.ReleaseParams{OperationID: nonce, Owner: call.owner}); err != nil {
		s.log.WarnContext(ctx, "release unstarted claim", "operation_id", nonce, "err", err, "trace_id", call.traceID)
	}
}

// await waits up to ConfirmWait for the workflow's result. On a result it
// refills the fast path with owner's claim; otherwise the store decides
// between needs_manual_review, a terminal answer and in_progress. replay
// marks an outcome that an earlier call started.
func (s *Server) await(ctx context.Context, call confirmCall, run client.WorkflowRun, owner string, replay bool) reply {
	nonce := call.payload.Nonce
	// Detached from the agent's connection: an agent that hangs up costs at
	// most this wait, and never cancels a Temporal call in flight.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ConfirmWait)
	defer cancel()
	var res workflows.OperationResult
	err := run.Get(wctx, &res)
	if err == nil && res.State.Terminal() {
		rec := res.Record(nonce)
		s.refill(ctx, call, rec, owner)
		return s.answerFor(rec, replay)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		level := slog.LevelWarn
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			level = slog.LevelInfo // the holder has not started it yet
		}
		s.log.Log(ctx, level, "wait for workflow", "operation_id", nonce, "err", err, "trace_id", call.traceID)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer rcancel()
	rec, gerr := s.store.Get(rctx, nonce)
	if gerr == nil {
		rec.OperationID = nonce
		return s.answerFor(rec, replay)
	}
	return opReply(status.InProgress, nonce)
}

// refill writes the terminal outcome to the fast path under owner's claim;
// NOT_OWNER (a newer owner) and an already terminal record are fine.
func (s *Server) refill(ctx context.Context, call confirmCall, rec idemstore.Record, owner string) {
	if owner == "" {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	err := s.store.FinalizeFast(fctx, idemstore.Finalization{
		OperationID: rec.OperationID, Owner: owner, State: rec.State, Result: rec.Result, ResultRef: rec.ResultRef,
		Reason: rec.Reason, FailureKind: rec.FailureKind, ResolvedBy: rec.ResolvedBy, TerminalTTL: call.action.TerminalTTL,
	})
	if err != nil && !errors.Is(err, idemstore.ErrNotOwner) && !errors.Is(err, idemstore.ErrAlreadyTerminal) {
		s.log.WarnContext(ctx, "refill fast path", "operation_id", rec.OperationID, "err", err, "trace_id", call.traceID)
	}
}

// securityEvent logs, counts and alerts one security event. The alert runs
// on its own goroutine and never delays the answer.
func (s *Server) securityEvent(ctx context.Context, kind string, id auth.Identity, scope, opID, traceID, detail string) {
	if !isSecurityEventKind(kind) {
		// A programming error: still reported, under its name, so nothing is lost.
		s.log.ErrorContext(ctx, "security event of an unregistered kind", "kind", kind, "trace_id", traceID)
	}
	ev := SecurityEvent{Kind: kind, Subject: id.Subject, Scope: scope, OperationID: opID, TraceID: traceID,
		Detail: detail, At: s.now().UTC()}
	s.log.WarnContext(ctx, "security event", "kind", kind, "subject", id.Subject, "scope", scope,
		"operation_id", opID, "trace_id", traceID, "detail", detail)
	s.metrics.security.WithLabelValues(kind).Inc()
	actx := context.WithoutCancel(ctx)
	go s.alert.Alert(actx, ev)
}
