// Package idemstore holds the decidable state machine of one operation: the
// domain types, the sentinel errors, the one transport-error classifier, and
// the two interfaces of the storage boundary: Store, what every caller uses
// (the PostgreSQL truth and the combined degrading store implement it), and
// FastPath, what the Redis fast path offers the combined store.
//
// The states follow the design: an operation that was never claimed has no
// record; a claim moves it to IN_FLIGHT (started, outcome unknown); it ends in
// DONE (with the result) or FAILED (with the reason). NEEDS_REVIEW is the
// "plus one" state of the truth store: the outcome could not be determined
// automatically and a person decides. Terminal states always carry what a
// retry must be told, so a retry is answered with the first result instead of
// "duplicate request".
package idemstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

// ClaimOutcome is what an Acquire decided. It is not a State: a claim's
// outcome says what the caller must do (start, wait, replay, refuse), and
// OutcomeOf maps a record's state onto it.
type ClaimOutcome string

const (
	// OutcomeAcquired means this caller claimed the operation and must start it.
	OutcomeAcquired ClaimOutcome = "ACQUIRED"
	// OutcomeInFlight means another owner holds the claim; ClaimDecision.Owner names it.
	OutcomeInFlight ClaimOutcome = "IN_FLIGHT"
	// OutcomeDone means the operation already finished; ClaimDecision.Record holds the first result.
	OutcomeDone ClaimOutcome = "DONE"
	// OutcomeFailed means the operation already failed definitely; ClaimDecision.Record holds the reason.
	OutcomeFailed ClaimOutcome = "FAILED"
	// OutcomeParamMismatch means the operation was claimed with another param_hash: a security event.
	OutcomeParamMismatch ClaimOutcome = "PARAM_MISMATCH"
	// OutcomeLimitExceeded means the truth refused the claim: its Charge
	// does not fit one of its windows (ClaimDecision.Usage says how much of
	// each was used). Nothing was claimed or reserved.
	OutcomeLimitExceeded ClaimOutcome = "LIMIT_EXCEEDED"
	// OutcomeMandateRefused means the truth refused the claim because its
	// Mandate does not cover it (ClaimDecision.MandateRefusal says why).
	// Nothing was claimed or reserved: the caller asks the ordinary
	// approval instead.
	OutcomeMandateRefused ClaimOutcome = "MANDATE_REFUSED"
)

// OutcomeOf is what a claim that finds a record in state s (with the
// claim's param_hash) decides: DONE and FAILED replay it, IN_FLIGHT and
// NEEDS_REVIEW are OutcomeInFlight (Record.State tells NEEDS_REVIEW).
func OutcomeOf(s operation.State) ClaimOutcome {
	switch s {
	case operation.StateDone:
		return OutcomeDone
	case operation.StateFailed:
		return OutcomeFailed
	case operation.StateInFlight, operation.StateNeedsReview:
	}
	return OutcomeInFlight
}

var (
	// ErrNotFound is returned by Get when no record exists for the operation.
	ErrNotFound = errors.New("idemstore: record not found")
	// ErrNotOwner is returned by Finalize and Takeover when the operation is
	// held by another owner (or is gone): the caller must not overwrite anything.
	ErrNotOwner = errors.New("idemstore: not the owner")
	// ErrAlreadyTerminal is returned by Finalize when the record is already
	// DONE or FAILED with another outcome; truth is never overwritten.
	ErrAlreadyTerminal = errors.New("idemstore: record already terminal")
	// ErrUnavailable wraps every failure to reach a backend (connection
	// refused, timeout). Callers may degrade or answer temporarily_unavailable.
	ErrUnavailable = errors.New("idemstore: backend unavailable")
	// ErrFastPathNotOwner is returned by the combined store's Finalize when
	// the truth (PostgreSQL) accepted the outcome but the Redis fast path is
	// held by another owner. The truth stands; the newer owner refills Redis.
	// Callers that only need the truth written may treat it as success.
	ErrFastPathNotOwner = errors.New("idemstore: truth finalized, fast path held by another owner")
)

// Claim asks to move the operation OperationID from "never consumed" to IN_FLIGHT.
type Claim struct {
	// OperationID is the operation id: the fingerprint's nonce.
	OperationID string
	// ParamHash is the fingerprint's param_hash; a claim with another hash is PARAM_MISMATCH.
	ParamHash string
	// Owner identifies this execution attempt (gateway instance + request).
	Owner string
	// Subject is the authenticated subject the fingerprint was issued to.
	Subject string
	// ActingClient is the OAuth client that confirmed for Subject (the
	// token's client claim; empty when the token names none). Identity
	// metadata: the claim keeps the first confirm's client, a replay by
	// another client changes nothing.
	ActingClient string
	// Scope is the action, such as payments.transfer.
	Scope string
	// InFlightTTL bounds how long an IN_FLIGHT claim lives in Redis.
	InFlightTTL time.Duration
	// TerminalTTL is how long the terminal result is replayed.
	TerminalTTL time.Duration
	// FingerprintExp is the fingerprint's exp; the truth record is never reaped before it.
	FingerprintExp time.Time
	// BoundParams are the canonical bound params (the bytes param_hash is
	// the SHA-256 of), kept by the truth so an operator sees what the
	// operation is; optional.
	BoundParams json.RawMessage
	// IntentWindow is the action's duplicate_intent_window: how long the
	// claim counts for the amnesia guard, and so how long the fast path's
	// recent-intent index keeps it (operation.DefaultIntentWindow when not positive).
	IntentWindow time.Duration
	// Charge is what the operation spends of its subject's budgets; nil for
	// an action that spends nothing countable. The truth reserves it in the
	// claim's own transaction, or refuses the claim (OutcomeLimitExceeded).
	Charge *operation.Charge
	// ApprovalSHA256 is the hex SHA-256 of the approval evidence the
	// operation was confirmed under (empty when its action asked for none);
	// stored with the claim (the truth and the fast path) and read back, so
	// that every receipt of the operation names it.
	ApprovalSHA256 string
	// Mandate is the standing mandate the operation is confirmed under
	// instead of a per-operation approval (nil: none). The truth checks it
	// covers the claim (mandate.Check) and reserves its amount and one of
	// its count in the claim's own transaction, or refuses the claim
	// (OutcomeMandateRefused) writing nothing.
	Mandate *mandate.Use
}

// ClaimDecision is the answer of Acquire.
type ClaimDecision struct {
	// Outcome is what happened.
	Outcome ClaimOutcome
	// Owner is the current owner for OutcomeInFlight (and this caller's for OutcomeAcquired).
	Owner string
	// ClaimedAt is when the current claim was taken, when known.
	ClaimedAt time.Time
	// Record is the stored record for OutcomeDone and OutcomeFailed (and, where
	// the backend knows it, for OutcomeInFlight and OutcomeParamMismatch; the
	// latter's belongs to the other claim and is never answered to an agent).
	Record Record
	// TruthFound reports that the PostgreSQL truth holds the operation and Record
	// comes from it; false is an answer of the Redis fast path alone.
	TruthFound bool
	// Usage is, for a claim with a Charge that the truth decided on
	// (OutcomeAcquired, OutcomeLimitExceeded), what each of its windows
	// held before it, in the Charge's order.
	Usage []operation.WindowUsage
	// MandateRefusal is why the claim's Mandate does not cover it
	// (OutcomeMandateRefused only).
	MandateRefusal mandate.Reason
}

// Finalization moves an IN_FLIGHT (or NEEDS_REVIEW) operation to DONE or FAILED.
type Finalization struct {
	// OperationID is the operation id.
	OperationID string
	// Owner must equal the record's owner, or ErrNotOwner is returned.
	Owner string
	// Final is the outcome to record: its State is StateDone or StateFailed.
	operation.Final
	// TerminalTTL is how long the result is replayed from the fast path.
	TerminalTTL time.Duration
}

// Record is what a backend knows about one operation.
type Record struct {
	// OperationID is the operation id.
	OperationID string `json:"operation_id"`
	// Subject is who the operation belongs to.
	Subject string `json:"subject,omitempty"`
	// ActingClient is the OAuth client whose confirm claimed the operation
	// for Subject (empty when its token named none).
	ActingClient string `json:"acting_client,omitempty"`
	// Scope is the action.
	Scope string `json:"scope,omitempty"`
	// ParamHash binds the canonical params.
	ParamHash string `json:"param_hash,omitempty"`
	// State is the current state.
	State operation.State `json:"state"`
	// Owner is the current claim's owner.
	Owner string `json:"owner,omitempty"`
	// Result is the downstream result when DONE.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference when DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason explains FAILED or NEEDS_REVIEW.
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a FAILED outcome is known (empty for records
	// finalized before kinds were recorded).
	FailureKind operation.FailureKind `json:"failure_kind,omitempty"`
	// ResolvedBy names the operator who resolved a NEEDS_REVIEW operation.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// ResolutionNote is the operator's note.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// DownstreamState is the business state the downstream last reported
	// for an operation in flight (such as a payout's "pending").
	DownstreamState string `json:"downstream_state,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
	// ResolvedAt is when the operator decided (zero when no person did).
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// BoundParams are the canonical bound params of the claim (the truth
	// only; empty for records claimed before they were kept).
	BoundParams json.RawMessage `json:"bound_params,omitempty"`
	// ApprovalSHA256 is the hex SHA-256 of the approval evidence the
	// operation was confirmed under (empty when none was needed).
	ApprovalSHA256 string `json:"approval_sha256,omitempty"`
	// MandateID is the standing mandate the operation was confirmed under
	// (empty: none).
	MandateID string `json:"mandate_id,omitempty"`
	// MandateSHA256 is the hex SHA-256 of that mandate's signed statement.
	MandateSHA256 string `json:"mandate_sha256,omitempty"`
	// CompletedAt is when the record turned terminal (Final.CompletedAt: the
	// same time in the truth and the fast path; zero while not terminal).
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// CreatedAt is when the record was created (zero when unknown, as in Redis).
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedAt is when the record last changed (for terminal records: when it completed).
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// ClaimedAt is when the current owner took the claim (zero when unknown).
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// FingerprintExp is the exp of the fingerprint that created the record
	// (zero when unknown); the truth record is never reaped before it.
	FingerprintExp time.Time `json:"fingerprint_exp,omitzero"`
}

// WebhookReceiptRetention is how long a webhook receipt is kept (Reap
// deletes it after): twice the longest timestamp tolerance a catalog may
// declare (catalog.MaxWebhookTolerance), since an event is accepted up to
// the tolerance before or after its timestamp.
const WebhookReceiptRetention = 48 * time.Hour

// BudgetReset is an operator's reset of a subject's budget windows.
type BudgetReset struct {
	// Subject is whose windows start afresh.
	Subject string `json:"subject"`
	// At is when: reservations before it no longer count.
	At time.Time `json:"reset_at"`
	// By is the operator.
	By string `json:"reset_by"`
	// TraceID is the request that reset them.
	TraceID string `json:"trace_id,omitempty"`
}

// ReservationRetention is how long a budget reservation is kept (Reap
// deletes it after): longer than the longest window a limits file can
// declare (monthly, 30 days), so that no window ever misses one.
const ReservationRetention = 31 * 24 * time.Hour

// ReleasesBudget reports whether finalizing f gives its operation's budget
// reservation back: only a failure that proves nothing was executed
// (FailureKind.ProvesNothingExecuted), or an operator's decision that it
// failed (after manual review the operator states that no money moved;
// resolving completed keeps the reservation). Every other outcome keeps it.
//
// A mandate's reservation is released by exactly the same outcomes.
func (f Finalization) ReleasesBudget() bool {
	return f.State == operation.StateFailed && (f.FailureKind.ProvesNothingExecuted() || f.FailureKind == operation.FailureOperator)
}

// ListFilter selects the records an operator lists.
type ListFilter struct {
	// State keeps only records in this state; empty means every state.
	State operation.State
	// OlderThan keeps only records that entered their current state at
	// least this long ago (updated_at: for IN_FLIGHT, when it was claimed or
	// taken over; for NEEDS_REVIEW, when it was marked); zero means any age.
	// With it the oldest come first, else the newest.
	OlderThan time.Duration
	// Limit bounds the number of records; <= 0 means DefaultListLimit.
	Limit int
}

// DefaultListLimit is the number of records List returns when
// ListFilter.Limit is not positive.
const DefaultListLimit = 100

// TakeoverParams moves an IN_FLIGHT claim from one owner to another.
type TakeoverParams struct {
	// OperationID is the operation id.
	OperationID string
	// FromOwner must hold the claim, or ErrNotOwner is returned.
	FromOwner string
	// ToOwner is the new owner.
	ToOwner string
	// TTL is the fresh in-flight TTL of the claim (a backend without TTLs ignores it).
	TTL time.Duration
}

// ReleaseParams gives back an IN_FLIGHT claim whose workflow never started.
type ReleaseParams struct {
	// OperationID is the operation id.
	OperationID string
	// Owner must hold the claim, or ErrNotOwner is returned.
	Owner string
}

// MarkNeedsReviewParams hands an IN_FLIGHT operation to an operator.
type MarkNeedsReviewParams struct {
	// OperationID is the operation id.
	OperationID string
	// Reason says why the outcome cannot be determined automatically.
	Reason string
}

// DownstreamStateParams keeps the business state a downstream reported for
// an operation in flight.
type DownstreamStateParams struct {
	// OperationID is the operation id.
	OperationID string
	// State is the downstream's state, such as a payout's "pending".
	State string
}

// FindRecentParams selects the most recent operation of the same intent
// (the amnesia guard).
type FindRecentParams struct {
	// Subject is who the operation belongs to.
	Subject string
	// Scope is the action.
	Scope string
	// ParamHash binds the canonical params.
	ParamHash string
	// Since keeps only records created at or after it.
	Since time.Time
}

// WebhookParams names one webhook event of a downstream.
type WebhookParams struct {
	// Scope is the action the event is about.
	Scope string
	// Signature is the event's signature header, unique per event.
	Signature string
}

// RefillParams writes a terminal record the truth holds back into the fast path.
type RefillParams struct {
	// Record is the terminal record (State DONE or FAILED).
	Record Record
	// TTL is how long the fast path replays it; must be positive.
	TTL time.Duration
}

// Store is the storage boundary of an operation: every method the gateway,
// the workflow's activities, the worker and the operator tools use. The
// PostgreSQL truth (pgstore) and the combined degrading store (combined)
// implement it with the same semantics; storetest.Exercise checks them.
type Store interface {
	// Acquire claims c.OperationID atomically, or reports who holds it or how it ended.
	Acquire(ctx context.Context, c Claim) (ClaimDecision, error)
	// Get reads the record of operation opID, or ErrNotFound.
	Get(ctx context.Context, opID string) (Record, error)
	// Outcome reads what an agent's status query of operation opID is
	// told: a record whose state, outcome, subject, scope, param_hash and
	// approval are those of Get's (the fields a status answer and its
	// receipt name), but not necessarily the truth's other fields (an
	// operator's view reads Get); ErrNotFound when there is none.
	Outcome(ctx context.Context, opID string) (Record, error)
	// Takeover moves an IN_FLIGHT claim to a new owner; ErrNotOwner when
	// p.FromOwner does not hold it (or it is gone, or not IN_FLIGHT).
	Takeover(ctx context.Context, p TakeoverParams) error
	// Release deletes an IN_FLIGHT claim p.Owner holds whose workflow was
	// never started, so that nothing is consumed; ErrNotOwner when the
	// truth's record is another owner's or left IN_FLIGHT, ErrNotFound when
	// the truth has none and no claim of p.Owner was released elsewhere.
	Release(ctx context.Context, p ReleaseParams) error
	// Finalize records the terminal outcome f, owner-checked: ErrNotOwner,
	// ErrAlreadyTerminal (another outcome stands), or (combined only)
	// ErrFastPathNotOwner when only the fast path is held by a newer owner.
	Finalize(ctx context.Context, f Finalization) error
	// FinalizeFast writes the terminal outcome f to the fast path only,
	// owner-checked: the gateway refills it after attaching to a finished
	// workflow. A store without a fast path has nothing to refill: nil.
	FinalizeFast(ctx context.Context, f Finalization) error
	// MarkNeedsReview moves an IN_FLIGHT record to NEEDS_REVIEW (again on a
	// NEEDS_REVIEW one succeeds); ErrAlreadyTerminal, or ErrNotFound.
	MarkNeedsReview(ctx context.Context, p MarkNeedsReviewParams) error
	// RecordDownstreamState keeps p.State on an IN_FLIGHT record (a record
	// no longer in flight is left alone); ErrNotFound when there is none.
	RecordDownstreamState(ctx context.Context, p DownstreamStateParams) error
	// FindRecent returns the most recent record of the same intent that is
	// IN_FLIGHT, DONE, NEEDS_REVIEW or FAILED other than by a definite
	// refusal; ErrNotFound when none. It only reads.
	FindRecent(ctx context.Context, p FindRecentParams) (Record, error)
	// List returns the records f selects.
	List(ctx context.Context, f ListFilter) ([]Record, error)
	// Reap deletes the terminal records whose retention ended at or before
	// now (and the expired webhook receipts) and returns how many records it
	// deleted.
	Reap(ctx context.Context, now time.Time) (int64, error)
	// RecordWebhook remembers a webhook event and reports whether it is the
	// first time (false: a replay).
	RecordWebhook(ctx context.Context, p WebhookParams) (bool, error)
	// Ready returns an error (wrapping ErrUnavailable) when the truth cannot
	// be reached; the fast path is optional.
	Ready(ctx context.Context) error
	// Degraded reports whether the fast path is bypassed right now (always
	// false for a store without one).
	Degraded() bool
}

// OutcomeWatch is one wait for an operation's terminal outcome, told by an
// OutcomeFeed the moment the fast path records it.
type OutcomeWatch struct {
	// Outcome receives the terminal outcome, once.
	Outcome <-chan operation.Final
	// Lost is closed when the feed may have missed the outcome (its
	// subscription broke and was made again): the waiter then waits
	// another way.
	Lost <-chan struct{}
	// Stop ends the watch; it may be called more than once.
	Stop func()
}

// OutcomeFeed tells a gateway the terminal outcome of an operation the
// moment the fast path records it (the finalize and the refill announce
// every terminal record they write), so that a confirm is answered without
// waiting for its workflow's end.
type OutcomeFeed interface {
	// Watch starts watching opID's outcome; false (and no watch) when the
	// feed cannot promise to tell it (not subscribed yet): the caller then
	// waits another way. A watch sees only what is recorded after it began.
	Watch(opID string) (OutcomeWatch, bool)
}

// FastPath is what the Redis fast path offers the combined store: the same
// state machine without the truth's operations, plus the unconditional
// refill of a terminal record, a liveness probe and the recent-intent index
// (intent.go). storetest.ExerciseFastPath checks it.
type FastPath interface {
	// Acquire claims c.OperationID atomically, or reports who holds it or
	// how it ended, and records c's intent in its subject's recent-intent
	// index in the same round trip (FastClaim.Indexed says whether it did).
	Acquire(ctx context.Context, c Claim) (FastClaim, error)
	// RecentIntent reads the recent-intent index of subject for one intent
	// in one command.
	RecentIntent(ctx context.Context, subject, scope, paramHash string) (IntentRead, error)
	// BeginWarm marks subject's index as being warmed and returns the token
	// CommitWarm needs.
	BeginWarm(ctx context.Context, subject string, ttl time.Duration) (string, error)
	// CommitWarm merges p.Entries into the index (never over a newer entry)
	// and writes p.Marker, only while the index still holds p.Token: false
	// when it no longer does (a flush, an expiry, a later warm-up).
	CommitWarm(ctx context.Context, p WarmParams) (bool, error)
	// Get reads the record of operation opID, or ErrNotFound.
	Get(ctx context.Context, opID string) (Record, error)
	// Finalize records the terminal outcome f, owner-checked.
	Finalize(ctx context.Context, f Finalization) error
	// Takeover moves an IN_FLIGHT claim to a new owner with a fresh TTL, or ErrNotOwner.
	Takeover(ctx context.Context, p TakeoverParams) error
	// Release deletes an IN_FLIGHT claim p.Owner holds, or ErrNotOwner.
	Release(ctx context.Context, p ReleaseParams) error
	// Refill writes p.Record, replacing whatever the fast path holds for its operation.
	Refill(ctx context.Context, p RefillParams) error
	// Ping checks that the fast path answers.
	Ping(ctx context.Context) error
}

// DecideExisting answers a claim c that found the record rec: another
// param_hash is PARAM_MISMATCH, DONE and FAILED replay rec, IN_FLIGHT and
// NEEDS_REVIEW are OutcomeInFlight with rec's owner (Record.State tells
// NEEDS_REVIEW). rec comes from the truth: TruthFound is set.
func DecideExisting(c Claim, rec Record) ClaimDecision {
	switch {
	case rec.ParamHash != c.ParamHash:
		return ClaimDecision{Outcome: OutcomeParamMismatch, Record: rec, TruthFound: true}
	case rec.State.Terminal():
		return ClaimDecision{Outcome: OutcomeOf(rec.State), Record: rec, TruthFound: true}
	default: // IN_FLIGHT or NEEDS_REVIEW
		return ClaimDecision{Outcome: OutcomeInFlight, Owner: rec.Owner, ClaimedAt: rec.ClaimedAt, Record: rec, TruthFound: true}
	}
}
