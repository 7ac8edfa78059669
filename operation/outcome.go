package operation

import (
	"encoding/json"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// This file holds the domain's values that every layer shares: an
// operation's state, its terminal outcome and how a failure is known, and
// what it spends of its subject's budgets. The stores (idemstore), the
// workflow (workflows), the gateway and the limits all use these.

// State is the state of one operation.
type State string

const (
	// StateInFlight means the operation was claimed and its outcome is not known yet.
	StateInFlight State = "IN_FLIGHT"
	// StateDone means the operation executed and the record's Result holds its result.
	StateDone State = "DONE"
	// StateFailed means the operation ended without executing downstream, as
	// far as it can be known: the record's Reason says why, its FailureKind how
	// that is known.
	StateFailed State = "FAILED"
	// StateNeedsReview means the outcome cannot be determined automatically and
	// an operator must resolve it. Only the PostgreSQL truth holds this state;
	// the Redis fast path keeps such an operation IN_FLIGHT.
	StateNeedsReview State = "NEEDS_REVIEW"
)

// Terminal reports whether s is DONE or FAILED.
func (s State) Terminal() bool { return s == StateDone || s == StateFailed }

// FailureKind says how a FAILED outcome is known: its provenance. An agent is
// told "nothing was executed" only for the kinds that prove it.
type FailureKind string

const (
	// FailureRefused is a definite refusal by the downstream (a 4xx such as
	// 422 insufficient_funds): it executed nothing. A business refusal.
	FailureRefused FailureKind = "downstream_refused"
	// FailureNotExecuted is "not executed" proved by reconciliation: the
	// status endpoint had no record of the operation when asked after the
	// downstream's whole processing window (and status lag) had passed
	// since the last send.
	FailureNotExecuted FailureKind = "not_executed"
	// FailureNotSent means the request could not even be built, so it was
	// never sent.
	FailureNotSent FailureKind = "not_sent"
	// FailureOperator is an operator's decision after manual review.
	FailureOperator FailureKind = "operator_decision"
)

// ProvesNothingExecuted reports whether k proves by itself that the
// downstream executed nothing (an operator's decision is the operator's
// word; an unrecorded kind, from before kinds were recorded, proves nothing).
func (k FailureKind) ProvesNothingExecuted() bool {
	return k == FailureRefused || k == FailureNotExecuted || k == FailureNotSent
}

// Final is an operation's terminal outcome, declared once and embedded
// wherever an outcome travels: in Finalization (what a store writes, idemstore.Finalization), in
// the operation workflow's result and in its Finalize activity's input
// (FinalizeInput), in what ClaimTruth read back
// (ClaimResult), and in the gateway's answers. A person's
// decision is part of it (ResolvedBy, the note, the evidence, when). Its
// JSON names are those of idemstore.Record and of every recorded workflow history;
// they must not change.
type Final struct {
	// State is DONE or FAILED.
	State State `json:"state"`
	// Result is the downstream's (or the operator's) result when DONE.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference extracted from Result when DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason says why it failed (FAILED).
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a failure is known (FAILED).
	FailureKind FailureKind `json:"failure_kind,omitempty"`
	// ResolvedBy names the operator when a person decided.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// ResolutionNote is the operator's note.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// EvidenceURL is the operator's evidence link (a ticket, a statement).
	EvidenceURL string `json:"evidence_url,omitempty"`
	// ResolvedAt is when the operator decided (zero when no person did).
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// CompletedAt is when the outcome was decided: the operation workflow
	// decides it once, and the truth and the fast path both record this very
	// time, so that every answer of the outcome (and its receipt) names the
	// same one. Zero in histories recorded before it was decided there; a
	// store then uses its own clock.
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// Charge is what one operation spends: its amount in its currency, and the
// windows of the subject's budgets it must fit, checked and reserved by the
// truth atomically with the claim. A reservation is released only when the
// operation fails with a proof that nothing was executed.
type Charge struct {
	// Amount is the operation's amount, in Currency's scale.
	Amount apd.Decimal `json:"amount"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
	// Windows are the maxima the amount must fit, in the limits file's order.
	Windows []Window `json:"windows,omitempty"`
}

// MandateUse names the standing mandate an operation is confirmed under
// instead of a per-operation approval (mandate.Use, docs/contract.md §7c):
// the claim reserves Amount and one of the mandate's count, or is refused.
type MandateUse struct {
	// MandateID is the mandate.
	MandateID string `json:"mandate_id"`
	// StatementSHA256 is the hex SHA-256 of the mandate's signed statement,
	// as the gateway read it.
	StatementSHA256 string `json:"statement_sha256,omitempty"`
	// Amount is the operation's amount.
	Amount apd.Decimal `json:"amount"`
	// Currency is its currency.
	Currency string `json:"currency"`
	// Payee is its payee id.
	Payee string `json:"payee"`
}

// Window is one maximum of a budget: the reservations of the subject in the
// currency (of Scope only, when set) within Period, plus the new amount,
// must not exceed Max. Period zero is a per-operation maximum.
type Window struct {
	// Name is the budget's name in the limits file.
	Name string `json:"name"`
	// Kind is per_operation, daily or monthly.
	Kind string `json:"kind"`
	// Scope restricts the window to one action's spending; empty counts every action.
	Scope string `json:"scope,omitempty"`
	// Period is how far back the window reaches (rolling); zero: this operation alone.
	Period time.Duration `json:"period"`
	// Max is the most the window may hold.
	Max apd.Decimal `json:"max"`
}

// WindowUsage is what a window held when the truth looked, before the new
// amount.
type WindowUsage struct {
	// Used is the sum of the window's reservations.
	Used apd.Decimal `json:"used"`
	// FreesAt is when enough of them leave the window for the amount asked
	// to fit; zero when it never can (the amount alone exceeds Max) or the
	// window is per operation.
	FreesAt time.Time `json:"frees_at,omitzero"`
}

// DefaultIntentWindow is how long an operation counts for the amnesia guard
// when its action declares no duplicate_intent_window.
const DefaultIntentWindow = 24 * time.Hour
