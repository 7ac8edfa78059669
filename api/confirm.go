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
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/watch"
	"github.com/oncegate/oncegate/operation"
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

// slots makes confirmRequest a membersBody.
func (r *confirmRequest) slots() []memberSlot {
	return []memberSlot{{name: "fingerprint", str: &r.Fingerprint}, {name: "params", raw: &r.Params},
		{name: "acknowledge_repeat_of", str: &r.AcknowledgeRepeatOf}}
}

// handleConfirm serves POST /v1/actions/:scope/confirm.
func (s *Server) handleConfirm(c echo.Context) error {
	action, r, ok := s.lookupAction(c)
	if !ok {
		return s.render(c, r)
	}
	if r, limited := s.rateLimited(c.Request().Context(), identityOf(c), limits.KindConfirm, action.Scope); limited {
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

// confirmCall is one confirm in progress; opID is its operation id (the
// fingerprint's nonce).
type confirmCall struct {
	id      auth.Identity
	action  *catalog.Action
	payload fingerprint.Payload
	opID    string
	bound   boundParams
	owner   string
	traceID string
	// charge is what the operation spends of the subject's budgets (nil:
	// the action declares no spend).
	charge *idemstore.Charge
	// fingerprint is the fingerprint as sent (for the approval link).
	fingerprint string
	// approvalSHA256 is the approval evidence's hash the operation runs
	// under (set by the approval gate; empty when none was needed): stored
	// with the claim, named by every receipt.
	approvalSHA256 string
}

// ref names this call's operation as its claim binds it (the fingerprint's
// nonce, subject and scope, the bound params' hash, the approval): what
// the receipt of its outcome states besides the outcome.
func (call confirmCall) ref() operationRef {
	return operationRef{ID: call.opID, Subject: call.id.Subject, Scope: call.action.Scope,
		ParamHash: call.bound.paramHash, ApprovalSHA256: call.approvalSHA256}
}

// confirm is the confirm path of ARCHITECTURE.md: verify, amnesia guard,
// then what decideConfirm decides over the store's and Temporal's answers
// (start, take over, attach, replay, review, refuse, expired).
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
		id: id, action: action, payload: p, opID: p.Nonce, bound: bp, traceID: traceID,
		owner: s.instance + ":" + randomHex(8), fingerprint: req.Fingerprint,
	}
	if p.RecentOperation != "" && req.AcknowledgeRepeatOf != p.RecentOperation {
		return s.repeatUnacknowledged(ctx, call)
	}
	if call.charge, err = s.charge(id, action, bp); err != nil {
		return internalErrorReply(p.Nonce, err)
	}
	facts := confirmFacts{Owner: call.owner, Expired: now.Unix() >= p.Exp}
	if !facts.Expired {
		if r, stop := s.approvalGate(ctx, &call); stop {
			return r
		}
	}
	for {
		plan := decideConfirm(facts)
		switch plan.Ask {
		case confirmAskClaim:
			facts.Claim = s.acquire(ctx, call)
		case confirmAskRecord:
			facts.Claim = s.record(ctx, call)
		case confirmAskWorkflow:
			dctx, dcancel := temporalContext(ctx)
			_, err := s.temporal.DescribeWorkflowExecution(dctx, call.opID, "")
			dcancel()
			facts.Workflow = workflowAnswerOf(err)
		case confirmAskTakeover:
			err := s.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: call.opID, FromOwner: plan.Holder,
				ToOwner: call.owner, TTL: action.InFlightTTL})
			facts.Takeover = takeoverAnswerOf(err)
		case confirmDecided:
			return s.act(ctx, call, plan, facts.Claim)
		}
	}
}

// acquire claims the operation for call, or answers its finished record
// when this gateway keeps it (finals). The claim must not be abandoned
// half-way when the agent hangs up (a lost answer): a Redis claim whose
// truth check and release were cancelled is an orphan that answers
// in_progress to every retry and status query until the grace period,
// while nothing runs.
func (s *Server) acquire(ctx context.Context, call confirmCall) claimAnswer {
	if known, ok := s.knownFinal(call); ok {
		return known
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	d, err := s.store.Acquire(actx, idemstore.Claim{
		OperationID: call.opID, ParamHash: call.bound.paramHash, Owner: call.owner, Subject: call.id.Subject,
		Scope: call.action.Scope, InFlightTTL: call.action.InFlightTTL, TerminalTTL: call.action.TerminalTTL,
		FingerprintExp: call.payload.ExpiresAt(), BoundParams: call.bound.canonical, Charge: call.charge,
		ApprovalSHA256: call.approvalSHA256, IntentWindow: call.action.IntentWindow(),
	})
	if err == nil {
		s.metrics.claims.WithLabelValues(string(d.Outcome)).Inc()
		if d.Outcome == idemstore.OutcomeAcquired && d.TruthFound && d.Record.Owner == call.owner && call.charge != nil {
			s.metrics.reservations.WithLabelValues(call.charge.Currency).Inc()
		}
	}
	a := claimAnswerOf(call.owner, d, err, s.now(), s.cfg.ClaimGrace)
	s.keepFinal(a, call)
	return a
}

// record reads the operation's record for a fingerprint past its exp (a
// replay of what it started, never a new start), or answers its finished
// record when this gateway keeps it (finals).
func (s *Server) record(ctx context.Context, call confirmCall) claimAnswer {
	if known, ok := s.knownFinal(call); ok {
		return known
	}
	rec, err := s.store.Outcome(ctx, call.opID)
	a := recordAnswerOf(rec, err, s.now(), s.cfg.ClaimGrace)
	s.keepFinal(a, call)
	return a
}

// knownFinal is the claim answer of call's operation from the finished
// records this gateway keeps (finals): claimFinished with the record, when
// it is kept and is call's own (its subject, scope and bound params'
// hash); else false, and the store is asked.
func (s *Server) knownFinal(call confirmCall) (claimAnswer, bool) {
	rec, ok := s.finals.get(call.opID, s.now())
	if !ok || rec.Subject != call.id.Subject || rec.Scope != call.action.Scope || rec.ParamHash != call.bound.paramHash {
		return claimAnswer{}, false
	}
	return claimAnswer{Kind: claimFinished, Record: rec}, true
}

// keepFinal keeps the finished record of a the store answered for call
// (finals), for the action's terminal_ttl after it completed.
func (s *Server) keepFinal(a claimAnswer, call confirmCall) {
	if a.Kind == claimFinished {
		rec := a.Record
		rec.OperationID = call.opID
		s.finals.keep(rec, call.action.TerminalTTL)
	}
}

// act does what the decision p names; claim is the store's answer it was
// decided on (for the logs).
func (s *Server) act(ctx context.Context, call confirmCall, p confirmPlan, claim claimAnswer) reply {
	switch p.Action {
	case actStart:
		if s.cfg.Failpoint == FailpointAfterClaim {
			failpoint.Crash()
		}
		return s.startAndAwait(ctx, call, p.Ownership)
	case actTakeOver:
		s.log.WarnContext(ctx, "took over orphaned claim", "operation_id", call.opID, "from", claim.Holder,
			"to", call.owner, "claimed_at", claim.ClaimedAt, "trace_id", call.traceID)
		return s.startAndAwait(ctx, call, p.Ownership)
	case actAttach:
		if p.Ignored != nil {
			s.log.WarnContext(ctx, "describe workflow", "operation_id", call.opID, "err", p.Ignored, "trace_id", call.traceID)
		}
		return s.await(ctx, call, waitFor{}, fastPathRefill{by: operation.RefillByGateway, owner: p.Holder}, true)
	case actReplay, actReview:
		rec := p.Record
		rec.OperationID = call.opID
		return s.answerFor(rec, true)
	case actRefuse:
		s.securityEvent(ctx, EventStoreParamMismatch, call.id, call.action.Scope, call.opID, call.traceID,
			"the store holds this operation with another param_hash")
		return opReply(status.ParamMismatch, call.opID)
	case actExpired:
		return fingerprintExpiredReply(call.payload.ExpiresAt())
	case actUnavailable:
		return s.storeErrorReply(call.action.Scope, "", fmt.Errorf("confirm %s: %w", call.opID, p.Err))
	case actOverBudget:
		return s.overBudget(ctx, call, call.charge, p.Usage)
	case actAsk:
	}
	return internalErrorReply(call.opID, fmt.Errorf("confirm %s: no action decided", call.opID))
}

// repeatUnacknowledged answers a fingerprint of the amnesia guard confirmed
// without acknowledge_repeat_of.
func (s *Server) repeatUnacknowledged(ctx context.Context, call confirmCall) reply {
	recentID := call.payload.RecentOperation
	var recent *idemstore.Record
	if rec, err := s.store.Get(ctx, recentID); err == nil && rec.Subject == call.id.Subject {
		recent = &rec
	}
	return s.repeatUnacknowledgedReply(call.opID, recentID, recent)
}

// fastPathRefill is who writes an outcome the gateway waited for to the
// fast path, and under which claim's owner.
type fastPathRefill struct {
	// by is the writer: RefillByGateway makes the gateway refill it.
	by operation.Refiller
	// owner is the claim's owner the gateway refills under.
	owner string
}

// startAndAwait starts the operation's workflow under own (or attaches to
// an existing one of the same ID) and waits a short budget for its outcome.
// An attached workflow was started by an earlier call: its outcome is
// answered as a replay, and the gateway refills the fast path under this
// call's claim, since that workflow finalizes it under its own. Otherwise
// own says who refills (operation.Ownership.Refiller).
func (s *Server) startAndAwait(ctx context.Context, call confirmCall, own operation.Ownership) reply {
	params, err := call.bound.downstreamParams()
	if err != nil {
		return internalErrorReply(call.opID, err)
	}
	summary := workflows.Summary(call.action.Scope, params, call.action.SummaryField)
	in := operation.Input{
		OperationID: call.opID, Subject: call.id.Subject, Scope: call.action.Scope, ParamHash: call.bound.paramHash,
		Ownership: own, Params: params, BoundParams: call.bound.canonical, FingerprintExp: call.payload.ExpiresAt(),
		InFlightTTL: call.action.InFlightTTL, TerminalTTL: call.action.TerminalTTL,
		Downstream: call.action.Downstream.Plan(), Summary: summary, Charge: call.charge,
		ApprovalSHA256: call.approvalSHA256,
	}
	opts := client.StartWorkflowOptions{
		ID:                       call.opID,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    workflows.StartSearchAttributes(in),
		StaticSummary:            summary,
		Memo:                     map[string]any{"trace_id": call.traceID},
		// The gateway's own worker takes the first workflow task from the
		// start's answer (ONCEGATE_INPROCESS_WORKER); without one on this
		// client the SDK starts it normally.
		EnableEagerStart: s.cfg.InProcessWorker,
	}
	// The outcome is watched before the workflow can record it: from the
	// start on, nothing the feed is told can be missed. Not while the store
	// bypasses Redis (degraded): the outcome is then likely written to the
	// truth alone, and announced by no one.
	var feed *idemstore.OutcomeWatch
	if s.outcomes != nil && !s.store.Degraded() {
		if w, ok := s.outcomes.Watch(call.opID); ok {
			feed = &w
			defer w.Stop()
		}
	}
	// The start must not be abandoned when the agent hangs up.
	sctx, cancel := temporalContext(ctx)
	defer cancel()
	run, err := s.startWorkflow(sctx, opts, in)
	refill := fastPathRefill{by: own.Refiller(), owner: own.Owner()}
	attached := false
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &already) {
			s.log.ErrorContext(ctx, "start workflow", "operation_id", call.opID, "err", err, "trace_id", call.traceID)
			s.releaseUnstarted(sctx, call)
			return unavailableReply(call.opID, detailWorkflowEngine)
		}
		// An earlier call's workflow may have recorded its outcome before
		// the watch began: its result tells.
		attached, feed = true, nil
		refill.by = operation.RefillByGateway
	}
	runID := ""
	if run != nil {
		runID = run.GetRunID()
	}
	s.log.InfoContext(ctx, "operation started", "operation_id", call.opID, "scope", call.action.Scope,
		"subject", call.id.Subject, "attached", attached, "truth", own.Truth(), "trace_id", call.traceID)
	return s.await(ctx, call, waitFor{runID: runID, feed: feed}, refill, attached)
}

// waitFor is what a wait for an operation's outcome can listen to: the
// outcome feed's watch (nil: none) and the workflow's run (empty: the
// current one).
type waitFor struct {
	// runID is the workflow's run, when the start named it.
	runID string
	// feed is the outcome feed's watch, begun before the workflow started.
	feed *idemstore.OutcomeWatch
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
func (s *Server) startWorkflow(ctx context.Context, opts client.StartWorkflowOptions, in operation.Input) (client.WorkflowRun, error) {
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
	_, err := s.temporal.DescribeWorkflowExecution(ctx, call.opID, "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return
	}
	if err := s.store.Release(ctx, idemstore.ReleaseParams{OperationID: call.opID, Owner: call.owner}); err != nil {
		s.log.WarnContext(ctx, "release unstarted claim", "operation_id", call.opID, "err", err, "trace_id", call.traceID)
	}
}

// await waits up to ConfirmWait for the operation's outcome through the
// gateway's one watcher of it (watchOperation), which every concurrent
// confirm of the same operation shares. On the workflow's result it
// refills the fast path as refill says; otherwise the store's record
// decides between needs_manual_review, a terminal answer and in_progress.
// With ONCEGATE_MAX_WATCHERS watchers running it answers in_progress at
// once. on is what the wait listens to (see watchOperation). replay marks
// an outcome that an earlier call started.
func (s *Server) await(ctx context.Context, call confirmCall, on waitFor, refill fastPathRefill, replay bool) reply {
	// Detached from the agent's connection: an agent that hangs up costs at
	// most this wait, and never cancels a Temporal call in flight.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ConfirmWait+startTimeout)
	defer cancel()
	w, _, err := s.watchers.Do(wctx, call.opID, func(ctx context.Context) (watched, error) {
		return s.watchOperation(ctx, call.opID, on, call.traceID), nil
	})
	switch {
	case err != nil:
		if !errors.Is(err, watch.ErrBusy) {
			s.log.WarnContext(ctx, "wait for workflow", "operation_id", call.opID, "err", err, "trace_id", call.traceID)
		}
		return opReply(status.InProgress, call.opID)
	case w.terminal:
		s.refill(ctx, call, w.final, refill)
		return s.finalReply(call.ref(), w.final, replay)
	case w.found:
		w.rec.OperationID = call.opID
		return s.answerFor(w.rec, replay)
	}
	return opReply(status.InProgress, call.opID)
}

// watched is what one watch of an operation learnt: its workflow's
// terminal outcome, or else the store's record of it.
type watched struct {
	// final is the workflow's outcome (terminal).
	final idemstore.Final
	// terminal says final holds the workflow's terminal outcome.
	terminal bool
	// rec is the store's record (found).
	rec idemstore.Record
	// found says rec was read.
	found bool
}

// historyTailRoom is kept between the end of a wait for a workflow's result
// and its long poll's deadline. Temporal's history service answers a long
// poll empty at once when less than a second is left before the caller's
// deadline (longPollSoftTimeout in go.temporal.io/server
// service/history/api), and the SDK then polls again at once: a wait whose
// deadline is the poll's own spins hundreds of requests in its last second.
const historyTailRoom = time.Second + 250*time.Millisecond

// watchOperation waits up to ConfirmWait for opID's outcome, then, without
// one, reads the store's record: the watch that concurrent confirms of opID
// share. It listens to the outcome feed's watch when on has one (told the
// moment the fast path records the outcome, before the workflow ends);
// else, or once the feed lost the watch, to the workflow's result (the
// SDK's long poll). An operation's workflow has one run only (its ID is
// never reused, it never continues as new), so a known run ID names it;
// with an empty one the SDK first asks the server for the current run (a
// DescribeWorkflowExecution, which a first confirm spares).
func (s *Server) watchOperation(ctx context.Context, opID string, on waitFor, traceID string) watched {
	deadline := time.Now().Add(s.cfg.ConfirmWait)
	if on.feed != nil {
		timer := time.NewTimer(s.cfg.ConfirmWait)
		defer timer.Stop()
		select {
		case final := <-on.feed.Outcome:
			s.metrics.waits.WithLabelValues(waitByFeed).Inc()
			return watched{final: final, terminal: true}
		case <-on.feed.Lost: // the workflow's result tells, for what is left of the wait
		case <-timer.C:
			return s.storeWatched(ctx, opID)
		}
	}
	// The long poll's deadline lies historyTailRoom past the wait, and the
	// wait ends by cancel: a deadline the poll reaches spins (see there).
	wctx, cancel := context.WithDeadline(ctx, deadline.Add(historyTailRoom))
	defer cancel()
	stop := time.AfterFunc(time.Until(deadline), cancel)
	defer stop.Stop()
	var res idemstore.Final
	err := s.temporal.GetWorkflow(wctx, opID, on.runID).Get(wctx, &res)
	if err == nil && res.State.Terminal() {
		s.metrics.waits.WithLabelValues(waitByWorkflow).Inc()
		return watched{final: res, terminal: true}
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		level := slog.LevelWarn
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			level = slog.LevelInfo // the holder has not started it yet
		}
		s.log.Log(ctx, level, "wait for workflow", "operation_id", opID, "err", err, "trace_id", traceID)
	}
	return s.storeWatched(ctx, opID)
}

// storeWatched is what the store's record of opID says after a wait that
// was not told the outcome.
func (s *Server) storeWatched(ctx context.Context, opID string) watched {
	s.metrics.waits.WithLabelValues(waitByStore).Inc()
	rctx, rcancel := context.WithTimeout(ctx, startTimeout)
	defer rcancel()
	rec, gerr := s.store.Get(rctx, opID)
	return watched{rec: rec, found: gerr == nil}
}

// refill writes the terminal outcome to the fast path under refill.owner's
// claim when the gateway is its writer; NOT_OWNER (a newer owner) and an
// already terminal record are fine.
func (s *Server) refill(ctx context.Context, call confirmCall, final idemstore.Final, refill fastPathRefill) {
	switch refill.by {
	case operation.RefillByWorkflow:
		return // the workflow's Finalize writes the fast path under this very claim
	case operation.RefillByGateway:
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	err := s.store.FinalizeFast(fctx, idemstore.Finalization{OperationID: call.opID, Owner: refill.owner, Final: final,
		TerminalTTL: call.action.TerminalTTL})
	if err != nil && !errors.Is(err, idemstore.ErrNotOwner) && !errors.Is(err, idemstore.ErrAlreadyTerminal) {
		s.log.WarnContext(ctx, "refill fast path", "operation_id", call.opID, "err", err, "trace_id", call.traceID)
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
