package combined

import (
	"fmt"
)

// releaseCall is the next call of Release.
type releaseCall int

const (
	// releaseDecided: releasePlan holds the answer.
	releaseDecided releaseCall = iota
	// releaseAskTruth: the truth's Release.
	releaseAskTruth
	// releaseAskFast: the fast path's Release (askFast: skipped while degraded).
	releaseAskFast
)

// releaseFacts are the answers Release has gathered.
type releaseFacts struct {
	// Truth is the truth's Release.
	Truth answer
	// Fast is the fast path's Release.
	Fast answer
}

// releasePlan is the next call of Release, or its answer.
type releasePlan struct {
	// Ask is the next call; releaseDecided when Err is the answer.
	Ask releaseCall
	// Err is the answer (nil: released).
	Err error
	// Ignored is a fast-path failure that is only logged: the claim then
	// expires on Redis with its in-flight TTL.
	Ignored error
}

// decideRelease releases the truth's claim first (owner-checked: its
// errors are answered), then Redis's. When the truth has no claim, a claim
// only Redis holds is released there; when Redis has none of this owner
// either (or is not asked: degraded, the truth being the whole view) the
// truth's ErrNotFound is answered. It does no I/O.
func decideRelease(in releaseFacts) releasePlan {
	switch in.Truth.Reply {
	case replyNotAsked:
		return releasePlan{Ask: releaseAskTruth}
	case replyOK:
		return releaseFollowedOnFast(in)
	case replyNotFound:
		return releaseOnlyOnFast(in)
	case replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
		return releasePlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	case replySkipped:
	}
	return releasePlan{Err: fmt.Errorf("truth: release: %w", errTruthAnswer)}
}

// releaseFollowedOnFast releases Redis's claim once the truth's is
// released; a Redis failure is only logged.
func releaseFollowedOnFast(in releaseFacts) releasePlan {
	switch in.Fast.Reply {
	case replyNotAsked:
		return releasePlan{Ask: releaseAskFast}
	case replySkipped, replyOK:
		return releasePlan{}
	case replyNotFound, replyNotOwner, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	return releasePlan{Ignored: in.Fast.Err}
}

// releaseOnlyOnFast releases the claim only Redis holds; the truth's
// ErrNotFound is answered when Redis cannot release a claim of this owner.
func releaseOnlyOnFast(in releaseFacts) releasePlan {
	notFound := releasePlan{Err: fmt.Errorf("truth: %w", in.Truth.Err)}
	switch in.Fast.Reply {
	case replyNotAsked:
		return releasePlan{Ask: releaseAskFast}
	case replyOK:
		return releasePlan{}
	case replySkipped, replyNotOwner:
		// Degraded (the truth is the whole view), or another owner's claim.
		return notFound
	case replyNotFound, replyAlreadyTerminal, replyUnavailable, replyFailed:
	}
	notFound.Ignored = in.Fast.Err
	return notFound
}
