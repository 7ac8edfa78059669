package combined

import (
	"fmt"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// finalizeCall is the next call of Finalize.
type finalizeCall int

const (
	// finalizeDecided: finalizePlan holds the answer.
	finalizeDecided finalizeCall = iota
	// finalizeAskTruth: the truth's Finalize.
	finalizeAskTruth
	// finalizeAskTruthRecord: the truth's Get, after it refused as ErrNotOwner.
	finalizeAskTruthRecord
	// finalizeAskFastClaim: the fast path's Get, when the truth has no record.
	finalizeAskFastClaim
	// finalizeAskClaimTruth: the truth's Acquire of finalizePlan.Claim, the
	// fast path's claim.
	finalizeAskClaimTruth
	// finalizeAskTruthAgain: the truth's Finalize, once claimed.
	finalizeAskTruthAgain
	// finalizeAskFast: the fast path's Finalize (askFast: skipped while degraded).
	finalizeAskFast
	// finalizeAskRefillRecord: the truth's Get, to refill Redis with it.
	finalizeAskRefillRecord
)

// finalizeFacts are the answers Finalize has gathered.
type finalizeFacts struct {
	// Truth is the truth's Finalize.
	Truth answer
	// TruthRecord is the truth's Get after its ErrNotOwner.
	TruthRecord answer
	// FastClaim is the fast path's Get when the truth has no record.
	FastClaim answer
	// ClaimTruth is the truth's Acquire of the fast path's claim.
	ClaimTruth answer
	// TruthAgain is the truth's Finalize after ClaimTruth.
	TruthAgain answer
	// Fast is the fast path's Finalize.
	Fast answer
	// RefillRecord is the truth's Get after the fast path's ErrAlreadyTerminal.
	RefillRecord answer
}

// finalizePlan is the next call of Finalize, or its answer and follow-ups.
type finalizePlan struct {
	// Ask is the next call; finalizeDecided when Err is the answer.
	Ask finalizeCall
	// Claim is what finalizeAskClaimTruth claims on the truth.
	Claim idemstore.Claim
	// Err is the answer (nil: finalized).
	Err error
	// Refill writes RefillRecord, the truth's record, to the fast path.
	Refill bool
	// RefillRecord is the record Refill writes.
	RefillRecord idemstore.Record
	// Ignored is a fast-path failure that is only logged: the truth is written.
	Ignored error
}

// decideFinalize writes the outcome to the truth first (its errors are
// answered), then to Redis, owner-checked. When the truth has no record
// (the claim lives only on Redis: an orphan taken over before any truth
// claim), the Redis claim is claimed on the truth first if f.Owner holds it
// (while degraded: ErrNotOwner, the truth being the whole view). Redis held
// by another owner (or gone) answers idemstore.ErrFastPathNotOwner: the
// truth stands, and a newer owner, or the next acquire, refills Redis. Redis
// holding another outcome is refilled from the truth, which wins. Redis
// unavailable is ignored (logged). It does no I/O.
func decideFinalize(f idemstore.Finalization, in finalizeFacts) finalizePlan {
	switch in.Truth.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskTruth}
	case replyOK:
		return finalizeOnFast(f, in)
	case replyNotOwner:
		return finalizeUnclaimed(f, in)
	case replyNotFound, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replySkipped:
	}
	return finalizePlan{Err: fmt.Errorf("truth: finalize: %w", errTruthAnswer)}
}

// finalizeUnclaimed answers the truth's ErrNotOwner: another owner holds
// the truth's record, or the truth has none and Redis's claim may be f.Owner's.
func finalizeUnclaimed(f idemstore.Finalization, in finalizeFacts) finalizePlan {
	switch in.TruthRecord.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskTruthRecord}
	case replyOK:
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replyNotFound:
		return finalizeFromFastClaim(f, in)
	case replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.TruthRecord.Err)}
	case replySkipped:
	}
	return finalizePlan{Err: fmt.Errorf("truth: get: %w", errTruthAnswer)}
}

// finalizeFromFastClaim claims the truth from Redis's claim when f.Owner
// holds it, then finalizes the truth and Redis.
func finalizeFromFastClaim(f idemstore.Finalization, in finalizeFacts) finalizePlan {
	switch in.FastClaim.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskFastClaim}
	case replySkipped, replyNotFound, replyUnavailable:
		// No claim of this owner can be proven: the truth has none, and
		// Redis cannot be asked (degraded) or has none. The truth's view answers.
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replyOK:
	case replyNotOwner, replyAlreadyTerminal, replyFailed:
		return finalizePlan{Err: fmt.Errorf("fast path: %w", in.FastClaim.Err)}
	}
	claim := in.FastClaim.Record
	if claim.State != operation.StateInFlight || claim.Owner != f.Owner {
		return finalizePlan{Err: fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrNotOwner)}
	}
	switch in.ClaimTruth.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskClaimTruth, Claim: idemstore.Claim{
			OperationID: claim.OperationID, ParamHash: claim.ParamHash, Owner: claim.Owner, Subject: claim.Subject, ActingClient: claim.ActingClient, Scope: claim.Scope,
			TerminalTTL: f.TerminalTTL, FingerprintExp: claim.FingerprintExp, ApprovalSHA256: claim.ApprovalSHA256,
		}}
	case replyOK:
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.ClaimTruth.Err)}
	case replySkipped:
		return finalizePlan{Err: fmt.Errorf("truth: claim: %w", errTruthAnswer)}
	}
	// A concurrent claim of the truth under another owner makes this ErrNotOwner.
	switch in.TruthAgain.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskTruthAgain}
	case replyOK:
		return finalizeOnFast(f, in)
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return finalizePlan{Err: fmt.Errorf("truth: %w", in.TruthAgain.Err)}
	case replySkipped:
	}
	return finalizePlan{Err: fmt.Errorf("truth: finalize: %w", errTruthAnswer)}
}

// finalizeOnFast finalizes Redis once the truth is finalized.
func finalizeOnFast(f idemstore.Finalization, in finalizeFacts) finalizePlan {
	switch in.Fast.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskFast}
	case replySkipped, replyOK:
		return finalizePlan{}
	case replyNotOwner:
		return finalizePlan{Err: fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrFastPathNotOwner)}
	case replyAlreadyTerminal:
		// Redis disagrees with the truth, which wins.
		return refillFromTruth(in.RefillRecord)
	case replyUnavailable:
		return finalizePlan{Ignored: in.Fast.Err}
	case replyNotFound, replyFailed:
	}
	return finalizePlan{Err: fmt.Errorf("fast path: %w", in.Fast.Err)}
}

// refillFromTruth refills Redis with the truth's record when the truth
// answers; otherwise the next acquire checks the truth again.
func refillFromTruth(rec answer) finalizePlan {
	switch rec.Reply {
	case replyNotAsked:
		return finalizePlan{Ask: finalizeAskRefillRecord}
	case replyOK:
		return finalizePlan{Refill: true, RefillRecord: rec.Record}
	case replySkipped, replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	return finalizePlan{}
}
