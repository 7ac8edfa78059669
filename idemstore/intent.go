package idemstore

import (
	"context"
	"time"
)

// The recent-intent index serves the amnesia guard (FindRecent) from the
// fast path: per subject, the newest operation of each intent (scope and
// param_hash), written with the claim, and a marker saying since when, and
// at which fast-path epoch, the subject's index is complete ("warm"). The
// truth answers whenever the index cannot answer for sure (no marker, a
// stale epoch, a lease, an entry whose record the fast path no longer
// has), and warms the subject's index again. See docs/ARCHITECTURE.md,
// "The amnesia guard from Redis".

// IntentEntry is one intent in the recent-intent index: the newest operation
// of (subject, Scope, ParamHash) the index knows, and when it was created.
type IntentEntry struct {
	// Scope is the action.
	Scope string
	// ParamHash binds the canonical params.
	ParamHash string
	// OperationID is the newest operation of the intent.
	OperationID string
	// CreatedAt is when it was claimed (never before the truth's
	// created_at: a replayed claim is stamped at most at its
	// fingerprint's exp).
	CreatedAt time.Time
}

// IndexMarker says that a subject's recent-intent index holds every intent
// claimed since Horizon while the fast-path epoch was Epoch.
type IndexMarker struct {
	// Epoch is the fast-path epoch the index was warmed at.
	Epoch int64
	// Horizon is the oldest creation time the warm-up loaded from the truth.
	Horizon time.Time
}

// IntentRead is what the recent-intent index holds for one intent: its
// subject's marker and the intent's entry, each nil when absent.
type IntentRead struct {
	// Marker is the subject's marker; nil: the index is not warm.
	Marker *IndexMarker
	// Entry is the intent's entry; nil: the index has none.
	Entry *IntentEntry
}

// FastClaim is the fast path's answer to a claim: the claim's decision and
// whether the recent-intent index recorded the claim in the same round trip.
type FastClaim struct {
	ClaimDecision
	// Indexed reports that the subject's index recorded the intent. When it
	// did not (its node failed while the claim's succeeded), the index may
	// call itself warm while missing this operation: the caller takes the
	// fast-path lease (Truth.LeaseFastPath) before the truth's claim.
	Indexed bool
	// Marker is the subject's marker as the claim found it (nil: the index
	// is not warm): a claim warms a cold index, since a preview writes
	// nothing.
	Marker *IndexMarker
}

// WarmParams completes a subject's recent-intent index from the truth.
type WarmParams struct {
	// Subject is whose index it is.
	Subject string
	// Token is BeginWarm's answer: the warm-up commits only while the index
	// still holds it (a flush or an expiry in between removes it).
	Token string
	// Marker is the marker the warm-up writes: the epoch read before the
	// truth, the horizon the truth was read from.
	Marker IndexMarker
	// Entries are the truth's newest operation of each intent since the
	// horizon; they never replace a newer entry.
	Entries []IntentEntry
	// TTL is how long the index lives without a claim (the horizon's width).
	TTL time.Duration
}

// FastPathEpoch is the truth's count of the times the fast path may have
// missed a claim (a gateway claimed on the truth alone), and the lease
// during which it may be missing some right now. A recent-intent marker of
// another epoch, or any marker while the lease runs, answers nothing for
// sure.
type FastPathEpoch struct {
	// Value is the epoch; it grows with each lease.
	Value int64
	// LeasedUntil is when the latest lease ends (in the past: none runs).
	LeasedUntil time.Time
}

// Leased reports whether a lease runs at now.
func (e FastPathEpoch) Leased(now time.Time) bool { return now.Before(e.LeasedUntil) }

// Truth is what the combined store needs of the PostgreSQL truth: the whole
// Store, and what keeps the fast path's recent-intent index honest.
type Truth interface {
	Store
	// RecentIntents returns the newest operation of each intent of subject
	// created at or after since (any state): a warm-up's entries.
	RecentIntents(ctx context.Context, subject string, since time.Time) ([]IntentEntry, error)
	// FastPathEpoch reads the current epoch.
	FastPathEpoch(ctx context.Context) (FastPathEpoch, error)
	// LeaseFastPath moves the epoch on and extends the lease to at least d
	// from now, before a claim the fast path's index missed is written to
	// the truth; the watchers hear of it at once.
	LeaseFastPath(ctx context.Context, d time.Duration) (FastPathEpoch, error)
	// WatchFastPathEpoch calls seen with the current epoch and with every
	// change, until ctx ends or the connection fails (its error).
	WatchFastPathEpoch(ctx context.Context, seen func(FastPathEpoch)) error
}
