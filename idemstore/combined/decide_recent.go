package combined

import (
	"fmt"
	"time"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// recentCall is the next call of FindRecent.
type recentCall int

const (
	// recentDecided: recentPlan holds the answer.
	recentDecided recentCall = iota
	// recentAskIndex: the fast path's recent-intent index (one HMGET).
	recentAskIndex
	// recentAskRecord: the fast path's record of the index's entry.
	recentAskRecord
	// recentAskTruth: the truth's FindRecent.
	recentAskTruth
)

// epochKind is what the store knows of the fast-path epoch.
type epochKind int

const (
	// epochUnknown: not read yet, or the watch failed: no marker can be trusted.
	epochUnknown epochKind = iota
	// epochLeased: a gateway claims on the truth alone right now: no marker
	// can be trusted, and none is written.
	epochLeased
	// epochCurrent: Value is the current epoch.
	epochCurrent
)

// epochFact is the fast-path epoch as FindRecent sees it.
type epochFact struct {
	// Kind is what is known.
	Kind epochKind
	// Value is the current epoch (epochCurrent).
	Value int64
}

// epochAt classifies e (nil: unknown) at now.
func epochAt(e *idemstore.FastPathEpoch, now time.Time) epochFact {
	switch {
	case e == nil:
		return epochFact{Kind: epochUnknown}
	case e.Leased(now):
		return epochFact{Kind: epochLeased}
	default:
		return epochFact{Kind: epochCurrent, Value: e.Value}
	}
}

// recentFacts are the answers FindRecent has gathered.
type recentFacts struct {
	// Intent is what is asked.
	Intent idemstore.FindRecentParams
	// Epoch is the fast-path epoch when FindRecent began.
	Epoch epochFact
	// Index is the recent-intent index's answer (replyOK: Read holds it).
	Index answer
	// Read is what the index holds for the intent.
	Read idemstore.IntentRead
	// Record is the fast path's record of the index's entry.
	Record answer
	// Truth is the truth's FindRecent.
	Truth answer
}

// recentPlan is the next call of FindRecent, or its answer.
type recentPlan struct {
	// Ask is the next call; recentDecided when Record and Err are the answer.
	Ask recentCall
	// Entry is the index's entry whose record recentAskRecord reads.
	Entry idemstore.IntentEntry
	// Record is the answer when Err is nil.
	Record idemstore.Record
	// Err is returned instead of a record (idemstore.ErrNotFound: no recent operation).
	Err error
}

// decideRecent answers the amnesia guard from the fast path's recent-intent
// index when it can answer for sure, and from the truth otherwise. The
// index answers for sure when its marker is of the current epoch, no lease
// runs, and its horizon covers the window: then no entry (or one older
// than the window) is "none", and an entry's own record on the fast path,
// checked against the intent, is the answer when it is DONE or a failure
// the guard reports. The truth answers an in-flight operation (the fast
// path cannot tell NEEDS_REVIEW), a failure the downstream refused (an
// older operation may count), a record the fast path lost, and whatever
// the index cannot answer. It only reads (a preview writes nothing): a
// cold index is warmed by the subject's next claim (warmAfterClaim). It
// does no I/O.
func decideRecent(in recentFacts) recentPlan {
	if in.Truth.Reply != replyNotAsked {
		return fromTruth(in)
	}
	if in.Epoch.Kind != epochCurrent {
		return recentPlan{Ask: recentAskTruth}
	}
	switch in.Index.Reply {
	case replyNotAsked:
		return recentPlan{Ask: recentAskIndex}
	case replyOK:
	case replySkipped, replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return recentPlan{Ask: recentAskTruth}
	}
	read := in.Read
	if m := read.Marker; m == nil || m.Epoch != in.Epoch.Value || m.Horizon.After(in.Intent.Since) {
		return recentPlan{Ask: recentAskTruth}
	}
	e := read.Entry
	if e == nil || e.CreatedAt.Before(in.Intent.Since) {
		return recentPlan{Err: fmt.Errorf("recent intent: %w", idemstore.ErrNotFound)}
	}
	switch in.Record.Reply {
	case replyNotAsked:
		return recentPlan{Ask: recentAskRecord, Entry: *e}
	case replyOK:
	case replySkipped, replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return recentPlan{Ask: recentAskTruth}
	}
	if rec := in.Record.Record; reportable(rec, e.OperationID, in.Intent) {
		return recentPlan{Record: rec}
	}
	return recentPlan{Ask: recentAskTruth}
}

// fromTruth answers the truth's FindRecent.
func fromTruth(in recentFacts) recentPlan {
	switch in.Truth.Reply {
	case replyOK:
		return recentPlan{Record: in.Truth.Record}
	case replyNotFound:
		return recentPlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replyNotAsked, replySkipped, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	return recentPlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
}

// warmAfterClaim reports whether a claim that the index recorded
// (indexed), finding its subject's marker m, warms the subject's index:
// when the epoch is current (no lease) and m is not of it.
func warmAfterClaim(epoch epochFact, indexed bool, m *idemstore.IndexMarker) bool {
	return indexed && epoch.Kind == epochCurrent && !warmAt(m, epoch.Value)
}

// warmAt reports whether m marks an index warmed at epoch.
func warmAt(m *idemstore.IndexMarker, epoch int64) bool { return m != nil && m.Epoch == epoch }

// reportable reports whether rec, the fast path's record of the index's
// entry opID, answers the guard for intent by itself: the same operation,
// subject, scope and param_hash, and DONE, or FAILED other than by a
// refusal of the downstream.
func reportable(rec idemstore.Record, opID string, intent idemstore.FindRecentParams) bool {
	if rec.OperationID != opID || rec.Subject != intent.Subject || rec.Scope != intent.Scope || rec.ParamHash != intent.ParamHash {
		return false
	}
	switch rec.State {
	case operation.StateDone:
		return true
	case operation.StateFailed:
		return rec.FailureKind != operation.FailureRefused
	case operation.StateInFlight, operation.StateNeedsReview:
	}
	return false
}
