package api

import (
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// This file is the confirm's decision over stored state, in the shape of
// idemstore/combined's decide*.go: confirm (confirm.go) asks the call that
// decideConfirm names, adds its answer, classified by claimAnswerOf,
// recordAnswerOf, workflowAnswerOf or takeoverAnswerOf, to the facts, and
// asks again until the decision is made; then it does what the decision
// names, and nothing else reads the store's answers. TestDecideConfirm
// covers every path, checked against a walk of every answer of every call.

// confirmAsk is the next call of a confirm.
type confirmAsk int

const (
	// confirmDecided: confirmPlan holds the action.
	confirmDecided confirmAsk = iota
	// confirmAskClaim: the store's Acquire (a fingerprint before its exp).
	confirmAskClaim
	// confirmAskRecord: the store's Outcome (a fingerprint at or past its exp:
	// only a replay of what it started, never a new start).
	confirmAskRecord
	// confirmAskWorkflow: Temporal's DescribeWorkflowExecution of the
	// operation (a claim past the grace period: is it an orphan?).
	confirmAskWorkflow
	// confirmAskTakeover: the store's Takeover of the orphaned claim from
	// its holder to this confirm's owner.
	confirmAskTakeover
)

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
	// than the grace period ago: an orphan if Temporal has no workflow of it.
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
	// Record is the stored record (claimReview, claimFinished).
	Record idemstore.Record
	// Err is the store's error (claimFailed).
	Err error
	// Usage is what the charge's windows held (claimOverBudget).
	Usage []idemstore.WindowUsage
}

// workflowKind is what Temporal said about the operation's workflow.
type workflowKind int

const (
	// workflowNotAsked: Temporal was not asked.
	workflowNotAsked workflowKind = iota
	// workflowExists: a workflow of the operation exists (running or closed).
	workflowExists
	// workflowAbsent: Temporal has no workflow of the operation.
	workflowAbsent
	// workflowUnknown: Temporal could not answer.
	workflowUnknown
)

// workflowAnswer is Temporal's answer to DescribeWorkflowExecution.
type workflowAnswer struct {
	// Kind is what Temporal said.
	Kind workflowKind
	// Err is Temporal's error (workflowUnknown).
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

// confirmFacts are what a confirm knows so far.
type confirmFacts struct {
	// Owner is this confirm's owner (gateway instance and request).
	Owner string
	// Expired means the fingerprint is at or past its exp.
	Expired bool
	// Claim is the store's answer about the operation (Acquire or Get).
	Claim claimAnswer
	// Workflow is Temporal's answer about the operation's workflow.
	Workflow workflowAnswer
	// Takeover is the store's answer to the takeover.
	Takeover takeoverAnswer
}

// confirmAction is what the gateway does once the decision is made.
type confirmAction int

const (
	// actAsk: no action yet, confirmPlan.Ask names the next call.
	actAsk confirmAction = iota
	// actStart: start the workflow under confirmPlan.Ownership (or attach
	// to the one of its ID) and wait a short budget for its outcome.
	actStart
	// actTakeOver: the orphaned claim is this confirm's now: start the
	// workflow under confirmPlan.Ownership (operation.Takeover: the
	// workflow claims the truth) and wait for its outcome.
	actTakeOver
	// actAttach: wait a short budget on the workflow of the claim's holder
	// (confirmPlan.Holder, under whose claim the fast path is refilled).
	actAttach
	// actReplay: answer the first outcome (confirmPlan.Record), replayed.
	actReplay
	// actReview: answer needs_manual_review (confirmPlan.Record).
	actReview
	// actRefuse: param_mismatch, a security event.
	actRefuse
	// actExpired: fingerprint_expired, nothing was consumed.
	actExpired
	// actUnavailable: the store could not answer (confirmPlan.Err).
	actUnavailable
	// actOverBudget: limit_exceeded, decided over confirmPlan.Usage;
	// nothing was claimed.
	actOverBudget
)

// confirmPlan is the next call of a confirm, or what it does.
type confirmPlan struct {
	// Ask is the next call; confirmDecided when Action is set.
	Ask confirmAsk
	// Action is what the gateway does (confirmDecided).
	Action confirmAction
	// Ownership is what the workflow runs under (actStart, actTakeOver).
	Ownership operation.Ownership
	// Holder is the claim's owner (actAttach, confirmAskTakeover).
	Holder string
	// Record is the stored record to answer (actReplay, actReview).
	Record idemstore.Record
	// Err is the store's error (actUnavailable).
	Err error
	// Ignored is Temporal's error that is only logged: the gateway waits on
	// the workflow instead of taking the claim over (actAttach).
	Ignored error
	// Usage is what the charge's windows held (actOverBudget).
	Usage []idemstore.WindowUsage
}

// decideConfirm says what a confirm asks next, or what it does. It does no I/O.
func decideConfirm(f confirmFacts) confirmPlan {
	c := f.Claim
	switch c.Kind {
	case claimNotAsked:
		if f.Expired {
			return confirmPlan{Ask: confirmAskRecord}
		}
		return confirmPlan{Ask: confirmAskClaim}
	case claimAcquired:
		return decided(confirmPlan{Action: actStart, Ownership: c.Ownership})
	case claimHeld:
		return attach(c.Holder, nil)
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
	case claimFailed:
	}
	return decided(confirmPlan{Action: actUnavailable, Err: c.Err})
}

// decideOrphan decides about a claim held past the grace period: its owner
// died between the claim and the start (with or without a truth record:
// the PostgreSQL-only path writes one at claim time) when Temporal has no
// workflow of it. Only workflows call the downstream, so nothing ran yet,
// and taking the claim over cannot execute anything twice; the new
// workflow claims the truth itself (operation.Takeover), never counting it
// as claimed.
func decideOrphan(f confirmFacts) confirmPlan {
	holder := f.Claim.Holder
	switch f.Workflow.Kind {
	case workflowNotAsked:
		return confirmPlan{Ask: confirmAskWorkflow}
	case workflowExists:
		return attach(holder, nil)
	case workflowUnknown:
		return attach(holder, f.Workflow.Err)
	case workflowAbsent:
	}
	switch f.Takeover.Kind {
	case takeoverNotAsked:
		return confirmPlan{Ask: confirmAskTakeover, Holder: holder}
	case takeoverDone:
		return decided(confirmPlan{Action: actTakeOver, Ownership: operation.Takeover(f.Owner)})
	case takeoverLost:
		// Someone else took it over first: wait on theirs.
		return attach(holder, nil)
	case takeoverFailed:
	}
	return decided(confirmPlan{Action: actUnavailable, Err: f.Takeover.Err})
}

// attach waits on the holder's workflow; ignored is only logged.
func attach(holder string, ignored error) confirmPlan {
	return decided(confirmPlan{Action: actAttach, Holder: holder, Ignored: ignored})
}

// decided marks p as the decision.
func decided(p confirmPlan) confirmPlan {
	p.Ask = confirmDecided
	return p
}

// held classifies another owner's claim of the operation: past the grace
// period only when its claim time is known.
func held(holder string, claimedAt, now time.Time, grace time.Duration) claimAnswer {
	kind := claimHeld
	if !claimedAt.IsZero() && now.Sub(claimedAt) >= grace {
		kind = claimHeldPastGrace
	}
	return claimAnswer{Kind: kind, Holder: holder, ClaimedAt: claimedAt}
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
		return claimAnswer{Kind: claimAcquired, Ownership: operation.ConfirmClaim(owner, d)}
	case idemstore.OutcomeInFlight:
		if d.Record.State == idemstore.StateNeedsReview {
			return claimAnswer{Kind: claimReview, Record: d.Record}
		}
		return held(d.Owner, d.ClaimedAt, now, grace)
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		return claimAnswer{Kind: claimFinished, Record: d.Record}
	case idemstore.OutcomeParamMismatch:
		return claimAnswer{Kind: claimMismatch}
	case idemstore.OutcomeLimitExceeded:
		return claimAnswer{Kind: claimOverBudget, Usage: d.Usage}
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
	case idemstore.StateDone, idemstore.StateFailed:
		return claimAnswer{Kind: claimFinished, Record: rec}
	case idemstore.StateNeedsReview:
		return claimAnswer{Kind: claimReview, Record: rec}
	case idemstore.StateInFlight:
	}
	// Claimed before exp and still in flight (or a state this version does
	// not know): the same handling as any in-flight claim, orphan takeover
	// included.
	return held(rec.Owner, rec.ClaimedAt, now, grace)
}

// workflowAnswerOf classifies DescribeWorkflowExecution's error.
func workflowAnswerOf(err error) workflowAnswer {
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return workflowAnswer{Kind: workflowExists}
	case errors.As(err, &nf):
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
