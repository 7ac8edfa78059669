package combined

import (
	"errors"

	"github.com/oncegate/oncegate/idemstore"
)

// The decisions of Finalize, Get, Release and Takeover (decide_*.go) are
// pure functions of the answers the backends gave so far: each returns the
// next call to make, or the method's answer and its follow-up actions. The
// method only makes the calls it is asked for, records each answer
// (answerOf, askFast) and carries out the decision.

// reply is a backend's answer to one call, classified.
type reply int

const (
	// replyNotAsked: the call was not made (yet).
	replyNotAsked reply = iota
	// replySkipped: the fast path was not asked because the store is
	// degraded (the truth is the whole view).
	replySkipped
	// replyOK: the call succeeded.
	replyOK
	// replyNotFound: idemstore.ErrNotFound.
	replyNotFound
	// replyNotOwner: idemstore.ErrNotOwner.
	replyNotOwner
	// replyAlreadyTerminal: idemstore.ErrAlreadyTerminal.
	replyAlreadyTerminal
	// replyUnavailable: idemstore.ErrUnavailable (the backend could not be
	// reached within its budget).
	replyUnavailable
	// replyFailed: any other error.
	replyFailed
)

// answer is a backend's answer to one call.
type answer struct {
	// Reply is the answer classified.
	Reply reply
	// Record is what a Get returned (replyOK).
	Record idemstore.Record
	// Err is the backend's error (every reply but replyNotAsked,
	// replySkipped and replyOK).
	Err error
}

// answerOf classifies a backend's answer. The backends wrap at most one of
// the idemstore sentinels, so the order of the checks never matters.
func answerOf(rec idemstore.Record, err error) answer {
	switch {
	case err == nil:
		return answer{Reply: replyOK, Record: rec}
	case errors.Is(err, idemstore.ErrNotFound):
		return answer{Reply: replyNotFound, Err: err}
	case errors.Is(err, idemstore.ErrNotOwner):
		return answer{Reply: replyNotOwner, Err: err}
	case errors.Is(err, idemstore.ErrAlreadyTerminal):
		return answer{Reply: replyAlreadyTerminal, Err: err}
	case errors.Is(err, idemstore.ErrUnavailable):
		return answer{Reply: replyUnavailable, Err: err}
	default:
		return answer{Reply: replyFailed, Err: err}
	}
}

// replied classifies the answer of a call that returns only an error.
func replied(err error) answer { return answerOf(idemstore.Record{}, err) }
