// Package mandate holds standing mandates (docs/contract.md §7c): authority a
// person signs once with their passkey so that their agent's confirms of the
// actions it names run without a per-operation approval, inside its bounds —
// the actions, one currency, a maximum per operation, a maximum in total, a
// maximum count, the payees and a time window. It holds the domain types,
// the sentinel errors, the canonical statement the passkey signs, the
// validation of a proposal's bounds, and Check, the one decision whether a
// mandate covers a use (every Store decides with it or, in SQL, exactly as
// it does; storetest.ExerciseMandates checks them).
//
// A mandate is PROPOSED by an agent, ACTIVE once its person signed it, and
// REVOKED (by the person or an operator) or EXPIRED (past its expires_at) for
// good. A confirm under a mandate reserves its amount and one of its count
// in the claim's own transaction (idemstore.Claim.Mandate); the reservation is
// released only when non-execution is proved, as a budget's is.
package mandate

import (
	"errors"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/operation"
)

// State is where a mandate is in its life.
type State string

const (
	// StateProposed: an agent proposed it; nobody signed it yet. It covers nothing.
	StateProposed State = "PROPOSED"
	// StateActive: its person signed its statement with a passkey; it
	// covers operations inside its bounds from not_before until expires_at.
	StateActive State = "ACTIVE"
	// StateRevoked: its person or an operator revoked it; it covers
	// nothing from the revocation's commit on.
	StateRevoked State = "REVOKED"
	// StateExpired: its expires_at passed (a PROPOSED or ACTIVE mandate
	// reads EXPIRED from then on; nothing is written).
	StateExpired State = "EXPIRED"
)

// Reasons a confirm under a mandate is not covered by it: the approval the
// agent is asked for instead carries them, beside the policy's reasons
// (approval.Reasons).
const (
	// ReasonExceeded: the amount is above the mandate's maximum per
	// operation, or its remaining total or count does not hold it.
	ReasonExceeded approval.Reason = "mandate_exceeded"
	// ReasonExpired: the mandate's expires_at has passed.
	ReasonExpired approval.Reason = "mandate_expired"
	// ReasonRevoked: the mandate was revoked.
	ReasonRevoked approval.Reason = "mandate_revoked"
	// ReasonPayeeNotInMandate: the payee is not one the mandate names (or,
	// for a mandate of payees already paid, one the subject never paid).
	ReasonPayeeNotInMandate approval.Reason = "payee_not_in_mandate"
	// ReasonNotApplicable: the mandate named does not cover this operation
	// at all: unknown to this subject (or another subject's), not signed
	// yet, not begun (before not_before), or for another action or currency.
	ReasonNotApplicable approval.Reason = "mandate_not_applicable"
)

// Reason is why a mandate does not cover a claim: one of Reasons, an
// approval reason (the approval the confirm then asks carries it).
type Reason = approval.Reason

// Reasons lists every reason a mandate refuses with, in Check's order.
var Reasons = []approval.Reason{ReasonNotApplicable, ReasonRevoked, ReasonExpired, ReasonPayeeNotInMandate, ReasonExceeded}

// PayeesKnown is the Payees value of a mandate for "payees already paid":
// a payee is covered when the subject completed an operation of the same
// action to it (approval.Store.PayeeKnown) before the claim.
const PayeesKnown = "known"

var (
	// ErrNotFound: no mandate of that id (for that subject).
	ErrNotFound = errors.New("mandate: not found")
	// ErrInvalid: a proposal's bounds are not acceptable (the error says which).
	ErrInvalid = errors.New("mandate: invalid bounds")
	// ErrNotProposed: the mandate is not PROPOSED (signed already, revoked
	// or expired): it cannot be signed.
	ErrNotProposed = errors.New("mandate: not proposed")
	// ErrAlreadyEnded: the mandate is revoked or expired already.
	ErrAlreadyEnded = errors.New("mandate: revoked or expired already")
)

// Mandate is one standing mandate as the truth keeps it.
type Mandate struct {
	// ID identifies the mandate (32 lowercase hex characters).
	ID string `json:"mandate_id"`
	// Subject is whose agent it authorizes and whose passkey signs it.
	Subject string `json:"subject"`
	// Bounds are what it covers: what its person signs.
	Bounds
	// Description is the agent's free text. It is shown nowhere as
	// authority and is not part of the signed statement.
	Description string `json:"description,omitempty"`
	// State is the stored state, read as EXPIRED past ExpiresAt (StateAt).
	State State `json:"state"`
	// Used is what its unreleased reservations hold together.
	Used apd.Decimal `json:"used"`
	// UsedCount is how many unreleased reservations it holds.
	UsedCount int `json:"used_count"`
	// ProposedAt is when the agent proposed it.
	ProposedAt time.Time `json:"proposed_at"`
	// ProposeTraceID is the trace of the proposal.
	ProposeTraceID string `json:"propose_trace_id,omitempty"`
	// SignedAt is when its person signed it (zero: not signed).
	SignedAt time.Time `json:"signed_at,omitzero"`
	// CredentialID is the passkey that signed it (base64url).
	CredentialID string `json:"credential_id,omitempty"`
	// Evidence is the stored assertion (ceremony.Evidence).
	Evidence []byte `json:"-"`
	// EvidenceSHA256 is the hex SHA-256 of Evidence.
	EvidenceSHA256 string `json:"evidence_sha256,omitempty"`
	// StatementSHA256 is the hex SHA-256 of its canonical statement, fixed
	// at the proposal (what its person signs): what the claims under it
	// record.
	StatementSHA256 string `json:"statement_sha256,omitempty"`
	// SignTraceID is the trace of the signature.
	SignTraceID string `json:"sign_trace_id,omitempty"`
	// RevokedAt is when it was revoked (zero: not revoked).
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// RevokedBy names who revoked it: the person's subject or the operator.
	RevokedBy string `json:"revoked_by,omitempty"`
	// RevokeTraceID is the trace of the revocation.
	RevokeTraceID string `json:"revoke_trace_id,omitempty"`
}

// Bounds are a mandate's limits: the actions, the currency, the three
// maxima, the payees and the time window. A proposal carries them as the
// agent sent them; a mandate as Validate normalized them (actions and
// payees sorted, decimals reduced, times to the second).
type Bounds struct {
	// Actions are the scopes it covers, sorted.
	Actions []string `json:"actions"`
	// Currency is the one ISO 4217 currency it covers.
	Currency string `json:"currency"`
	// MaxPerOperation is the largest amount one operation may have.
	MaxPerOperation apd.Decimal `json:"max_per_operation"`
	// MaxTotal is the most all its operations may reserve together.
	MaxTotal apd.Decimal `json:"max_total"`
	// MaxCount is the most operations it covers.
	MaxCount int `json:"max_count"`
	// Payees are the payee ids it covers, sorted; nil when PayeesKnown.
	Payees []string `json:"payees,omitempty"`
	// PayeesKnown reports a mandate for payees already paid.
	PayeesKnown bool `json:"payees_known,omitempty"`
	// NotBefore is when it starts covering (zero in a proposal: at the
	// proposal).
	NotBefore time.Time `json:"not_before,omitzero"`
	// ExpiresAt is when it stops covering (exclusive).
	ExpiresAt time.Time `json:"expires_at"`
}

// StateAt is the mandate's state at now: a PROPOSED or ACTIVE mandate at
// or after its ExpiresAt is EXPIRED.
func (m Mandate) StateAt(now time.Time) State {
	if (m.State == StateProposed || m.State == StateActive) && !now.Before(m.ExpiresAt) {
		return StateExpired
	}
	return m.State
}

// Use is what a confirm asks of a mandate: the claim reserves Amount and
// one of the count, or is refused with a reason (idemstore.Claim.Mandate).
// It is operation.MandateUse, which the workflow's input carries.
type Use = operation.MandateUse

// Check decides whether m covers u, an operation of subject and scope, at
// now: "" when it does, else the reason it does not, in the order of
// Reasons (the first that holds). payeeKnown says whether subject completed
// an operation of scope to u.Payee (read only for PayeesKnown mandates).
// Used and UsedCount must be m's unreleased reservations. Pure: memstore
// decides with it, and pgstore's claim_operation decides exactly so.
func Check(m Mandate, subject, scope string, u Use, now time.Time, payeeKnown bool) approval.Reason {
	switch {
	case m.Subject != subject || m.State == StateProposed || now.Before(m.NotBefore) ||
		!slices.Contains(m.Actions, scope) || m.Currency != u.Currency:
		return ReasonNotApplicable
	case m.State == StateRevoked:
		return ReasonRevoked
	case m.StateAt(now) == StateExpired:
		return ReasonExpired
	case m.PayeesKnown && !payeeKnown, !m.PayeesKnown && !slices.Contains(m.Payees, u.Payee):
		return ReasonPayeeNotInMandate
	case u.Amount.Cmp(&m.MaxPerOperation) > 0 || m.UsedCount >= m.MaxCount || !fits(&m.Used, &u.Amount, &m.MaxTotal):
		return ReasonExceeded
	}
	return ""
}

// fits reports whether used + amount is at most max.
func fits(used, amount, limit *apd.Decimal) bool {
	var after apd.Decimal
	_, _ = apd.BaseContext.Add(&after, used, amount)
	return after.Cmp(limit) <= 0
}
