package gateway

import (
	"errors"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

// This file is the whole confirm as one decision, in the shape of
// idemstore/combined's decide*.go: Confirm (confirm.go) asks the call that
// decideConfirm names, adds its answer, classified by the *AnswerOf
// functions below, to the facts, and asks again until the decision is
// made; then it does what the decision names, and nothing else decides.
// The facts, in the order they are asked: the caller's scope, the
// subject's rate, the params,
// the fingerprint's verdict (with the amnesia guard's acknowledgement),
// the approval, the standing mandate that may stand in for a missing one,
// the claim (with the budget, reserved in the truth's
// statement), the workflow's existence and the takeover of an orphan, the
// start, and the wait for the outcome. TestDecideConfirm covers every path,
// checked against a walk of every answer of every call.

// confirmAsk is the next call of a confirm.
type confirmAsk int

const (
	// confirmDecided: confirmPlan holds the action.
	confirmDecided confirmAsk = iota
	// confirmAskScope: whether the caller's token was granted the scope
	// the action needs.
	confirmAskScope
	// confirmAskRate: the subject's confirm rate (the limiter).
	confirmAskRate
	// confirmAskBind: the params against the action's catalog entry, and
	// what the operation spends of the subject's budgets.
	confirmAskBind
	// confirmAskVerify: the fingerprint against the caller, the action and
	// the bound params.
	confirmAskVerify
	// confirmAskApproval: the stored approval of the operation (its
	// fingerprint asks for one and is before its exp).
	confirmAskApproval
	// confirmAskMandate: the subject's standing mandate that may cover the
	// operation instead of the approval the gate found missing (the one the
	// body names, or the one the gateway picks).
	confirmAskMandate
	// confirmAskClaim: the store's Acquire (a fingerprint before its exp).
	confirmAskClaim
	// confirmAskRecord: the store's Outcome (a fingerprint at or past its exp:
	// only a replay of what it started, never a new start).
	confirmAskRecord
	// confirmAskWorkflow: the engine's Describe of the operation (a claim
	// past the grace period: is it an orphan?).
	confirmAskWorkflow
	// confirmAskTakeover: the store's Takeover of the orphaned claim from
	// its holder to this confirm's owner.
	confirmAskTakeover
	// confirmAskStart: the engine's Start of the operation's workflow under
	// confirmPlan.Ownership.
	confirmAskStart
	// confirmAskStartCheck: after a failed start, the engine's Describe: a
	// start that failed behind a timeout may have succeeded.
	confirmAskStartCheck
	// confirmAskRelease: the store's Release of this confirm's claim, whose
	// workflow never started.
	confirmAskRelease
	// confirmAskAwait: the wait for the outcome (confirmPlan.Wait).
	confirmAskAwait
)

// scopeAnswer is whether the caller may act on the action.
type scopeAnswer struct {
	// Checked says the caller's scopes were read.
	Checked bool
	// Missing is the scope the caller's token lacks (empty: none lacking).
	Missing string
}

// rateKind is what the limiter said of the subject's confirm rate.
type rateKind int

const (
	// rateNotAsked: the limiter was not asked yet.
	rateNotAsked rateKind = iota
	// rateAllowed: the confirm fits the rate, or none applies, or the
	// limiter could not answer (rates fail open; budgets never do).
	rateAllowed
	// rateLimited: too many confirms; come back after RetryAfter.
	rateLimited
)

// rateAnswer is the limiter's answer.
type rateAnswer struct {
	// Kind is what the limiter said.
	Kind rateKind
	// RetryAfter is the limiter's wait (rateLimited).
	RetryAfter time.Duration
}

// bindKind is what the catalog said of the params.
type bindKind int

const (
	// bindNotAsked: the params were not bound yet.
	bindNotAsked bindKind = iota
	// bindOK: the params fit the action; the operation's charge is known.
	bindOK
	// bindInvalid: the params break the action's rules (Problems).
	bindInvalid
	// bindBroken: the bound params could not be charged (a bug: Err).
	bindBroken
)

// bindAnswer is the params' binding.
type bindAnswer struct {
	// Kind is what the catalog said.
	Kind bindKind
	// Problems are the params' problems (bindInvalid).
	Problems []params.FieldProblem
	// Err is why the charge failed (bindBroken).
	Err error
}

// verifyKind is the fingerprint's verdict.
type verifyKind int

const (
	// verifyNotAsked: the fingerprint was not verified yet.
	verifyNotAsked verifyKind = iota
	// verifyValid: this caller's fingerprint of this action and these
	// params, signed by the gateway (before or past its exp: Expired).
	verifyValid
	// verifyInvalid: not a fingerprint, or a bad signature.
	verifyInvalid
	// verifySubject: issued to another subject.
	verifySubject
	// verifyScope: issued for another action.
	verifyScope
	// verifyParams: issued for other bound params.
	verifyParams
	// verifyBroken: the verification itself failed (a bug: Err).
	verifyBroken
)

// verifyAnswer is the fingerprint's verdict and what a valid one says.
type verifyAnswer struct {
	// Kind is the verdict.
	Kind verifyKind
	// Expired: a valid fingerprint at or past its exp.
	Expired bool
	// Unacknowledged: a valid fingerprint of the amnesia guard whose
	// recent operation the confirm did not acknowledge.
	Unacknowledged bool
	// AsksApproval: a valid fingerprint whose action's policy asked a
	// person to approve the operation.
	AsksApproval bool
	// Err is the verification's error (verifyBroken).
	Err error
}

// approvalAnswer is the approval gate's verdict over the stored approval.
type approvalAnswer struct {
	// Asked says the store was asked.
	Asked bool
	// Gate is the gate's decision (approval.Gate), when Err is nil.
	Gate approval.GateDecision
	// Record is the stored approval (nil: none stored).
	Record *approval.Record
	// Err is the store's error.
	Err error
}

// mandateKind is what the gateway found of a standing mandate for an
// operation whose approval is missing.
type mandateKind int

const (
	// mandateNotAsked: no mandate was looked for.
	mandateNotAsked mandateKind = iota
	// mandateNone: the action allows no mandate, or the confirm names none
	// and the subject has none for the action and currency: the ordinary
	// approval is asked.
	mandateNone
	// mandateFound: the confirm claims under Use; the truth checks it and
	// reserves it in the claim's statement, or refuses it.
	mandateFound
	// mandateRefused: the mandate the confirm names cannot cover the
	// operation (Reason), known before any claim: the ordinary approval
	// is asked, carrying it.
	mandateRefused
	// mandateFailed: the mandates could not be read (Err).
	mandateFailed
)

// mandateAnswer is the standing mandate found for the operation.
type mandateAnswer struct {
	// Kind is what was found.
	Kind mandateKind
	// Use is what the claim asks of the mandate (mandateFound).
	Use *mandate.Use
	// Reason is why the named mandate does not cover it (mandateRefused).
	Reason approval.Reason
	// Err is the store's error (mandateFailed).
	Err error
}

// claimKind is what the store said about the operation, classified.
type claimKind int

const (
	// claimNotAsked: neither Acquire nor Get was asked yet.
	claimNotAsked claimKind = iota
	// claimAcquired: this confirm's claim (Acquire's ACQUIRED).
	claimAcquired
	// claimHeld: another owner's claim in flight, claimed inside the grace
	// period or at an unknown time: its workflow runs, or is about to.
	claimHeld
	// claimHeldPastGrace: another owner's claim in flight, claimed longer
	// than the grace period ago: an orphan if no workflow of it exists.
	claimHeldPastGrace
	// claimReview: the truth holds the operation NEEDS_REVIEW.
	claimReview
	// claimFinished: the operation is DONE or FAILED: its first outcome.
	claimFinished
	// claimMismatch: the store holds the operation with another param_hash.
	claimMismatch
	// claimAbsent: the store has no record (Get of an expired fingerprint).
	claimAbsent
	// claimFailed: the store could not answer.
	claimFailed
	// claimOverBudget: the truth refused the claim over the subject's
	// budget (Usage says what its windows hold); nothing was claimed.
	claimOverBudget
	// claimMandateRefused: the truth refused the claim because its mandate
	// does not cover it (MandateRefusal says why); nothing was claimed.
	claimMandateRefused
)

// claimAnswer is the store's answer about the operation.
type claimAnswer struct {
	// Kind is what the store said.
	Kind claimKind
	// Ownership is this confirm's ownership of what it claimed (claimAcquired).
	Ownership operation.Ownership
	// Holder is the owner of another's claim (claimHeld, claimHeldPastGrace).
	Holder string
	// ClaimedAt is when the holder claimed it (claimHeld, claimHeldPastGrace).
	ClaimedAt time.Time
	// Client is the acting client of the holder's claim (claimHeld,
	// claimHeldPastGrace; empty when its token named none).
	Client string
	// Record is the stored record (claimReview, claimFinished).
	Record idemstore.Record
	// Err is the store's error (claimFailed).
	Err error
	// Usage is what the charge's windows held (claimOverBudget).
	Usage []operation.WindowUsage
	// MandateRefusal is why the mandate does not cover the claim
	// (claimMandateRefused).
	MandateRefusal approval.Reason
}

// workflowKind is what the engine said about the operation's workflow.
type workflowKind int

const (
	// workflowNotAsked: the engine was not asked.
	workflowNotAsked workflowKind = iota
	// workflowExists: a workflow of the operation exists (running or closed).
	workflowExists
	// workflowAbsent: no workflow of the operation exists.
	workflowAbsent
	// workflowUnknown: the engine could not answer.
	workflowUnknown
)

// workflowAnswer is the engine's answer to Describe.
type workflowAnswer struct {
	// Kind is what the engine said.
	Kind workflowKind
	// Err is the engine's error (workflowUnknown).
	Err error
}

// takeoverKind is what the store's Takeover did.
type takeoverKind int

const (
	// takeoverNotAsked: no takeover was tried.
	takeoverNotAsked takeoverKind = iota
	// takeoverDone: the claim is this confirm's now.
	takeoverDone
	// takeoverLost: another owner holds the claim now (ErrNotOwner): it
	// took the orphan over first, or the holder moved on.
	takeoverLost
	// takeoverFailed: the store could not answer.
	takeoverFailed
)

// takeoverAnswer is the store's answer to Takeover.
type takeoverAnswer struct {
	// Kind is what the store did.
	Kind takeoverKind
	// Err is the store's error (takeoverFailed).
	Err error
}

// startKind is what the engine's Start did.
type startKind int

const (
	// startNotAsked: no start was tried.
	startNotAsked startKind = iota
	// startStarted: this confirm started the workflow (Run names its run).
	startStarted
	// startAttached: a workflow of the operation existed already: an
	// earlier call's, whose outcome is a replay.
	startAttached
	// startFailed: the engine refused or could not be reached (Err); the
	// workflow may or may not exist.
	startFailed
)

// startAnswer is the engine's answer to Start.
type startAnswer struct {
	// Kind is what the engine did.
	Kind startKind
	// Run is the started run (startStarted).
	Run string
	// Err is the engine's error (startFailed).
	Err error
}

// releaseAnswer is the store's answer to Release (only logged: the answer
// is temporarily_unavailable either way).
type releaseAnswer struct {
	// Asked says the claim's release was tried.
	Asked bool
	// Err is the store's error.
	Err error
}

// awaitKind is how the wait for the outcome ended.
type awaitKind int

const (
	// awaitNotAsked: no wait yet.
	awaitNotAsked awaitKind = iota
	// awaitOutcome: the terminal outcome (Final), from the feed or the
	// workflow.
	awaitOutcome
	// awaitRecord: no outcome within the wait; the store's record (Record).
	awaitRecord
	// awaitNothing: no outcome within the wait and no record read, or the
	// watchers were all busy.
	awaitNothing
)

// awaitAnswer is what the wait learnt.
type awaitAnswer struct {
	// Kind is how it ended.
	Kind awaitKind
	// Final is the terminal outcome (awaitOutcome).
	Final operation.Final
	// Record is the store's record (awaitRecord).
	Record idemstore.Record
}

// confirmFacts are what a confirm knows so far.
type confirmFacts struct {
	// Owner is this confirm's owner (gateway instance and request).
	Owner string
	// Client is the caller's acting client: what a claim this confirm
	// takes names (empty when its token named none).
	Client string
	// Scope is whether the caller's token was granted the action's scope.
	Scope scopeAnswer
	// Rate is the limiter's answer.
	Rate rateAnswer
	// Bind is the params' binding.
	Bind bindAnswer
	// Verify is the fingerprint's verdict.
	Verify verifyAnswer
	// Approval is the approval gate's verdict.
	Approval approvalAnswer
	// Mandate is the standing mandate found instead of a missing approval.
	Mandate mandateAnswer
	// Claim is the store's answer about the operation (Acquire or Get).
	Claim claimAnswer
	// Workflow is the engine's answer about the operation's workflow.
	Workflow workflowAnswer
	// Takeover is the store's answer to the takeover.
	Takeover takeoverAnswer
	// Start is the engine's answer to the start.
	Start startAnswer
	// StartCheck is the engine's answer about the workflow after a failed
	// start.
	StartCheck workflowAnswer
	// Release is the store's answer to the release after a failed start.
	Release releaseAnswer
	// Await is what the wait for the outcome learnt.
	Await awaitAnswer
}

// confirmAction is what the gateway does once the decision is made.
type confirmAction int

const (
	// actAsk: no action yet, confirmPlan.Ask names the next call.
	actAsk confirmAction = iota
	// actInsufficientScope: insufficient_scope naming the scope
	// (confirmPlan.Scope); nothing is read or written.
	actInsufficientScope
	// actRateLimited: rate_limited, with the limiter's wait.
	actRateLimited
	// actInvalidParams: invalid_params, with the params' problems.
	actInvalidParams
	// actFingerprintInvalid: fingerprint_invalid, a security event.
	actFingerprintInvalid
	// actSubjectMismatch: subject_mismatch, a security event.
	actSubjectMismatch
	// actScopeMismatch: scope_mismatch, a security event.
	actScopeMismatch
	// actParamMismatch: param_mismatch (the fingerprint's), a security event.
	actParamMismatch
	// actRepeatUnacknowledged: repeat_unacknowledged, nothing runs.
	actRepeatUnacknowledged
	// actApprovalRequired: approval_required, the request recorded PENDING
	// for operators (confirmPlan.Approval), carrying why the mandate did
	// not cover it (confirmPlan.MandateRefusal, when one was tried).
	actApprovalRequired
	// actApprovalDeclined: approval_declined (confirmPlan.Approval).
	actApprovalDeclined
	// actRefuse: param_mismatch held by the store, a security event.
	actRefuse
	// actExpired: fingerprint_expired, nothing was consumed.
	actExpired
	// actUnavailable: the store could not answer (confirmPlan.Err).
	actUnavailable
	// actEngineUnavailable: the workflow could not be started
	// (confirmPlan.Err); its claim was given back when no workflow exists.
	actEngineUnavailable
	// actOverBudget: limit_exceeded, decided over confirmPlan.Usage;
	// nothing was claimed.
	actOverBudget
	// actReview: answer needs_manual_review (confirmPlan.Record).
	actReview
	// actReplay: answer the first outcome (confirmPlan.Record), replayed.
	actReplay
	// actAnswerOutcome: answer the waited-for outcome (confirmPlan.Final),
	// after writing it to the fast path as confirmPlan.Wait.Refill says.
	actAnswerOutcome
	// actAnswerRecord: answer the store's record after the wait
	// (confirmPlan.Record).
	actAnswerRecord
	// actInProgress: in_progress: started, outcome not known yet
	// (confirmPlan.Wait names the claim's client).
	actInProgress
	// actInternal: a bug (confirmPlan.Err): internal_error.
	actInternal
)

// waitPlan is what a wait for the outcome listens to and what it answers.
type waitPlan struct {
	// Run is the run the start named (empty: the current one).
	Run string
	// Feed: listen to the outcome feed, watched before this confirm's start.
	Feed bool
	// Refill is who writes the outcome to the fast path, under whose claim.
	Refill fastPathRefill
	// Replay: the outcome is an earlier call's (already_completed ...).
	Replay bool
	// Client is the acting client of the claim the operation runs under
	// (this confirm's, or the holder's it attached to): what the answer
	// and its receipt name.
	Client string
}

// fastPathRefill is who writes an outcome the gateway waited for to the
// fast path, and under which claim's owner.
type fastPathRefill struct {
	// By is the writer: RefillByGateway makes the gateway refill it.
	By operation.Refiller
	// Owner is the claim's owner the gateway refills under.
	Owner string
}

// confirmPlan is the next call of a confirm, or what it does.
type confirmPlan struct {
	// Ask is the next call; confirmDecided when Action is set.
	Ask confirmAsk
	// Action is what the gateway does (confirmDecided).
	Action confirmAction
	// Ownership is what the workflow runs under (confirmAskStart).
	Ownership operation.Ownership
	// Client is the acting client the started workflow's input names
	// (confirmAskStart): the claim's.
	Client string
	// Holder is the claim's owner (confirmAskTakeover, and the wait on
	// another's workflow).
	Holder string
	// Wait is what the wait listens to (confirmAskAwait), and how its
	// outcome is answered (actAnswerOutcome, actAnswerRecord, actInProgress).
	Wait waitPlan
	// Record is the stored record to answer (actReplay, actReview,
	// actAnswerRecord).
	Record idemstore.Record
	// Final is the waited-for outcome (actAnswerOutcome).
	Final operation.Final
	// Approval is the approval gate's answer (actApprovalRequired,
	// actApprovalDeclined).
	Approval approvalAnswer
	// Problems are the params' problems (actInvalidParams).
	Problems []params.FieldProblem
	// Scope is the scope the caller lacks (actInsufficientScope).
	Scope string
	// RetryAfter is the limiter's wait (actRateLimited).
	RetryAfter time.Duration
	// Err is the error the action answers or logs (actUnavailable,
	// actEngineUnavailable, actInternal).
	Err error
	// Ignored is the engine's error that is only logged: the gateway waits
	// on the holder's workflow instead of taking the claim over.
	Ignored error
	// Usage is what the charge's windows held (actOverBudget).
	Usage []operation.WindowUsage
	// MandateRefusal is why the standing mandate did not cover the
	// operation (actApprovalRequired; empty: none was tried).
	MandateRefusal approval.Reason
}

// decideConfirm says what a confirm asks next, or what it does. It does no I/O.
func decideConfirm(f confirmFacts) confirmPlan {
	if p, done := decideAdmission(f); done {
		return p
	}
	c := f.Claim
	switch c.Kind {
	case claimNotAsked:
		if f.Verify.Expired {
			return confirmPlan{Ask: confirmAskRecord}
		}
		return confirmPlan{Ask: confirmAskClaim}
	case claimAcquired:
		return decideStart(f, c.Ownership, f.Client)
	case claimHeld:
		return decideWait(f, attachTo(c), nil)
	case claimHeldPastGrace:
		return decideOrphan(f)
	case claimReview:
		return decided(confirmPlan{Action: actReview, Record: c.Record})
	case claimFinished:
		return decided(confirmPlan{Action: actReplay, Record: c.Record})
	case claimMismatch:
		return decided(confirmPlan{Action: actRefuse})
	case claimAbsent:
		return decided(confirmPlan{Action: actExpired})
	case claimOverBudget:
		return decided(confirmPlan{Action: actOverBudget, Usage: c.Usage})
	case claimMandateRefused:
		// Outside its mandate: nothing was claimed or reserved; the
		// ordinary approval is asked, carrying the reason.
		if f.Mandate.Kind != mandateFound {
			return decided(confirmPlan{Action: actInternal, Err: errors.New("claim refused under a mandate the confirm did not name: " +
				string(c.MandateRefusal))})
		}
		return decided(confirmPlan{Action: actApprovalRequired, Approval: f.Approval, MandateRefusal: c.MandateRefusal})
	case claimFailed:
	}
	return decided(confirmPlan{Action: actUnavailable, Err: c.Err})
}

// decideAdmission decides what comes before a claim: the caller's scope,
// the rate, the params, the fingerprint, the amnesia guard and the
// approval. It reports false when the confirm may claim.
func decideAdmission(f confirmFacts) (confirmPlan, bool) {
	switch {
	case !f.Scope.Checked:
		return confirmPlan{Ask: confirmAskScope}, true
	case f.Scope.Missing != "":
		return decided(confirmPlan{Action: actInsufficientScope, Scope: f.Scope.Missing}), true
	}
	switch f.Rate.Kind {
	case rateNotAsked:
		return confirmPlan{Ask: confirmAskRate}, true
	case rateLimited:
		return decided(confirmPlan{Action: actRateLimited, RetryAfter: f.Rate.RetryAfter}), true
	case rateAllowed:
	}
	switch f.Bind.Kind {
	case bindNotAsked:
		return confirmPlan{Ask: confirmAskBind}, true
	case bindInvalid:
		return decided(confirmPlan{Action: actInvalidParams, Problems: f.Bind.Problems}), true
	case bindBroken:
		return decided(confirmPlan{Action: actInternal, Err: f.Bind.Err}), true
	case bindOK:
	}
	v := f.Verify
	switch v.Kind {
	case verifyNotAsked:
		return confirmPlan{Ask: confirmAskVerify}, true
	case verifyInvalid:
		return decided(confirmPlan{Action: actFingerprintInvalid}), true
	case verifySubject:
		return decided(confirmPlan{Action: actSubjectMismatch}), true
	case verifyScope:
		return decided(confirmPlan{Action: actScopeMismatch}), true
	case verifyParams:
		return decided(confirmPlan{Action: actParamMismatch}), true
	case verifyBroken:
		return decided(confirmPlan{Action: actInternal, Err: v.Err}), true
	case verifyValid:
	}
	if v.Unacknowledged {
		return decided(confirmPlan{Action: actRepeatUnacknowledged}), true
	}
	// Past its exp a fingerprint only replays what it started: no
	// approval is asked for it.
	if v.Expired || !v.AsksApproval {
		return confirmPlan{}, false
	}
	a := f.Approval
	switch {
	case !a.Asked:
		return confirmPlan{Ask: confirmAskApproval}, true
	case a.Err != nil:
		return decided(confirmPlan{Action: actUnavailable, Err: a.Err}), true
	}
	switch a.Gate.Verdict {
	case approval.VerdictNotRequired, approval.VerdictApproved:
		return confirmPlan{}, false
	case approval.VerdictDeclined:
		return decided(confirmPlan{Action: actApprovalDeclined, Approval: a}), true
	case approval.VerdictRequired:
	}
	// Missing: a standing mandate of the subject may stand in for it; the
	// claim's statement reserves it, or refuses and the approval is asked.
	m := f.Mandate
	switch m.Kind {
	case mandateNotAsked:
		return confirmPlan{Ask: confirmAskMandate}, true
	case mandateFound:
		return confirmPlan{}, false
	case mandateFailed:
		return decided(confirmPlan{Action: actUnavailable, Err: m.Err}), true
	case mandateRefused:
		return decided(confirmPlan{Action: actApprovalRequired, Approval: a, MandateRefusal: m.Reason}), true
	case mandateNone:
	}
	return decided(confirmPlan{Action: actApprovalRequired, Approval: a}), true
}

// decideOrphan decides about a claim held past the grace period: its owner
// died between the claim and the start (with or without a truth record:
// the PostgreSQL-only path writes one at claim time) when no workflow of it
// exists. Only workflows call the downstream, so nothing ran yet, and
// taking the claim over cannot execute anything twice; the new workflow
// claims the truth itself (operation.Takeover), never counting it as
// claimed.
func decideOrphan(f confirmFacts) confirmPlan {
	c := f.Claim
	switch f.Workflow.Kind {
	case workflowNotAsked:
		return confirmPlan{Ask: confirmAskWorkflow}
	case workflowExists:
		return decideWait(f, attachTo(c), nil)
	case workflowUnknown:
		return decideWait(f, attachTo(c), f.Workflow.Err)
	case workflowAbsent:
	}
	switch f.Takeover.Kind {
	case takeoverNotAsked:
		return confirmPlan{Ask: confirmAskTakeover, Holder: c.Holder}
	case takeoverDone:
		// The orphan's claim stays the one that acted: its client is kept
		// with it (the takeover moves only the owner).
		return decideStart(f, operation.Takeover(f.Owner), c.Client)
	case takeoverLost:
		// Someone else took it over first: wait on theirs.
		return decideWait(f, attachTo(c), nil)
	case takeoverFailed:
	}
	return decided(confirmPlan{Action: actUnavailable, Err: f.Takeover.Err})
}

// decideStart decides the start of the workflow under own (this confirm's
// claim, or the orphan it took over), whose acting client is client, and
// what follows it. A start that
// found the workflow started is an earlier call's: its outcome is a replay,
// and the gateway refills the fast path under this confirm's claim, since
// that workflow finalizes it under its own. A start that failed gives the
// claim back only when no workflow of it exists (a start that failed
// behind a timeout may have succeeded): then nothing was consumed and the
// same fingerprint can be sent again at once; otherwise the claim stays
// and a retry attaches to the workflow or takes the orphan over.
func decideStart(f confirmFacts, own operation.Ownership, client string) confirmPlan {
	s := f.Start
	switch s.Kind {
	case startNotAsked:
		return confirmPlan{Ask: confirmAskStart, Ownership: own, Client: client}
	case startStarted:
		return decideWait(f, waitPlan{Run: s.Run, Feed: true,
			Refill: fastPathRefill{By: own.Refiller(), Owner: own.Owner()}, Client: client}, nil)
	case startAttached:
		return decideWait(f, waitPlan{Refill: fastPathRefill{By: operation.RefillByGateway, Owner: own.Owner()},
			Replay: true, Client: client}, nil)
	case startFailed:
	}
	switch f.StartCheck.Kind {
	case workflowNotAsked:
		return confirmPlan{Ask: confirmAskStartCheck}
	case workflowAbsent:
		if !f.Release.Asked {
			return confirmPlan{Ask: confirmAskRelease}
		}
	case workflowExists, workflowUnknown:
	}
	return decided(confirmPlan{Action: actEngineUnavailable, Err: s.Err})
}

// attachTo is the wait on the workflow of another owner's claim c: its
// outcome is a replay, refilled by the gateway under the holder's claim,
// and names the holder's acting client (the client that claimed it, not
// this caller's).
func attachTo(c claimAnswer) waitPlan {
	return waitPlan{Refill: fastPathRefill{By: operation.RefillByGateway, Owner: c.Holder}, Replay: true, Client: c.Client}
}

// decideWait waits as w says, then answers what the wait learnt; ignored
// is only logged.
func decideWait(f confirmFacts, w waitPlan, ignored error) confirmPlan {
	a := f.Await
	switch a.Kind {
	case awaitNotAsked:
		return confirmPlan{Ask: confirmAskAwait, Wait: w, Ignored: ignored}
	case awaitOutcome:
		return decided(confirmPlan{Action: actAnswerOutcome, Wait: w, Final: a.Final})
	case awaitRecord:
		return decided(confirmPlan{Action: actAnswerRecord, Wait: w, Record: a.Record})
	case awaitNothing:
	}
	return decided(confirmPlan{Action: actInProgress, Wait: w})
}

// decided marks p as the decision.
func decided(p confirmPlan) confirmPlan {
	p.Ask = confirmDecided
	return p
}

// held classifies another owner's claim of the operation, rec (its
// owner, claim time and acting client): past the grace period only when
// its claim time is known.
func held(rec idemstore.Record, now time.Time, grace time.Duration) claimAnswer {
	kind := claimHeld
	if !rec.ClaimedAt.IsZero() && now.Sub(rec.ClaimedAt) >= grace {
		kind = claimHeldPastGrace
	}
	return claimAnswer{Kind: kind, Holder: rec.Owner, ClaimedAt: rec.ClaimedAt, Client: rec.ActingClient}
}

// verifyAnswerOf classifies the keyring's verification of a fingerprint p
// (err), its exp against now, and the amnesia guard's acknowledgement ack.
func verifyAnswerOf(p fingerprint.Payload, err error, now time.Time, ack string) verifyAnswer {
	switch {
	case errors.Is(err, fingerprint.ErrInvalid):
		return verifyAnswer{Kind: verifyInvalid}
	case errors.Is(err, fingerprint.ErrSubjectMismatch):
		return verifyAnswer{Kind: verifySubject}
	case errors.Is(err, fingerprint.ErrScopeMismatch):
		return verifyAnswer{Kind: verifyScope}
	case errors.Is(err, fingerprint.ErrParamMismatch):
		return verifyAnswer{Kind: verifyParams}
	case err != nil:
		return verifyAnswer{Kind: verifyBroken, Err: err}
	}
	return verifyAnswer{Kind: verifyValid, Expired: now.Unix() >= p.Exp,
		Unacknowledged: p.RecentOperation != "" && ack != p.RecentOperation, AsksApproval: p.Approval != ""}
}

// approvalAnswerOf classifies the approval store's answer (the stored
// record, or err) through the gate, for the operation of fingerprint p at
// now.
func approvalAnswerOf(p fingerprint.Payload, rec approval.Record, err error, now time.Time) approvalAnswer {
	a := approvalAnswer{Asked: true}
	switch {
	case err == nil:
		a.Record = &rec
	case !errors.Is(err, approval.ErrNotFound):
		a.Err = err
		return a
	}
	a.Gate = approval.Gate(approval.Expect{Required: p.Approval != "", Subject: p.Subject, Scope: p.Scope,
		ParamHash: p.ParamHash}, a.Record, now)
	return a
}

// claimAnswerOf classifies Acquire's answer to the claim of owner at now.
// An ACQUIRED whose truth record is another owner's (a store whose fast
// path lost the claim of a running operation) is that owner's claim.
func claimAnswerOf(owner string, d idemstore.ClaimDecision, err error, now time.Time, grace time.Duration) claimAnswer {
	if err != nil {
		return claimAnswer{Kind: claimFailed, Err: err}
	}
	switch d.Outcome {
	case idemstore.OutcomeAcquired:
		if d.TruthFound && d.Record.Owner != "" && d.Record.Owner != owner {
			return recordAnswerOf(d.Record, nil, now, grace)
		}
		return claimAnswer{Kind: claimAcquired, Ownership: confirmOwnership(owner, d)}
	case idemstore.OutcomeInFlight:
		if d.Record.State == operation.StateNeedsReview {
			return claimAnswer{Kind: claimReview, Record: d.Record}
		}
		rec := d.Record
		rec.Owner, rec.ClaimedAt = d.Owner, d.ClaimedAt
		return held(rec, now, grace)
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		return claimAnswer{Kind: claimFinished, Record: d.Record}
	case idemstore.OutcomeParamMismatch:
		return claimAnswer{Kind: claimMismatch}
	case idemstore.OutcomeLimitExceeded:
		return claimAnswer{Kind: claimOverBudget, Usage: d.Usage}
	case idemstore.OutcomeMandateRefused:
		return claimAnswer{Kind: claimMandateRefused, MandateRefusal: d.MandateRefusal}
	}
	return claimAnswer{Kind: claimFailed, Err: errors.New("unknown claim outcome " + string(d.Outcome))}
}

// recordAnswerOf classifies Get's answer about the operation at now (a
// fingerprint past its exp).
func recordAnswerOf(rec idemstore.Record, err error, now time.Time, grace time.Duration) claimAnswer {
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return claimAnswer{Kind: claimAbsent}
	case err != nil:
		return claimAnswer{Kind: claimFailed, Err: err}
	}
	switch rec.State {
	case operation.StateDone, operation.StateFailed:
		return claimAnswer{Kind: claimFinished, Record: rec}
	case operation.StateNeedsReview:
		return claimAnswer{Kind: claimReview, Record: rec}
	case operation.StateInFlight:
	}
	// Claimed before exp and still in flight (or a state this version does
	// not know): the same handling as any in-flight claim, orphan takeover
	// included.
	return held(rec, now, grace)
}

// workflowAnswerOf classifies the engine's Describe.
func workflowAnswerOf(err error) workflowAnswer {
	switch {
	case err == nil:
		return workflowAnswer{Kind: workflowExists}
	case errors.Is(err, ErrNoWorkflow):
		return workflowAnswer{Kind: workflowAbsent}
	}
	return workflowAnswer{Kind: workflowUnknown, Err: err}
}

// takeoverAnswerOf classifies Takeover's error.
func takeoverAnswerOf(err error) takeoverAnswer {
	switch {
	case err == nil:
		return takeoverAnswer{Kind: takeoverDone}
	case errors.Is(err, idemstore.ErrNotOwner):
		return takeoverAnswer{Kind: takeoverLost}
	}
	return takeoverAnswer{Kind: takeoverFailed, Err: err}
}

// startAnswerOf classifies the engine's Start.
func startAnswerOf(run string, err error) startAnswer {
	switch {
	case err == nil:
		return startAnswer{Kind: startStarted, Run: run}
	case errors.Is(err, ErrAlreadyStarted):
		return startAnswer{Kind: startAttached}
	}
	return startAnswer{Kind: startFailed, Err: err}
}

// confirmOwnership is the ownership of a workflow started under the claim
// d, which the confirm of owner took: the truth is counted as claimed only
// when d is ACQUIRED by owner and says that the truth holds the record as
// owner's (the combined store's claim, TruthFound); any other decision
// leaves the truth to the workflow's ClaimTruth.
func confirmOwnership(owner string, d idemstore.ClaimDecision) operation.Ownership {
	claimed := d.Outcome == idemstore.OutcomeAcquired && d.Owner == owner && d.TruthFound &&
		(d.Record.Owner == "" || d.Record.Owner == owner)
	return operation.ConfirmClaim(owner, claimed, d.ClaimedAt)
}
