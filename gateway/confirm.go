package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/watch"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/status"
)

// startTimeout bounds the store and engine calls that must finish even
// when the agent hangs up (starting the workflow, refilling the fast path).
const startTimeout = 10 * time.Second

// startCheckTimeout bounds the engine's Describe after a failed start. The
// start already spent up to startTimeout; an engine that did not answer it
// rarely answers this, and without an answer the claim is kept (the
// workflow may run) and the agent told to retry: the agent's wait stays
// near startTimeout instead of twice it.
const startCheckTimeout = 3 * time.Second

// confirmCall is one confirm in progress: what its calls learnt that the
// next calls and the action need besides the facts.
type confirmCall struct {
	req    ConfirmRequest
	action *catalog.Action
	owner  string
	// bound are the bound params (confirmAskBind).
	bound boundParams
	// charge is what the operation spends of the subject's budgets (nil:
	// the action declares no spend).
	charge *operation.Charge
	// payload is the verified fingerprint's payload (confirmAskVerify).
	payload fingerprint.Payload
	// approvalSHA256 is the approval evidence's hash the operation runs
	// under (empty when none was needed): stored with the claim, named by
	// every receipt.
	approvalSHA256 string
	// mandate is the standing mandate the operation is claimed under
	// instead of its approval (nil: none): the claim reserves it, and the
	// workflow's input and every receipt name it.
	mandate *mandate.Use
	// feed is the outcome feed's watch, begun before this confirm's start
	// (nil: none).
	feed *idemstore.OutcomeWatch
	// traceID is the request's trace id, read once when first needed.
	traceID string
}

// opID is the operation id (the fingerprint's nonce), once verified.
func (call *confirmCall) opID() string { return call.payload.Nonce }

// trace is the request's trace id.
func (call *confirmCall) trace(ctx context.Context) string {
	if call.traceID == "" {
		call.traceID = telemetry.TraceID(ctx)
	}
	return call.traceID
}

// ref names this call's operation as its claim binds it (the fingerprint's
// nonce, subject and scope, the bound params' hash, the approval, and the
// acting client of the claim it runs under, which the decision names):
// what the receipt of its outcome states besides the outcome.
func (call *confirmCall) ref(client string) operationRef {
	return operationRef{ID: call.opID(), Subject: call.req.Caller.Subject, Scope: call.action.Scope,
		ParamHash: call.bound.paramHash, ApprovalSHA256: call.approvalSHA256, ActingClient: client}
}

// Confirm verifies and consumes a fingerprint and executes its operation
// at most once: it asks what decideConfirm names, one call at a time, and
// does what it decides (ARCHITECTURE.md, the confirm path).
func (s *Service) Confirm(ctx context.Context, req ConfirmRequest) Answer {
	action, ok := s.cat.Lookup(req.Scope)
	if !ok {
		return UnknownActionAnswer(req.Scope)
	}
	call := &confirmCall{req: req, action: action, owner: s.instance + ":" + randomHex(8)}
	defer func() {
		if call.feed != nil {
			call.feed.Stop()
		}
	}()
	facts := confirmFacts{Owner: call.owner, Client: req.Caller.Client}
	for {
		plan := decideConfirm(facts)
		if plan.Ask == confirmDecided {
			a := s.act(ctx, call, plan)
			a.Scope = action.Scope
			return a
		}
		facts = s.ask(ctx, call, plan, facts)
	}
}

// ask makes the call plan names and adds its classified answer to f.
func (s *Service) ask(ctx context.Context, call *confirmCall, plan confirmPlan, f confirmFacts) confirmFacts {
	switch plan.Ask {
	case confirmAskScope:
		f.Scope = scopeOf(call.req.Caller, call.action)
	case confirmAskRate:
		f.Rate = s.rate(ctx, call.req.Caller, limits.KindConfirm)
	case confirmAskBind:
		f.Bind = s.bindConfirm(call)
	case confirmAskVerify:
		p, err := s.keys.Verify(call.req.Fingerprint, fingerprint.Expectation{
			Subject: call.req.Caller.Subject, Scope: call.action.Scope, ParamHash: call.bound.paramHash, Now: s.now(),
			AllowExpired: true,
		})
		call.payload = p
		f.Verify = verifyAnswerOf(p, err, s.now(), call.req.AcknowledgeRepeatOf)
		if err != nil {
			s.fingerprintRefused(ctx, call, f.Verify, err)
		}
	case confirmAskApproval:
		rec, err := s.approvals.Approval(ctx, call.opID())
		f.Approval = approvalAnswerOf(call.payload, rec, err, s.now())
		call.approvalSHA256 = f.Approval.Gate.EvidenceSHA256
	case confirmAskMandate:
		f.Mandate = s.mandateFor(ctx, call)
	case confirmAskClaim:
		f.Claim = s.acquire(ctx, call)
	case confirmAskRecord:
		f.Claim = s.record(ctx, call)
	case confirmAskWorkflow:
		dctx, cancel := detached(ctx)
		f.Workflow = workflowAnswerOf(s.engine.Describe(dctx, call.opID()))
		cancel()
	case confirmAskTakeover:
		err := s.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: call.opID(), FromOwner: plan.Holder,
			ToOwner: call.owner, TTL: call.action.InFlightTTL})
		f.Takeover = takeoverAnswerOf(err)
		if err == nil {
			s.log.WarnContext(ctx, "took over orphaned claim", "operation_id", call.opID(), "from", plan.Holder,
				"to", call.owner, "claimed_at", f.Claim.ClaimedAt, "trace_id", call.trace(ctx))
		}
	case confirmAskStart:
		f.Start = s.start(ctx, call, plan.Ownership, plan.Client)
	case confirmAskStartCheck:
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startCheckTimeout)
		f.StartCheck = workflowAnswerOf(s.engine.Describe(dctx, call.opID()))
		cancel()
	case confirmAskRelease:
		rctx, cancel := detached(ctx)
		err := s.store.Release(rctx, idemstore.ReleaseParams{OperationID: call.opID(), Owner: call.owner})
		cancel()
		f.Release = releaseAnswer{Asked: true, Err: err}
		if err != nil {
			s.log.WarnContext(ctx, "release unstarted claim", "operation_id", call.opID(), "err", err, "trace_id", call.trace(ctx))
		}
	case confirmAskAwait:
		if plan.Ignored != nil {
			s.log.WarnContext(ctx, "describe workflow", "operation_id", call.opID(), "err", plan.Ignored, "trace_id", call.trace(ctx))
		}
		f.Await = s.await(ctx, call, plan.Wait)
	case confirmDecided:
	}
	return f
}

// act does what the decision p names.
func (s *Service) act(ctx context.Context, call *confirmCall, p confirmPlan) Answer {
	opID := call.opID()
	switch p.Action {
	case actInsufficientScope:
		return insufficientScopeAnswer(call.action.Scope, p.Scope)
	case actRateLimited:
		return rateLimitedAnswer(call.action.Scope, p.RetryAfter)
	case actInvalidParams:
		return invalidParams(call.action.Scope, p.Problems)
	case actFingerprintInvalid:
		return NewAnswer(status.FingerprintInvalid)
	case actSubjectMismatch:
		return NewAnswer(status.SubjectMismatch)
	case actScopeMismatch:
		return opAnswer(status.ScopeMismatch, opID)
	case actParamMismatch:
		return opAnswer(status.ParamMismatch, opID)
	case actRepeatUnacknowledged:
		return s.repeatUnacknowledged(ctx, call)
	case actApprovalRequired:
		return s.approvalRequired(ctx, call, p.Approval, p.MandateRefusal)
	case actApprovalDeclined:
		return approvalDeclinedAnswer(opID, *p.Approval.Record)
	case actRefuse:
		s.securityEvent(ctx, EventStoreParamMismatch, call.req.Caller, call.action.Scope, opID,
			"the store holds this operation with another param_hash")
		return opAnswer(status.ParamMismatch, opID)
	case actExpired:
		return fingerprintExpiredAnswer(call.payload.ExpiresAt())
	case actUnavailable:
		return s.storeErrorAnswer(call.action.Scope, opID, fmt.Errorf("confirm %s: %w", opID, p.Err))
	case actEngineUnavailable:
		s.log.ErrorContext(ctx, "start workflow", "operation_id", opID, "err", p.Err, "trace_id", call.trace(ctx))
		return UnavailableAnswer(opID, DetailWorkflowEngine)
	case actOverBudget:
		return s.overBudget(ctx, call, p.Usage)
	case actReview, actReplay:
		rec := p.Record
		rec.OperationID = opID
		return s.answerFor(rec, true)
	case actAnswerOutcome:
		s.refill(ctx, call, p.Final, p.Wait.Refill)
		return s.finalAnswer(call.ref(p.Wait.Client), p.Final, p.Wait.Replay)
	case actAnswerRecord:
		rec := p.Record
		rec.OperationID = opID
		return s.answerFor(rec, p.Wait.Replay)
	case actInProgress:
		return withActingClient(opAnswer(status.InProgress, opID), p.Wait.Client)
	case actInternal:
		return InternalErrorAnswer(opID, fmt.Errorf("confirm %s: %w", opID, p.Err))
	case actAsk:
	}
	return InternalErrorAnswer(opID, fmt.Errorf("confirm %s: no action decided", opID))
}

// bindConfirm binds the confirm's params and makes its charge.
func (s *Service) bindConfirm(call *confirmCall) bindAnswer {
	bp, problems := bindParams(call.action, call.req.Params)
	if len(problems) > 0 {
		return bindAnswer{Kind: bindInvalid, Problems: problems}
	}
	call.bound = bp
	charge, err := s.charge(call.req.Caller, call.action, bp)
	if err != nil {
		return bindAnswer{Kind: bindBroken, Err: err}
	}
	call.charge = charge
	return bindAnswer{Kind: bindOK}
}

// fingerprintRefused reports a refused fingerprint as the security event
// its verdict is.
func (s *Service) fingerprintRefused(ctx context.Context, call *confirmCall, v verifyAnswer, err error) {
	p, scope := call.payload, call.action.Scope
	switch v.Kind {
	case verifyInvalid:
		s.securityEvent(ctx, EventInvalidFingerprint, call.req.Caller, scope, "", err.Error())
	case verifySubject:
		s.securityEvent(ctx, EventSubjectMismatch, call.req.Caller, scope, p.Nonce, "fingerprint issued to "+p.Subject)
	case verifyScope:
		s.securityEvent(ctx, EventScopeMismatch, call.req.Caller, scope, p.Nonce, "fingerprint issued for "+p.Scope)
	case verifyParams:
		s.securityEvent(ctx, EventParamMismatch, call.req.Caller, scope, p.Nonce, "bound params differ from the fingerprint's")
	case verifyNotAsked, verifyValid, verifyBroken:
	}
}

// acquire claims the operation for call, or answers its finished record
// when this gateway keeps it (finals). The claim must not be abandoned
// half-way when the agent hangs up (a lost answer): a Redis claim whose
// truth check and release were cancelled is an orphan that answers
// in_progress to every retry and status query until the grace period,
// while nothing runs.
func (s *Service) acquire(ctx context.Context, call *confirmCall) claimAnswer {
	if known, ok := s.knownFinal(call); ok {
		return known
	}
	actx, cancel := detached(ctx)
	defer cancel()
	d, err := s.store.Acquire(actx, idemstore.Claim{
		OperationID: call.opID(), ParamHash: call.bound.paramHash, Owner: call.owner, Subject: call.req.Caller.Subject,
		ActingClient: call.req.Caller.Client, Scope: call.action.Scope, InFlightTTL: call.action.InFlightTTL, TerminalTTL: call.action.TerminalTTL,
		FingerprintExp: call.payload.ExpiresAt(), BoundParams: call.bound.canonical, Charge: call.charge,
		ApprovalSHA256: call.approvalSHA256, IntentWindow: call.action.IntentWindow(), Mandate: call.mandate,
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
func (s *Service) record(ctx context.Context, call *confirmCall) claimAnswer {
	if known, ok := s.knownFinal(call); ok {
		return known
	}
	rec, err := s.store.Outcome(ctx, call.opID())
	a := recordAnswerOf(rec, err, s.now(), s.cfg.ClaimGrace)
	s.keepFinal(a, call)
	return a
}

// knownFinal is the claim answer of call's operation from the finished
// records this gateway keeps (finals): claimFinished with the record, when
// it is kept and is call's own (its subject, scope and bound params'
// hash); else false, and the store is asked.
func (s *Service) knownFinal(call *confirmCall) (claimAnswer, bool) {
	rec, ok := s.finals.get(call.opID(), s.now())
	if !ok || rec.Subject != call.req.Caller.Subject || rec.Scope != call.action.Scope || rec.ParamHash != call.bound.paramHash {
		return claimAnswer{}, false
	}
	return claimAnswer{Kind: claimFinished, Record: rec}, true
}

// keepFinal keeps the finished record of a the store answered for call
// (finals), for the action's terminal_ttl after it completed.
func (s *Service) keepFinal(a claimAnswer, call *confirmCall) {
	if a.Kind == claimFinished {
		rec := a.Record
		rec.OperationID = call.opID()
		s.finals.keep(rec, call.action.TerminalTTL)
	}
}

// repeatUnacknowledged answers a fingerprint of the amnesia guard confirmed
// without acknowledge_repeat_of.
func (s *Service) repeatUnacknowledged(ctx context.Context, call *confirmCall) Answer {
	recentID := call.payload.RecentOperation
	var recent *idemstore.Record
	if rec, err := s.store.Get(ctx, recentID); err == nil && rec.Subject == call.req.Caller.Subject {
		recent = &rec
	}
	return s.repeatUnacknowledgedAnswer(call.opID(), recentID, recent)
}

// start starts the operation's workflow under own, acting client client,
// and watches its outcome
// on the feed before it can be recorded: from the start on, nothing the
// feed is told can be missed. Not while the store bypasses Redis
// (degraded): the outcome is then likely written to the truth alone, and
// announced by no one. The start must not be abandoned when the agent
// hangs up.
func (s *Service) start(ctx context.Context, call *confirmCall, own operation.Ownership, client string) startAnswer {
	if s.cfg.Failpoint == FailpointAfterClaim {
		failpoint.Crash()
	}
	params, err := call.bound.downstreamParams()
	if err != nil {
		return startAnswer{Kind: startFailed, Err: err}
	}
	in := operation.Input{
		OperationID: call.opID(), Subject: call.req.Caller.Subject, Scope: call.action.Scope, ParamHash: call.bound.paramHash,
		Ownership: own, Params: params, BoundParams: call.bound.canonical, FingerprintExp: call.payload.ExpiresAt(),
		InFlightTTL: call.action.InFlightTTL, TerminalTTL: call.action.TerminalTTL,
		Downstream: call.action.Downstream.Plan(), Summary: operation.Summary(call.action.Scope, params, call.action.SummaryField),
		Charge: call.charge, ApprovalSHA256: call.approvalSHA256, ResolutionKeys: s.resolutions.PublicKeys(),
		ActingClient: client, Mandate: call.mandate,
	}
	if s.outcomes != nil && !s.store.Degraded() {
		if w, ok := s.outcomes.Watch(call.opID()); ok {
			call.feed = &w
		}
	}
	sctx, cancel := detached(ctx)
	defer cancel()
	run, err := s.engine.Start(sctx, in, StartOptions{TraceID: call.trace(ctx), Eager: s.cfg.InProcessWorker})
	a := startAnswerOf(run, err)
	if a.Kind != startStarted && call.feed != nil {
		// An earlier call's workflow may have recorded its outcome before
		// the watch began: its result tells.
		call.feed.Stop()
		call.feed = nil
	}
	if a.Kind != startFailed {
		s.log.InfoContext(ctx, "operation started", "operation_id", call.opID(), "scope", call.action.Scope,
			"subject", call.req.Caller.Subject, "attached", a.Kind == startAttached, "truth", own.Truth(),
			"trace_id", call.trace(ctx))
	}
	return a
}

// detached detaches a store or engine call from the caller's cancellation
// and bounds it by startTimeout. An agent that hangs up must not cancel a
// call in flight: that would leave the work half done (and a cancelled
// call interrupts the Temporal dev server's SQLite connection for good).
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
}

// await waits up to ConfirmWait for the operation's outcome through the
// gateway's one watcher of it (watchOperation), which every concurrent
// confirm of the same operation shares; without an outcome it reads the
// store's record. With ONCEGATE_MAX_WATCHERS watchers running it learns
// nothing at once.
func (s *Service) await(ctx context.Context, call *confirmCall, w waitPlan) awaitAnswer {
	// Detached from the agent's connection: an agent that hangs up costs at
	// most this wait, and never cancels an engine call in flight.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ConfirmWait+startTimeout)
	defer cancel()
	var feed *idemstore.OutcomeWatch
	if w.Feed {
		feed = call.feed
	}
	got, _, err := s.watchers.Do(wctx, call.opID(), func(ctx context.Context) (watched, error) {
		return s.watchOperation(ctx, call, w.Run, feed), nil
	})
	switch {
	case err != nil:
		if !errors.Is(err, watch.ErrBusy) {
			s.log.WarnContext(ctx, "wait for workflow", "operation_id", call.opID(), "err", err, "trace_id", call.trace(ctx))
		}
		return awaitAnswer{Kind: awaitNothing}
	case got.terminal:
		return awaitAnswer{Kind: awaitOutcome, Final: got.final}
	case got.found:
		return awaitAnswer{Kind: awaitRecord, Record: got.rec}
	}
	return awaitAnswer{Kind: awaitNothing}
}

// watched is what one watch of an operation learnt: its workflow's
// terminal outcome, or else the store's record of it.
type watched struct {
	// final is the workflow's outcome (terminal).
	final operation.Final
	// terminal says final holds the workflow's terminal outcome.
	terminal bool
	// rec is the store's record (found).
	rec idemstore.Record
	// found says rec was read.
	found bool
}

// watchOperation waits up to ConfirmWait for the outcome, then, without
// one, reads the store's record: the watch that concurrent confirms of the
// operation share. It listens to the outcome feed's watch when it has one
// (told the moment the fast path records the outcome, before the workflow
// ends); else, or once the feed lost the watch, to the workflow's result.
func (s *Service) watchOperation(ctx context.Context, call *confirmCall, run string, feed *idemstore.OutcomeWatch) watched {
	opID := call.opID()
	deadline := time.Now().Add(s.cfg.ConfirmWait)
	if feed != nil {
		timer := time.NewTimer(s.cfg.ConfirmWait)
		defer timer.Stop()
		select {
		case final := <-feed.Outcome:
			s.metrics.waits.WithLabelValues(waitByFeed).Inc()
			return watched{final: final, terminal: true}
		case <-feed.Lost: // the workflow's result tells, for what is left of the wait
		case <-timer.C:
			return s.storeWatched(ctx, opID)
		}
	}
	res, err := s.engine.Await(ctx, opID, run, deadline)
	if err == nil && res.State.Terminal() {
		s.metrics.waits.WithLabelValues(waitByWorkflow).Inc()
		return watched{final: res, terminal: true}
	}
	if err != nil && !errors.Is(err, ErrNoOutcome) {
		level := slog.LevelWarn
		if errors.Is(err, ErrNoWorkflow) {
			level = slog.LevelInfo // the holder has not started it yet
		}
		s.log.Log(ctx, level, "wait for workflow", "operation_id", opID, "err", err, "trace_id", call.trace(ctx))
	}
	return s.storeWatched(ctx, opID)
}

// storeWatched is what the store's record of opID says after a wait that
// was not told the outcome.
func (s *Service) storeWatched(ctx context.Context, opID string) watched {
	s.metrics.waits.WithLabelValues(waitByStore).Inc()
	rctx, rcancel := context.WithTimeout(ctx, startTimeout)
	defer rcancel()
	rec, gerr := s.store.Get(rctx, opID)
	return watched{rec: rec, found: gerr == nil}
}

// refill writes the terminal outcome to the fast path under refill.Owner's
// claim when the gateway is its writer; NOT_OWNER (a newer owner) and an
// already terminal record are fine.
func (s *Service) refill(ctx context.Context, call *confirmCall, final operation.Final, refill fastPathRefill) {
	switch refill.By {
	case operation.RefillByWorkflow:
		return // the workflow's Finalize writes the fast path under this very claim
	case operation.RefillByGateway:
	}
	fctx, cancel := detached(ctx)
	defer cancel()
	err := s.store.FinalizeFast(fctx, idemstore.Finalization{OperationID: call.opID(), Owner: refill.Owner, Final: final,
		TerminalTTL: call.action.TerminalTTL})
	if err != nil && !errors.Is(err, idemstore.ErrNotOwner) && !errors.Is(err, idemstore.ErrAlreadyTerminal) {
		s.log.WarnContext(ctx, "refill fast path", "operation_id", call.opID(), "err", err, "trace_id", call.trace(ctx))
	}
}

// securityEvent logs, counts and alerts one security event. The alert runs
// on its own goroutine and never delays the answer.
func (s *Service) securityEvent(ctx context.Context, kind string, caller Caller, scope, opID, detail string) {
	traceID := telemetry.TraceID(ctx)
	if !isSecurityEventKind(kind) {
		// A programming error: still reported, under its name, so nothing is lost.
		s.log.ErrorContext(ctx, "security event of an unregistered kind", "kind", kind, "trace_id", traceID)
	}
	ev := SecurityEvent{Kind: kind, Subject: caller.Subject, Scope: scope, OperationID: opID, TraceID: traceID,
		Detail: detail, At: s.now().UTC()}
	s.log.WarnContext(ctx, "security event", "kind", kind, "subject", caller.Subject, "scope", scope,
		"operation_id", opID, "trace_id", traceID, "detail", detail)
	s.metrics.security.WithLabelValues(kind).Inc()
	go s.alert.Alert(context.WithoutCancel(ctx), ev)
}
