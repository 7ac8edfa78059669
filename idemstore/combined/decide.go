package combined

import (
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// This file is Acquire's merge of the fast path's answer with the truth, as
// pure functions: Acquire asks the fast path, asks the truth what queryFor
// says, lets decide plan the answer and the fast-path repairs, and applies
// them. decide_test's TestDecide covers every combination. Finalize, Get,
// Release and Takeover decide in ask/decided steps over the shared answers
// of answer.go (decide_finalize.go, decide_get.go, decide_release.go,
// decide_takeover.go). Acquire keeps its own truthAnswer: the truth's claim
// answers ACQUIRED or an earlier claim's record, which a classified answer
// (a record or an error) cannot tell apart, and every truth error but a
// lookup's ErrNotFound (truthAbsent) means the same here (truthFailed),
// where answer's eight replies would need listing in each switch.

// fastAnswer is what the fast path answered an Acquire.
type fastAnswer struct {
	// Decision is the fast path's decision (when Unavailable is false).
	Decision idemstore.ClaimDecision
	// Unavailable means the fast path could not answer (the store is
	// degraded, or Redis failed within the budget): the truth alone decides.
	Unavailable bool
}

// truthQuery is what Acquire asks the truth after the fast path answered.
type truthQuery int

const (
	// queryNone: the fast path's answer is final (DONE, FAILED and
	// PARAM_MISMATCH are written to Redis only after the truth).
	queryNone truthQuery = iota
	// queryClaim: claim by insert. The truth alone decides who is first, so
	// exactly one caller is ever ACQUIRED, even when another fell back to the
	// PostgreSQL-only path.
	queryClaim
	// queryLookup: read the record. An IN_FLIGHT on Redis may hide an
	// outcome Redis lost (FLUSHALL, failover), or a NEEDS_REVIEW.
	queryLookup
)

// queryFor says what to ask the truth about the fast path's answer.
func queryFor(fast fastAnswer) truthQuery {
	if fast.Unavailable {
		return queryClaim
	}
	switch fast.Decision.Outcome {
	case idemstore.OutcomeAcquired:
		return queryClaim
	case idemstore.OutcomeInFlight:
		return queryLookup
	case idemstore.OutcomeDone, idemstore.OutcomeFailed, idemstore.OutcomeParamMismatch:
		return queryNone
	case idemstore.OutcomeLimitExceeded, idemstore.OutcomeMandateRefused: // only the truth refuses over budget or mandate
		return queryNone
	}
	return queryNone
}

// truthKind is what the truth said.
type truthKind int

const (
	// truthNotAsked: queryNone.
	truthNotAsked truthKind = iota
	// truthClaimed: the claim was inserted; this caller is first.
	truthClaimed
	// truthAbsent: the truth has no record of the operation.
	truthAbsent
	// truthFound: the truth holds Record (inserted by an earlier claim).
	truthFound
	// truthFailed: the truth could not answer; Err says why.
	truthFailed
	// truthRefused: the claim does not fit its budget's windows (Usage
	// says how much they hold), or its mandate does not cover it
	// (MandateRefusal says why); the truth wrote nothing.
	truthRefused
)

// truthAnswer is the truth's answer to a truthQuery.
type truthAnswer struct {
	// Kind is what the truth said.
	Kind truthKind
	// Record is the truth's record (truthClaimed, truthFound).
	Record idemstore.Record
	// Err is the truth's error (truthFailed).
	Err error
	// Usage is what the claim's budget windows held (truthClaimed,
	// truthRefused; none without a charge).
	Usage []operation.WindowUsage
	// MandateRefusal is why the claim's mandate does not cover it
	// (truthRefused by the mandate; empty: refused over budget).
	MandateRefusal approval.Reason
}

// plan is what Acquire answers and what it repairs on the fast path.
type plan struct {
	// Answer is the decision returned when Err is nil.
	Answer idemstore.ClaimDecision
	// Err is returned instead of an answer.
	Err error
	// ReleaseFast gives back the fast-path claim this caller just took, so
	// that nothing is consumed.
	ReleaseFast bool
	// Refill writes RefillRecord, the truth's terminal record, to the fast path.
	Refill bool
	// RefillRecord is the record Refill writes.
	RefillRecord idemstore.Record
	// MirrorOwner, when set, moves the fast-path claim this caller just took
	// to the truth's owner, so that Redis mirrors the truth again.
	MirrorOwner string
}

// errTruthAnswer is a truth answer that its query cannot give (a claim that
// finds no record, a lookup that claims).
var errTruthAnswer = errors.New("unexpected answer of the truth")

// decide merges the fast path's answer to claim c with the truth's answer
// to queryFor(fast). It does no I/O.
func decide(c idemstore.Claim, fast fastAnswer, truth truthAnswer) plan {
	switch q := queryFor(fast); {
	case q == queryNone:
		return plan{Answer: fast.Decision}
	case fast.Unavailable:
		return decideTruthOnly(c, truth)
	case q == queryClaim:
		return decideClaimed(c, fast.Decision, truth)
	default:
		return decideLookedUp(c, fast.Decision, truth)
	}
}

// decideTruthOnly answers from the truth's claim alone: Redis cannot be
// reached, so nothing is repaired there.
func decideTruthOnly(c idemstore.Claim, truth truthAnswer) plan {
	switch truth.Kind {
	case truthClaimed:
		return acquired(truth, truth.Record.ClaimedAt)
	case truthFound:
		return plan{Answer: existing(c, truth.Record)}
	case truthRefused:
		return plan{Answer: overBudget(truth)}
	case truthFailed:
		return plan{Err: fmt.Errorf("truth: %w", truth.Err)}
	case truthNotAsked, truthAbsent:
	}
	return plan{Err: fmt.Errorf("truth: claim: %w", errTruthAnswer)}
}

// decideClaimed answers a Redis ACQUIRED checked by claiming the truth.
func decideClaimed(c idemstore.Claim, fast idemstore.ClaimDecision, truth truthAnswer) plan {
	switch truth.Kind {
	case truthClaimed:
		return acquired(truth, fast.ClaimedAt)
	case truthRefused:
		// Over budget or outside its mandate: the claim Redis granted is
		// given back, so that nothing is consumed (the only refusals that
		// release it).
		return plan{Answer: overBudget(truth), ReleaseFast: true}
	case truthFound:
		// An earlier claim holds the truth: Redis lost a finished operation,
		// or the key expired while its workflow runs, or a caller on the
		// PostgreSQL-only path was first.
		p := repairFound(c, truth.Record)
		switch rec := truth.Record; {
		case p.Answer.Outcome == idemstore.OutcomeParamMismatch:
			p.ReleaseFast = true
		case p.Answer.Outcome == idemstore.OutcomeInFlight && rec.Owner != "" && rec.Owner != c.Owner:
			p.MirrorOwner = rec.Owner
		}
		return p
	case truthFailed:
		// Without the truth this may be a replay after a FLUSHALL: give the
		// claim back so that nothing is consumed.
		return plan{Err: fmt.Errorf("claim truth: %w", truth.Err), ReleaseFast: true}
	case truthNotAsked, truthAbsent:
	}
	return plan{Err: fmt.Errorf("claim truth: %w", errTruthAnswer), ReleaseFast: true}
}

// decideLookedUp answers a Redis IN_FLIGHT checked by reading the truth.
func decideLookedUp(c idemstore.Claim, fast idemstore.ClaimDecision, truth truthAnswer) plan {
	switch truth.Kind {
	case truthAbsent:
		// A claim only Redis knows: before its truth claim, or an orphan.
		return plan{Answer: fast}
	case truthFound:
		rec := truth.Record
		if rec.ParamHash != c.ParamHash || rec.State.Terminal() {
			return repairFound(c, rec)
		}
		// IN_FLIGHT or NEEDS_REVIEW on the truth: Redis's owner, the truth's record.
		fast.Record, fast.TruthFound = rec, true
		return plan{Answer: fast}
	case truthFailed:
		return plan{Err: fmt.Errorf("check truth: %w", truth.Err)}
	case truthNotAsked, truthClaimed, truthRefused:
	}
	return plan{Err: fmt.Errorf("check truth: %w", errTruthAnswer)}
}

// acquired answers the truth's new claim, claimed at claimedAt.
func acquired(truth truthAnswer, claimedAt time.Time) plan {
	rec := truth.Record
	return plan{Answer: idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: rec.Owner,
		ClaimedAt: claimedAt, Record: rec, TruthFound: true, Usage: truth.Usage}}
}

// overBudget answers the truth's refusal of a claim over budget or
// outside its mandate.
func overBudget(truth truthAnswer) idemstore.ClaimDecision {
	if truth.MandateRefusal != "" {
		return idemstore.ClaimDecision{Outcome: idemstore.OutcomeMandateRefused, TruthFound: true, MandateRefusal: truth.MandateRefusal}
	}
	return idemstore.ClaimDecision{Outcome: idemstore.OutcomeLimitExceeded, TruthFound: true, Usage: truth.Usage}
}

// repairFound answers the truth's record rec, refilling Redis when rec is terminal.
func repairFound(c idemstore.Claim, rec idemstore.Record) plan {
	p := plan{Answer: existing(c, rec)}
	if rec.State.Terminal() {
		p.Refill, p.RefillRecord = true, rec
	}
	return p
}

// existing is idemstore.DecideExisting as an answer: a PARAM_MISMATCH
// carries no record (it belongs to the other claim).
func existing(c idemstore.Claim, rec idemstore.Record) idemstore.ClaimDecision {
	d := idemstore.DecideExisting(c, rec)
	if d.Outcome == idemstore.OutcomeParamMismatch {
		d.Record = idemstore.Record{}
	}
	return d
}
