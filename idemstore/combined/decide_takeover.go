package combined

import (
	"fmt"

	"github.com/oncegate/oncegate/idemstore"
)

// takeoverCall is the next call of Takeover.
type takeoverCall int

const (
	// takeoverDecided: takeoverPlan holds the answer.
	takeoverDecided takeoverCall = iota
	// takeoverAskTruthRecord: the truth's Get (does the truth hold a record?).
	takeoverAskTruthRecord
	// takeoverAskTruth: the truth's Takeover.
	takeoverAskTruth
	// takeoverAskFast: the fast path's Takeover (askFast: skipped while degraded).
	takeoverAskFast
)

// takeoverFacts are the answers Takeover has gathered.
type takeoverFacts struct {
	// TruthRecord is the truth's Get.
	TruthRecord answer
	// Truth is the truth's Takeover.
	Truth answer
	// Fast is the fast path's Takeover.
	Fast answer
}

// takeoverPlan is the next call of Takeover, or its answer.
type takeoverPlan struct {
	// Ask is the next call; takeoverDecided when Err is the answer.
	Ask takeoverCall
	// Err is the answer (nil: taken over).
	Err error
	// Ignored is a fast-path failure that is only logged: the truth was
	// taken over, and decides.
	Ignored error
}

// decideTakeover moves the claim on the truth when it holds a record (then
// the truth decides, and a stale Redis claim is only logged), and on Redis
// (which decides when the truth has no record). While degraded the truth is
// the whole view: no truth record is ErrNotOwner. It does no I/O.
func decideTakeover(p idemstore.TakeoverParams, in takeoverFacts) takeoverPlan {
	switch in.TruthRecord.Reply {
	case replyNotAsked:
		return takeoverPlan{Ask: takeoverAskTruthRecord}
	case replyOK:
		return takeoverOnTruth(in)
	case replyNotFound:
		return takeoverOnFast(p, in)
	case replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return takeoverPlan{Err: fmt.Errorf("truth: %w", in.TruthRecord.Err)}
	case replySkipped:
	}
	return takeoverPlan{Err: fmt.Errorf("truth: get: %w", errTruthAnswer)}
}

// takeoverOnTruth takes over the truth's record, then Redis's claim.
func takeoverOnTruth(in takeoverFacts) takeoverPlan {
	switch in.Truth.Reply {
	case replyNotAsked:
		return takeoverPlan{Ask: takeoverAskTruth}
	case replyOK:
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return takeoverPlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replySkipped:
		return takeoverPlan{Err: fmt.Errorf("truth: takeover: %w", errTruthAnswer)}
	}
	switch in.Fast.Reply {
	case replyNotAsked:
		return takeoverPlan{Ask: takeoverAskFast}
	case replySkipped, replyOK:
		return takeoverPlan{}
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	return takeoverPlan{Ignored: in.Fast.Err}
}

// takeoverOnFast takes over the claim only Redis holds.
func takeoverOnFast(p idemstore.TakeoverParams, in takeoverFacts) takeoverPlan {
	switch in.Fast.Reply {
	case replyNotAsked:
		return takeoverPlan{Ask: takeoverAskFast}
	case replySkipped:
		// While degraded the truth is the whole view, and it has no record.
		return takeoverPlan{Err: fmt.Errorf("takeover %s: %w", p.OperationID, idemstore.ErrNotOwner)}
	case replyOK:
		return takeoverPlan{}
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	return takeoverPlan{Err: fmt.Errorf("fast path: %w", in.Fast.Err)}
}
