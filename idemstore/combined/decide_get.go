package combined

import (
	"fmt"

	"github.com/oncegate/oncegate/idemstore"
)

// getCall is the next call of Get.
type getCall int

const (
	// getDecided: getPlan holds the answer.
	getDecided getCall = iota
	// getAskTruth: the truth's Get.
	getAskTruth
	// getAskFast: the fast path's Get (askFast: skipped while degraded).
	getAskFast
)

// getFacts are the answers Get has gathered.
type getFacts struct {
	// Truth is the truth's Get.
	Truth answer
	// Fast is the fast path's Get.
	Fast answer
}

// getPlan is the next call of Get, or its answer.
type getPlan struct {
	// Ask is the next call; getDecided when Record and Err are the answer.
	Ask getCall
	// Record is the answer when Err is nil.
	Record idemstore.Record
	// Err is returned instead of a record.
	Err error
}

// decideGet reads the truth first (terminal and NEEDS_REVIEW records live
// there); when the truth has no record or cannot answer, Redis (an
// IN_FLIGHT claim before the gateway's truth claim, or an orphan). Not
// found is answered when both answered it, or while degraded (the truth
// is then the whole view); when Redis is asked and cannot answer, its
// error is the answer, never a "not found" that may be false. It does no
// I/O.
func decideGet(in getFacts) getPlan {
	switch in.Truth.Reply {
	case replyNotAsked:
		return getPlan{Ask: getAskTruth}
	case replyOK:
		return getPlan{Record: in.Truth.Record}
	case replyNotFound, replyUnavailable:
		return getFromFast(in)
	case replyNotOwner, replyAlreadyTerminal, replyFailed:
		return getPlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replySkipped:
	}
	return getPlan{Err: fmt.Errorf("truth: get: %w", errTruthAnswer)}
}

// getFromFast answers from Redis when the truth has no record or cannot answer.
func getFromFast(in getFacts) getPlan {
	truthErr := getPlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	switch in.Fast.Reply {
	case replyNotAsked:
		return getPlan{Ask: getAskFast}
	case replySkipped:
		// While degraded the truth is the whole view (the gateways claim
		// on the truth then).
		return truthErr
	case replyOK:
		return getPlan{Record: in.Fast.Record}
	case replyUnavailable:
		// A claim only Redis knows cannot be seen now: its error, never
		// the truth's "not found", is the answer.
	case replyNotFound:
		if in.Truth.Reply == replyUnavailable {
			return truthErr
		}
	case replyNotOwner, replyAlreadyTerminal, replyFailed:
	}
	return getPlan{Err: fmt.Errorf("fast path: %w", in.Fast.Err)}
}
