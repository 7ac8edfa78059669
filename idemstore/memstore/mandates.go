package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/mandate"
)

// mandateReservation is what one operation claimed under a mandate holds
// of it: its amount and one of its count, until released.
type mandateReservation struct {
	mandateID string
	amount    apd.Decimal
	// releasedAt is when a proof that nothing ran gave it back (zero: it counts).
	releasedAt time.Time
	// releasedBy is the failure kind that released it.
	releasedBy string
}

// withUsage is m with the usage of its unreleased reservations (the
// caller holds the lock).
func (s *Store) withUsage(m mandate.Mandate) mandate.Mandate {
	m.Actions, m.Payees, m.Evidence = slices.Clone(m.Actions), slices.Clone(m.Payees), slices.Clone(m.Evidence)
	m.Used, m.UsedCount = apd.Decimal{}, 0
	for _, r := range s.mandateHolds {
		if r.mandateID == m.ID && r.releasedAt.IsZero() {
			add(&m.Used, &r.amount)
			m.UsedCount++
		}
	}
	return m
}

// checkMandate decides with mandate.Check whether c's mandate covers c at
// now (the caller holds the lock): the mandate and "" when it does, else
// the reason (ReasonNotApplicable for an unknown one).
func (s *Store) checkMandate(c idemstore.Claim, now time.Time) (mandate.Mandate, approval.Reason) {
	m, ok := s.mandates[c.Mandate.MandateID]
	if !ok {
		return mandate.Mandate{}, mandate.ReasonNotApplicable
	}
	m = s.withUsage(m)
	known := m.PayeesKnown && s.payeeKnown(c.Subject, c.Scope, c.Mandate.Payee)
	return m, mandate.Check(m, c.Subject, c.Scope, *c.Mandate, now, known)
}

// reserveMandate keeps c.Mandate's amount as c's reservation of its
// mandate (the caller holds the lock).
func (s *Store) reserveMandate(c idemstore.Claim, _ time.Time) {
	r := &mandateReservation{mandateID: c.Mandate.MandateID}
	r.amount.Set(&c.Mandate.Amount)
	s.mandateHolds[c.OperationID] = r
}

// releaseMandate gives opID's mandate reservation back, at now, because of
// kind (the caller holds the lock); one released already stays as it was.
func (s *Store) releaseMandate(opID, kind string, now time.Time) {
	if r, ok := s.mandateHolds[opID]; ok && r.releasedAt.IsZero() {
		r.releasedAt, r.releasedBy = now, kind
	}
}

// ProposeMandate records m PROPOSED, with its statement's hash; an id
// that exists already is refused, and mandate.ErrInvalid when it is not
// mandate.Sane.
func (s *Store) ProposeMandate(_ context.Context, m mandate.Mandate) (mandate.Mandate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return mandate.Mandate{}, fmt.Errorf("propose mandate %s: %w", m.ID, err)
	}
	if err := mandate.Sane(m); err != nil {
		return mandate.Mandate{}, fmt.Errorf("propose mandate %s: %w", m.ID, err)
	}
	if _, ok := s.mandates[m.ID]; ok {
		return mandate.Mandate{}, fmt.Errorf("propose mandate %s: id in use", m.ID)
	}
	m.State, m.StatementSHA256 = mandate.StateProposed, mandate.StatementSHA256(m)
	if m.PayeesKnown {
		m.Payees = nil
	}
	s.mandates[m.ID] = s.withUsage(m)
	return s.withUsage(m), nil
}

// Mandate reads mandate id with its usage, or mandate.ErrNotFound.
func (s *Store) Mandate(_ context.Context, id string) (mandate.Mandate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return mandate.Mandate{}, fmt.Errorf("mandate %s: %w", id, err)
	}
	m, ok := s.mandates[id]
	if !ok {
		return mandate.Mandate{}, fmt.Errorf("mandate %s: %w", id, mandate.ErrNotFound)
	}
	return s.withUsage(m), nil
}

// Mandates lists the mandates f selects, newest first.
func (s *Store) Mandates(_ context.Context, f mandate.ListFilter) ([]mandate.Mandate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return nil, fmt.Errorf("list mandates: %w", err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = mandate.DefaultListLimit
	}
	var out []mandate.Mandate
	for _, m := range s.mandates {
		if f.Subject == "" || m.Subject == f.Subject {
			out = append(out, s.withUsage(m))
		}
	}
	slices.SortFunc(out, func(a, b mandate.Mandate) int {
		return cmp.Or(b.ProposedAt.Compare(a.ProposedAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// ActivateMandate records sg on its PROPOSED, unexpired mandate and
// advances the passkey's counter, atomically.
func (s *Store) ActivateMandate(_ context.Context, sg mandate.Signed) (mandate.Mandate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, err)
	}
	m, ok := s.mandates[sg.ID]
	switch {
	case !ok || m.Subject != sg.Subject:
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, mandate.ErrNotFound)
	case m.StateAt(sg.At) != mandate.StateProposed || m.StatementSHA256 != sg.StatementSHA256:
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, mandate.ErrNotProposed)
	}
	if err := s.advancePasskey(sg.CredentialID, sg.Subject, sg.SignCount, sg.At); err != nil {
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, err)
	}
	m.State, m.SignedAt, m.CredentialID, m.Evidence = mandate.StateActive, sg.At, sg.CredentialID, slices.Clone(sg.Evidence)
	m.EvidenceSHA256, m.SignTraceID = sg.EvidenceSHA256, sg.TraceID
	s.mandates[m.ID] = m
	return s.withUsage(m), nil
}

// RevokeMandate revokes a PROPOSED or ACTIVE, unexpired mandate (of
// r.Subject when set); every claim after it reads it REVOKED.
func (s *Store) RevokeMandate(_ context.Context, r mandate.Revocation) (mandate.Mandate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return mandate.Mandate{}, fmt.Errorf("revoke mandate %s: %w", r.ID, err)
	}
	m, ok := s.mandates[r.ID]
	switch {
	case !ok || r.Subject != "" && m.Subject != r.Subject:
		return mandate.Mandate{}, fmt.Errorf("revoke mandate %s: %w", r.ID, mandate.ErrNotFound)
	case m.StateAt(r.At) != mandate.StateProposed && m.StateAt(r.At) != mandate.StateActive:
		return s.withUsage(m), fmt.Errorf("revoke mandate %s: %w", r.ID, mandate.ErrAlreadyEnded)
	}
	m.State, m.RevokedAt, m.RevokedBy, m.RevokeTraceID = mandate.StateRevoked, r.At, r.By, r.TraceID
	s.mandates[m.ID] = m
	return s.withUsage(m), nil
}
