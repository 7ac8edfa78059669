package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// a names the activities by method value (workflow.ExecuteActivity(ctx,
// a.Execute, in)); the worker registers the real *activities.Activities.
var a *activities.Activities

// Typed search attribute keys (Keyword). The gateway starts every workflow
// with them (StartWorkflowOptions.TypedSearchAttributes =
// StartSearchAttributes(in)); the workflow upserts IdemState at every
// transition.
var (
	// StateKey is the IdemState search attribute.
	StateKey = temporal.NewSearchAttributeKeyKeyword(SearchAttrState)
	// ScopeKey is the IdemScope search attribute.
	ScopeKey = temporal.NewSearchAttributeKeyKeyword(SearchAttrScope)
	// SubjectKey is the IdemSubject search attribute.
	SubjectKey = temporal.NewSearchAttributeKeyKeyword(SearchAttrSubject)
)

// truthTimeout bounds one call of a truth activity.
const truthTimeout = 30 * time.Second

// ChangeNotFoundWindow is the workflow.GetVersion change ID of the
// processing window: from its version 1 on, a status "not found" proves
// "not executed" only when asked after the downstream's max_processing_time
// and status_lag have passed since the last send, and never without a
// declared window. Histories recorded before it replay the old path.
const ChangeNotFoundWindow = "not-found-after-processing-window"

// ChangeSingleClaim is the workflow.GetVersion change ID of the single
// claim: from its version 1 on, a workflow whose input's Ownership says the
// confirm claimed the truth (operation.TruthClaimedByConfirm) does not claim
// it again with the ClaimTruth activity. Histories before it replay the
// activity.
const ChangeSingleClaim = "single-claim"

// ChangeLocalFinalize is the workflow.GetVersion change ID of the local
// finalize: from its version 1 on, Finalize runs as a local activity inside
// the workflow task that already follows the execute activity (no task of
// its own to dispatch, no workflow task after it), and only a finalize the
// local attempts could not finish within finalizeLocalBudget goes on as a
// regular activity, retried until the truth answers. A worker that dies
// before the local activity's marker is recorded leaves a workflow task
// that times out; the next worker replays the history, finds no marker and
// runs Finalize again (it is owner-checked and idempotent: the same outcome
// again is accepted). Histories before it replay the regular activity.
const ChangeLocalFinalize = "finalize-local-activity"

// finalizeLocalBudget bounds the local attempts of Finalize (their
// schedule-to-close timeout) before it goes on as a regular activity.
const finalizeLocalBudget = 2 * time.Minute

// ChangeBusinessState is the workflow.GetVersion change ID of business
// states: from its version 1 on, a downstream that declares business_state
// is DONE only when its answer says succeeded, FAILED when it says failed,
// and waited for (polling and webhooks) while it says pending. It is asked
// only for such downstreams, which no history before it has.
const ChangeBusinessState = "business-state"

// ChangeFastConfirm is the workflow.GetVersion change ID that every new
// execution meets first, in its first workflow task: its version 1 means
// that every change before it (ChangesBeforeFastConfirm) is in effect,
// without a version marker of its own. The SDK records a marker and
// upserts the TemporalChangeVersion search attribute (two history events
// and their commands' work on the server) for every change ID an execution
// meets for the first time, so a first confirm, which met single-claim and
// finalize-local-activity, now records one of each instead of two. An
// execution without its marker (recorded before it, or started by a worker
// that holds it) meets each earlier change's own GetVersion, as before.
const ChangeFastConfirm = "fast-confirm"

// ChangesBeforeFastConfirm are the changes that version 1 of
// ChangeFastConfirm puts in effect. A worker that holds one of them back
// (ONCEGATE_HOLD_WORKFLOW_CHANGES) holds ChangeFastConfirm back too.
var ChangesBeforeFastConfirm = []string{
	ChangeNotFoundWindow, ChangeBusinessState, ChangeResolveOnce, ChangeSingleClaim, ChangeLocalFinalize,
}

// ChangeExecuteFinalizes is the change that version 2 of ChangeFastConfirm
// puts in effect (it has no version marker of its own): the Execute
// activity is asked to finalize a DONE outcome itself
// (operation.Input.ExecuteFinalizes) the moment the downstream answered
// it, so that the confirm waiting on the outcome feed is answered before
// this workflow hears of it; the workflow then records the transition and
// ends without a finalize of its own. Every other outcome, and a DONE the
// activity could not finalize, the workflow finalizes as before. A worker
// that holds it back (ONCEGATE_HOLD_WORKFLOW_CHANGES) records version 1 of
// ChangeFastConfirm.
const ChangeExecuteFinalizes = "execute-finalizes"

// fastConfirmVersion is ChangeFastConfirm's version: 1 puts every change
// of ChangesBeforeFastConfirm in effect, 2 ChangeExecuteFinalizes as well.
// It is decided the first time it is asked, in the first workflow task
// (run asks for ChangeSingleClaim before any other change), and read from
// the SDK's cache after that: an execution recorded before it replays that
// task and keeps workflow.DefaultVersion to its end.
func fastConfirmVersion(ctx workflow.Context) workflow.Version {
	return workflow.GetVersion(ctx, ChangeFastConfirm, workflow.DefaultVersion, 2)
}

// changeVersion returns the version of change (one of
// ChangesBeforeFastConfirm) an execution runs: 1 when it recorded version
// 1 or later of ChangeFastConfirm, else the change's own
// workflow.GetVersion.
func changeVersion(ctx workflow.Context, change string) workflow.Version {
	if fastConfirmVersion(ctx) >= 1 {
		return 1
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1)
}

// StartSearchAttributes returns the search attributes a workflow of in is
// started with: IdemState=IN_FLIGHT, IdemScope and IdemSubject.
func StartSearchAttributes(in operation.Input) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		StateKey.ValueSet(string(operation.StateInFlight)),
		ScopeKey.ValueSet(in.Scope),
		SubjectKey.ValueSet(in.Subject),
	)
}

// Operation runs one operation exactly once: it claims the PostgreSQL truth
// (unless the confirm's claim did, as in.Ownership says), calls the downstream (with the operation_id as Idempotency-Key and
// client_reference on every attempt), reconciles an unknown answer through
// the status endpoint, waits for an operator when the outcome cannot be
// determined, and records the terminal outcome. Its workflow ID is the
// operation_id, so Temporal runs at most one of it.
func Operation(ctx workflow.Context, in operation.Input) (operation.Final, error) {
	in, err := in.Resolved(catalog.PlanOf)
	if err != nil {
		return operation.Final{}, err
	}
	ds := in.Downstream
	// The truth (PostgreSQL) must be written: retried until it answers.
	truthCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: truthTimeout,
		RetryPolicy:         truthRetryPolicy(),
	})
	// A downstream that honours Idempotency-Key may be retried as the catalog
	// says; one that ignores it is sent exactly once (MaximumAttempts 1): a
	// second send could execute the transfer twice. No attempt is made after
	// the downstream has forgotten the key (ScheduleToCloseTimeout).
	executeCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    ds.Execute.Timeout,
		ScheduleToCloseTimeout: ds.KeyRetention,
		RetryPolicy:            retryPolicy(ds.Execute, operation.ErrTypeBusinessRefusal, operation.ErrTypeNotSent),
	})
	// Reconciliation only reads, so it may be retried, but boundedly: then a
	// person decides.
	reconcileCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: ds.StatusQuery.Timeout,
		RetryPolicy:         retryPolicy(ds.StatusQuery, operation.ErrTypeNoStatusEndpoint),
	})

	view := StateView{State: operation.StateInFlight}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (StateView, error) {
		return view, nil
	}); err != nil {
		return operation.Final{}, fmt.Errorf("register query %s: %w", QueryState, err)
	}
	res := &resolver{in: in, view: &view}
	if err := res.register(ctx); err != nil {
		return operation.Final{}, err
	}
	out, err := run(ctx, in, &view, res, truthCtx, executeCtx, reconcileCtx)
	if err != nil {
		return operation.Final{}, err
	}
	if err := res.finish(ctx, out); err != nil {
		return operation.Final{}, err
	}
	return out, nil
}

// run is the operation up to its terminal outcome.
func run(ctx workflow.Context, in operation.Input, view *StateView, res *resolver,
	truthCtx, executeCtx, reconcileCtx workflow.Context) (operation.Final, error) {
	logger := workflow.GetLogger(ctx)
	if err := upsertStart(ctx, in); err != nil {
		return operation.Final{}, err
	}
	setDetails(ctx, in, *view)

	own := in.Ownership
	var claim operation.ClaimResult
	if changeVersion(ctx, ChangeSingleClaim) == 1 && own.TruthClaimed() {
		// The confirm's claim is the claim: it inserted the truth record
		// IN_FLIGHT under own.Owner() just before starting this workflow,
		// and no one else can have changed it (only this workflow moves it
		// on). A takeover never gets here (operation.Takeover).
		claim.State = operation.StateInFlight
	} else {
		if err := workflow.ExecuteActivity(truthCtx, a.ClaimTruth, in).Get(ctx, &claim); err != nil {
			return operation.Final{}, fmt.Errorf("claim truth %s: %w", in.OperationID, err)
		}
		own = own.ClaimedAs(claim.Owner, claim.ClaimedAt)
	}
	if claim.State.Terminal() {
		// Already decided: answer the first outcome, never execute again.
		logger.Info("Operation already terminal in the truth", "State", claim.State)
		if err := transition(ctx, in, view, claim.State, claim.Reason, claim.ResultRef); err != nil {
			return operation.Final{}, err
		}
		return claim.Final, nil
	}

	var (
		out          operation.Final
		reviewReason string
		marked       bool
	)
	if claim.State == operation.StateNeedsReview {
		reviewReason, marked = claim.Reason, true
	} else {
		v, err := execute(ctx, executeCtx, reconcileCtx, in, own)
		if err != nil {
			return operation.Final{}, err
		}
		if v.finalized {
			// Execute recorded the outcome in the truth and the fast path.
			if err := transition(ctx, in, view, v.result.State, v.result.Reason, v.result.ResultRef); err != nil {
				return operation.Final{}, err
			}
			return v.result, nil
		}
		if v.pending != nil {
			if v, err = awaitFinal(ctx, reconcileCtx, truthCtx, in, view, v.pending); err != nil {
				return operation.Final{}, err
			}
		}
		out, reviewReason = v.result, v.unknown
	}

	if out.State == "" {
		// The outcome cannot be determined automatically: a person decides.
		if !marked {
			err := workflow.ExecuteActivity(truthCtx, a.MarkNeedsReview, operation.MarkNeedsReviewInput{
				OperationID: in.OperationID,
				Reason:      reviewReason,
			}).Get(ctx, nil)
			if isErrType(err, operation.ErrTypeAlreadyTerminal) {
				return readTerminal(ctx, truthCtx, in, view)
			}
			if err != nil {
				return operation.Final{}, fmt.Errorf("mark needs review %s: %w", in.OperationID, err)
			}
		}
		logger.Warn("Operation needs manual review", "Reason", reviewReason)
		if err := transition(ctx, in, view, operation.StateNeedsReview, reviewReason, ""); err != nil {
			return operation.Final{}, err
		}
		var err error
		if out, err = res.wait(ctx); err != nil {
			return operation.Final{}, err
		}
	}
	// The outcome's time is decided here, once, and written to the truth and
	// the fast path alike (an activity retry carries the same): every
	// answer of the outcome, and its signed receipt, names this time.
	out.CompletedAt = workflow.Now(ctx).UTC().Truncate(time.Millisecond)
	fin := operation.FinalizeInput{
		OperationID: in.OperationID,
		Ownership:   own,
		Final:       out,
		Scope:       in.Scope,
		TerminalTTL: in.TerminalTTL,
	}
	err := finalize(ctx, truthCtx, fin)
	if isErrType(err, operation.ErrTypeAlreadyTerminal) {
		// Truth is never overwritten: answer what it holds.
		logger.Warn("Truth already terminal with another outcome", "Wanted", out.State)
		return readTerminal(ctx, truthCtx, in, view)
	}
	if err != nil {
		return operation.Final{}, fmt.Errorf("finalize %s: %w", in.OperationID, err)
	}
	if err := transition(ctx, in, view, out.State, out.Reason, out.ResultRef); err != nil {
		return operation.Final{}, err
	}
	return out, nil
}

// finalize records fin's outcome: from ChangeLocalFinalize version 1 on as
// a local activity (with the truth's retry policy, for finalizeLocalBudget),
// then, if that could not finish it, as a regular activity retried until
// the truth answers; before it, as a regular activity.
func finalize(ctx, truthCtx workflow.Context, fin operation.FinalizeInput) error {
	if changeVersion(ctx, ChangeLocalFinalize) == workflow.DefaultVersion {
		return workflow.ExecuteActivity(truthCtx, a.Finalize, fin).Get(ctx, nil)
	}
	localCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    truthTimeout,
		ScheduleToCloseTimeout: finalizeLocalBudget,
		RetryPolicy:            truthRetryPolicy(),
	})
	err := workflow.ExecuteLocalActivity(localCtx, a.Finalize, fin).Get(ctx, nil)
	var appErr *temporal.ApplicationError
	if err == nil || temporal.IsCanceledError(err) || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		return err
	}
	workflow.GetLogger(ctx).Warn("Local finalize did not finish; going on as an activity", "Error", err)
	return workflow.ExecuteActivity(truthCtx, a.Finalize, fin).Get(ctx, nil)
}

// truthRetryPolicy is the retry policy of the truth's activities: retried
// until the truth answers, never for the answers that cannot change.
func truthRetryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		NonRetryableErrorTypes: []string{operation.ErrTypeParamMismatch, operation.ErrTypeAlreadyTerminal, operation.ErrTypeNotOwner},
	}
}

// verdict is what executing (and reconciling) decided: a terminal result
// (finalized: already recorded by the Execute activity), unknown with the
// reason a person must look at it, or pending: accepted by the downstream,
// whose answer (kept here) says the outcome comes later.
type verdict struct {
	result    operation.Final
	finalized bool
	unknown   string
	pending   *pendingAnswer
}

// pendingAnswer is a downstream answer whose business state is pending, and
// when it was received.
type pendingAnswer struct {
	record json.RawMessage
	at     time.Time
}

// execute sends the operation downstream and, after an unknown answer,
// reconciles it. From ChangeExecuteFinalizes on, the Execute activity is
// asked to finalize a DONE outcome itself, under own.
func execute(ctx, executeCtx, reconcileCtx workflow.Context, in operation.Input, own operation.Ownership) (verdict, error) {
	logger := workflow.GetLogger(ctx)
	executeIn := in
	finalizes := fastConfirmVersion(ctx) >= 2
	if finalizes {
		executeIn.Ownership, executeIn.ExecuteFinalizes = own, true
	}
	var res operation.ExecuteResult
	err := workflow.ExecuteActivity(executeCtx, a.Execute, executeIn).Get(ctx, &res)
	// No attempt can be sent after the activity ended: its last attempt's
	// context (and the HTTP request) ends with it. So this bounds the last send.
	lastSent := workflow.Now(ctx)
	if err == nil && res.Finalized != nil {
		return verdict{result: *res.Finalized, finalized: true}, nil
	}
	if err == nil {
		return interpret(ctx, in, res.Result, res.ResultRef), nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case operation.ErrTypeBusinessRefusal:
			var refusal operation.BusinessRefusal
			if appErr.HasDetails() {
				if derr := appErr.Details(&refusal); derr != nil {
					logger.Warn("Undecodable refusal details", "Error", derr)
				}
			}
			if refusal.Code == "" && refusal.Message == "" && refusal.StatusCode == 0 {
				refusal.Message = appErr.Message()
			}
			return verdict{result: failed(operation.FailureRefused, refusal.Reason())}, nil
		case operation.ErrTypeNotSent:
			return verdict{result: failed(operation.FailureNotSent, "not sent: "+appErr.Message())}, nil
		}
	}
	if temporal.IsCanceledError(err) {
		return verdict{}, fmt.Errorf("execute %s: %w", in.OperationID, err)
	}
	// Timeout, 5xx, transport error or a lost worker: the downstream may or
	// may not have executed it. Never re-send blindly: ask.
	why := "outcome unknown after execute: " + causeOf(err)
	if keyRetentionRanOut(err) {
		why = fmt.Sprintf("outcome unknown after execute: the downstream keeps an Idempotency-Key for %s "+
			"(idempotency_key_retention), and that time ran out before the attempts did; no retry was sent after it",
			in.Downstream.KeyRetention)
	}
	logger.Warn("Execute outcome unknown, reconciling", "Error", err)
	return reconcile(ctx, reconcileCtx, in, why, lastSent)
}

// keyRetentionRanOut reports whether the execute activity stopped because
// its schedule-to-close timeout, the downstream's key retention, ran out:
// during an attempt, or before the next retry (retry state TIMEOUT).
func keyRetentionRanOut(err error) bool {
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) && timeoutErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE {
		return true
	}
	var actErr *temporal.ActivityError
	return errors.As(err, &actErr) && actErr.RetryState() == enumspb.RETRY_STATE_TIMEOUT
}

// interpret decides what a downstream's record of the operation (an execute
// answer or a status answer) means: DONE for a downstream whose 2xx is the
// outcome; with a declared business_state, DONE, FAILED (a definite refusal,
// even a late one), pending, or unknown for a state the catalog does not list.
func interpret(ctx workflow.Context, in operation.Input, record json.RawMessage, resultRef string) verdict {
	business := in.Downstream.Business
	if business == nil {
		return verdict{result: operation.Final{State: operation.StateDone, Result: record, ResultRef: resultRef}}
	}
	_ = changeVersion(ctx, ChangeBusinessState)
	state, phase, reason := business.State.Classify(record)
	switch phase {
	case plan.PhaseSucceeded:
		return verdict{result: operation.Final{State: operation.StateDone, Result: record, ResultRef: resultRef}}
	case plan.PhaseFailed:
		return verdict{result: failed(operation.FailureRefused, reason)}
	case plan.PhasePending:
		return verdict{pending: &pendingAnswer{record: record, at: workflow.Now(ctx)}}
	case plan.PhaseUnknown:
	}
	return verdict{unknown: fmt.Sprintf("the downstream answered a business state %q that the catalog does not list as succeeded, failed or pending", state)}
}

// awaitFinal waits, durably, for the final business state of an operation
// the downstream accepted as pending: it asks the status endpoint on a timer
// (poll_interval, doubling up to plan.MaxReconcilePoll) and takes the
// downstream_state signal of a verified webhook, whichever reports a final
// state first (the other is then ignored). Past completion_deadline a person
// decides. The reported state is kept on the truth record and in the state
// query while it waits.
func awaitFinal(ctx, reconcileCtx, truthCtx workflow.Context, in operation.Input, view *StateView, p *pendingAnswer) (verdict, error) {
	logger := workflow.GetLogger(ctx)
	ds := in.Downstream
	state, _, _ := ds.Business.State.Classify(p.record)
	report := func(st string) error {
		view.DownstreamState = st
		setDetails(ctx, in, *view)
		err := workflow.ExecuteActivity(truthCtx, a.RecordDownstreamState, operation.RecordDownstreamStateInput{
			OperationID: in.OperationID, State: st,
		}).Get(ctx, nil)
		if err != nil {
			return fmt.Errorf("record downstream state %s: %w", in.OperationID, err)
		}
		return nil
	}
	if err := report(state); err != nil {
		return verdict{}, err
	}
	deadline := p.at.Add(ds.Business.CompletionDeadline)
	interval := ds.Business.PollInterval
	events := workflow.GetSignalChannel(ctx, SignalDownstreamState)
	for {
		now := workflow.Now(ctx)
		if !now.Before(deadline) {
			return verdict{unknown: fmt.Sprintf("the downstream still reports %q %s after accepting it (completion_deadline)",
				state, ds.Business.CompletionDeadline)}, nil
		}
		wait := min(interval, deadline.Sub(now))
		interval = min(2*interval, plan.MaxReconcilePoll)

		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		var (
			event    operation.DownstreamEvent
			signaled bool
		)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(events, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &event); signaled = true })
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) {})
		sel.Select(ctx)
		cancelTimer()
		if err := ctx.Err(); err != nil {
			return verdict{}, fmt.Errorf("await final state %s: %w", in.OperationID, err)
		}

		var record json.RawMessage
		switch {
		case signaled:
			logger.Info("Downstream state reported by webhook", "EventType", event.EventType)
			record = event.Record
		case !ds.Reconciles():
			continue // only a webhook can tell
		default:
			var rec operation.ReconcileResult
			if err := workflow.ExecuteActivity(reconcileCtx, a.Reconcile, in).Get(ctx, &rec); err != nil {
				if temporal.IsCanceledError(err) {
					return verdict{}, fmt.Errorf("await final state %s: %w", in.OperationID, err)
				}
				logger.Warn("Status query of a pending operation failed; asking again later", "Error", err)
				continue
			}
			if !rec.Found {
				logger.Warn("The status endpoint does not know a pending operation; asking again later")
				continue
			}
			record = rec.Result
		}
		st, phase, reason := ds.Business.State.Classify(record)
		switch phase {
		case plan.PhaseSucceeded:
			return verdict{result: operation.Final{State: operation.StateDone, Result: record,
				ResultRef: operation.ExtractResultRef(record, ds.ResultRef)}}, nil
		case plan.PhaseFailed:
			return verdict{result: failed(operation.FailureRefused, reason)}, nil
		case plan.PhasePending:
			if st != state {
				state = st
				if err := report(st); err != nil {
					return verdict{}, err
				}
			}
		case plan.PhaseUnknown:
			logger.Warn("Ignoring a business state the catalog does not list", "State", st)
		}
	}
}

// failed is a FAILED result known in the way kind says.
func failed(kind operation.FailureKind, reason string) operation.Final {
	return operation.Final{State: operation.StateFailed, Reason: reason, FailureKind: kind}
}

// reconcile asks the status endpoint, after the settle delay, whether the
// downstream executed the operation last sent at lastSent. A record found is
// DONE. "Not found" proves "not executed" only when it was asked after the
// downstream's processing window and status lag have passed since lastSent
// (a real server may still commit a request its caller gave up on); before
// that the workflow waits on a durable timer and asks again. Without a
// declared window, or when the status endpoint gives no answer, a person
// decides.
func reconcile(ctx, reconcileCtx workflow.Context, in operation.Input, why string, lastSent time.Time) (verdict, error) {
	ds := in.Downstream
	if !ds.Reconciles() {
		return verdict{unknown: why + "; the downstream has no status endpoint"}, nil
	}
	version := changeVersion(ctx, ChangeNotFoundWindow)
	if d := ds.ReconcileDelay; d > 0 {
		if err := workflow.Sleep(ctx, d); err != nil {
			return verdict{}, fmt.Errorf("reconcile %s: %w", in.OperationID, err)
		}
	}
	provesAt := ds.NotFoundProvesAfter(lastSent)
	interval := ds.ReconcileDelay
	for {
		askedAt := workflow.Now(ctx)
		var rec operation.ReconcileResult
		if err := workflow.ExecuteActivity(reconcileCtx, a.Reconcile, in).Get(ctx, &rec); err != nil {
			if temporal.IsCanceledError(err) {
				return verdict{}, fmt.Errorf("reconcile %s: %w", in.OperationID, err)
			}
			return verdict{unknown: why + "; the status endpoint gave no answer: " + causeOf(err)}, nil
		}
		if rec.Found {
			return interpret(ctx, in, rec.Result, rec.ResultRef), nil
		}
		switch {
		case version == workflow.DefaultVersion:
			// Recorded before the processing window existed.
			return verdict{result: failed(operation.FailureNotExecuted, operation.ReasonNotExecuted)}, nil
		case !ds.ProvesNotExecuted():
			return verdict{unknown: why + "; the status endpoint has no record of it, but the downstream declares no " +
				"max_processing_time, so it may still commit it later: not found proves nothing"}, nil
		case !askedAt.Before(provesAt):
			return verdict{result: failed(operation.FailureNotExecuted, fmt.Sprintf(
				"%s: asked %s after the last send, past its processing window (max_processing_time %s + status_lag %s)",
				operation.ReasonNotExecuted, askedAt.Sub(lastSent).Round(time.Millisecond), ds.MaxProcessingTime, ds.StatusLag))}, nil
		}
		// Too early for "not found" to prove anything: ask again after
		// reconcile_delay, doubling up to plan.MaxReconcilePoll, and once
		// more when the window has passed (never sleeping past it).
		wait := provesAt.Sub(workflow.Now(ctx))
		if interval > 0 && interval < wait {
			wait = interval
		}
		interval = min(2*interval, plan.MaxReconcilePoll)
		if wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return verdict{}, fmt.Errorf("reconcile %s: %w", in.OperationID, err)
			}
		}
	}
}

// resolutionOutcome turns an operator's resolution into the terminal result,
// or says why it is malformed.
func resolutionOutcome(r operation.Resolution, resultRefField string) (operation.Final, error) {
	var out operation.Final
	switch r.Outcome {
	case operation.ResolutionCompleted:
		if len(r.Result) > 0 && !json.Valid(r.Result) {
			return operation.Final{}, errors.New("result is not valid JSON")
		}
		out = operation.Final{State: operation.StateDone, Result: r.Result, ResultRef: operation.ExtractResultRef(r.Result, resultRefField)}
	case operation.ResolutionFailed:
		reason := r.Reason
		if reason == "" {
			reason = "failed: resolved by an operator"
		}
		out = failed(operation.FailureOperator, reason)
	default:
		return operation.Final{}, fmt.Errorf("outcome %q is neither %q nor %q", r.Outcome, operation.ResolutionCompleted, operation.ResolutionFailed)
	}
	out.ResolvedBy, out.ResolutionNote, out.EvidenceURL = r.Operator, r.Note, r.EvidenceURL
	return out, nil
}

// readTerminal answers the outcome the truth already holds.
func readTerminal(ctx, truthCtx workflow.Context, in operation.Input, view *StateView) (operation.Final, error) {
	var claim operation.ClaimResult
	if err := workflow.ExecuteActivity(truthCtx, a.ClaimTruth, in).Get(ctx, &claim); err != nil {
		return operation.Final{}, fmt.Errorf("read truth %s: %w", in.OperationID, err)
	}
	if !claim.State.Terminal() {
		return operation.Final{}, fmt.Errorf("read truth %s: state %s is not terminal", in.OperationID, claim.State)
	}
	if err := transition(ctx, in, view, claim.State, claim.Reason, claim.ResultRef); err != nil {
		return operation.Final{}, err
	}
	return claim.Final, nil
}

// upsertStart sets the search attributes the starter did not (or set
// otherwise), so that every operation is findable by state, scope and subject.
func upsertStart(ctx workflow.Context, in operation.Input) error {
	current := workflow.GetTypedSearchAttributes(ctx)
	var updates []temporal.SearchAttributeUpdate
	for _, kv := range []struct {
		key  temporal.SearchAttributeKeyKeyword
		want string
	}{
		{StateKey, string(operation.StateInFlight)},
		{ScopeKey, in.Scope},
		{SubjectKey, in.Subject},
	} {
		if got, ok := current.GetKeyword(kv.key); !ok || got != kv.want {
			updates = append(updates, kv.key.ValueSet(kv.want))
		}
	}
	if len(updates) == 0 {
		return nil
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		return fmt.Errorf("upsert search attributes %s: %w", in.OperationID, err)
	}
	return nil
}

// transition records a new state: the query view, IdemState and the UI details.
func transition(ctx workflow.Context, in operation.Input, view *StateView, state operation.State, reason, resultRef string) error {
	view.State, view.Reason, view.ResultRef = state, reason, resultRef
	if err := workflow.UpsertTypedSearchAttributes(ctx, StateKey.ValueSet(string(state))); err != nil {
		return fmt.Errorf("upsert %s %s: %w", SearchAttrState, in.OperationID, err)
	}
	setDetails(ctx, in, *view)
	return nil
}

// setDetails shows the summary and the current state in the Web UI.
func setDetails(ctx workflow.Context, in operation.Input, view StateView) {
	summary := in.Summary
	if summary == "" {
		summary = in.Scope
	}
	details := fmt.Sprintf("**%s** — %s", summary, view.State)
	if view.ResultRef != "" {
		details += " (" + view.ResultRef + ")"
	}
	if view.DownstreamState != "" && !view.State.Terminal() {
		details += " — downstream: " + view.DownstreamState
	}
	if view.Reason != "" {
		details += "\n\n" + view.Reason
	}
	if d := view.Decision; d != nil {
		details += fmt.Sprintf("\n\nDecided **%s** by %s at %s (%s)", d.Outcome, d.Operator,
			d.DecidedAt.UTC().Format(time.RFC3339), d.Via)
		if d.Note != "" {
			details += ": " + d.Note
		}
		if d.EvidenceURL != "" {
			details += " — evidence: " + d.EvidenceURL
		}
	}
	for _, r := range view.Refused {
		details += fmt.Sprintf("\n\nRefused %s %s from %s at %s: %s", r.Via, r.Outcome, r.Operator,
			r.At.UTC().Format(time.RFC3339), r.Message)
	}
	workflow.SetCurrentDetails(ctx, details)
}

// isErrType reports whether err carries an application error of type t.
func isErrType(err error, t string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == t
}

// causeOf describes an activity failure by its cause (the application error
// or the timeout), without the activity error's bookkeeping.
func causeOf(err error) string {
	var actErr *temporal.ActivityError
	if errors.As(err, &actErr) {
		if cause := errors.Unwrap(actErr); cause != nil {
			return cause.Error()
		}
	}
	return err.Error()
}

// retryPolicy is the Temporal retry policy of r, never retrying the error
// types nonRetryable.
func retryPolicy(r plan.Retry, nonRetryable ...string) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        r.Initial,
		BackoffCoefficient:     plan.RetryCoefficient,
		MaximumInterval:        r.Max,
		MaximumAttempts:        int32(r.Attempts),
		NonRetryableErrorTypes: nonRetryable,
	}
}
