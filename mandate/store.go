package mandate

import (
	"context"
	"time"
)

// Signed is a verified signature of a mandate's statement by its person's
// passkey: Store.ActivateMandate records it when the mandate is still PROPOSED,
// and advances the passkey's signature counter in the same transaction.
type Signed struct {
	// ID is the mandate.
	ID string
	// Subject must be the mandate's subject: only their passkey signs it.
	Subject string
	// StatementSHA256 is the hex SHA-256 of the statement that was signed;
	// it must be the stored mandate's (ErrNotProposed otherwise: the bounds
	// signed are not the ones kept).
	StatementSHA256 string
	// CredentialID is the signing passkey (base64url).
	CredentialID string
	// SignCount is the counter its assertion carried.
	SignCount uint32
	// Evidence is the assertion as stored.
	Evidence []byte
	// EvidenceSHA256 is the hex SHA-256 of Evidence.
	EvidenceSHA256 string
	// TraceID is the signing request's trace.
	TraceID string
	// At is now.
	At time.Time
}

// Revocation ends a mandate for good.
type Revocation struct {
	// ID is the mandate.
	ID string
	// Subject, when set, must be the mandate's (a person revokes only their
	// own; an operator leaves it empty).
	Subject string
	// By names who revoked: the person or the operator.
	By string
	// TraceID is the revoking request's trace.
	TraceID string
	// At is now.
	At time.Time
}

// ListFilter selects the mandates Store.Mandates lists.
type ListFilter struct {
	// Subject keeps only this subject's (empty: every subject's).
	Subject string
	// Limit bounds the list (DefaultListLimit when not positive).
	Limit int
}

// DefaultListLimit bounds Store.Mandates when no limit is given.
const DefaultListLimit = 100

// Store keeps mandates and their reservations in the PostgreSQL truth
// (pgstore and memstore implement it; storetest.ExerciseMandates checks
// them). The reservation itself is made by the claim
// (idemstore.Claim.Mandate), in the claim's own transaction.
type Store interface {
	// ProposeMandate records m (PROPOSED); m.ID must be new, and m
	// mandate.Sane (ErrInvalid otherwise).
	ProposeMandate(ctx context.Context, m Mandate) (Mandate, error)
	// Mandate reads one mandate with its usage, or ErrNotFound.
	Mandate(ctx context.Context, id string) (Mandate, error)
	// Mandates lists mandates f selects, newest first, with their usage.
	Mandates(ctx context.Context, f ListFilter) ([]Mandate, error)
	// ActivateMandate records s on a PROPOSED, unexpired mandate of s.Subject
	// whose statement is s.StatementSHA256 and advances the passkey's
	// counter: ErrNotFound, ErrNotProposed, approval.ErrSignCount,
	// approval.ErrRevoked, approval.ErrNotFound (not the subject's passkey).
	ActivateMandate(ctx context.Context, s Signed) (Mandate, error)
	// RevokeMandate revokes a PROPOSED or ACTIVE, unexpired mandate (of r.Subject
	// when set): ErrNotFound, or ErrAlreadyEnded with the standing
	// mandate. Its commit ends the mandate for every claim after it.
	RevokeMandate(ctx context.Context, r Revocation) (Mandate, error)
}
