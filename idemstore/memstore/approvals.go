package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/operation"
)

// invite is an enrolment invite as the store keeps it.
type invite struct {
	approval.Invite
	// usedAt is when it allowed its one enrolment (zero: unused).
	usedAt time.Time
}

// usable reports whether inv may still enrol at now.
func (inv *invite) usable(now time.Time) bool {
	return inv.usedAt.IsZero() && inv.ExpiresAt.After(now)
}

// cloneApproval is r with its own copies of its slices.
func cloneApproval(r approval.Record) approval.Record {
	r.BoundParams = bytes.Clone(r.BoundParams)
	r.Reasons = slices.Clone(r.Reasons)
	r.Statement = bytes.Clone(r.Statement)
	r.Evidence = bytes.Clone(r.Evidence)
	r.Decisions = slices.Clone(r.Decisions)
	if r.Approvers != nil {
		a := *r.Approvers
		r.Approvers = &a
	}
	return r
}

// pending is the PENDING record r asks for.
func pending(r approval.Request) approval.Record {
	rec := r.Pending()
	rec.Reasons = make([]approval.Reason, len(r.Reasons)) // never nil, as read back from the truth
	copy(rec.Reasons, r.Reasons)
	return cloneApproval(rec)
}

// RequestApproval records r PENDING unless the operation's approval is
// recorded already, and returns the record as it stands.
func (s *Store) RequestApproval(_ context.Context, r approval.Request) (approval.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return approval.Record{}, fmt.Errorf("request approval %s: %w", r.OperationID, err)
	}
	rec, ok := s.approvals[r.OperationID]
	if !ok {
		rec = pending(r)
		s.approvals[r.OperationID] = rec
	}
	return cloneApproval(rec), nil
}

// Approval reads one operation's approval, or approval.ErrNotFound.
func (s *Store) Approval(_ context.Context, opID string) (approval.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return approval.Record{}, fmt.Errorf("approval %s: %w", opID, err)
	}
	rec, ok := s.approvals[opID]
	if !ok {
		return approval.Record{}, fmt.Errorf("approval %s: %w", opID, approval.ErrNotFound)
	}
	return cloneApproval(rec), nil
}

// Decide records d when the operation is undecided and advances the
// passkey's counter, atomically: approval.ErrNotFound for a passkey that
// is not the subject's, ErrRevoked for a revoked one, ErrSignCount when
// the counter does not advance (approval.SignCountAdvances),
// ErrAlreadyDecided (with the standing record, and the counter left as
// it was) when a decision stands.
func (s *Store) Decide(_ context.Context, d approval.Decided) (approval.Record, error) {
	r := d.Request
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, err)
	}
	pk, err := s.usablePasskey(d.CredentialID, d.ApproverName(), d.SignCount)
	if err != nil {
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, err)
	}
	rec, asked := s.approvals[r.OperationID]
	if !asked {
		rec = pending(r)
	}
	rec, err = approval.Apply(cloneApproval(rec), d)
	if err != nil {
		return rec, fmt.Errorf("decide %s: %w", r.OperationID, err)
	}
	rec = cloneApproval(rec)
	rec.Statement, rec.Evidence = bytes.Clone(rec.Statement), bytes.Clone(rec.Evidence)
	s.approvals[r.OperationID] = rec
	pk.SignCount, pk.LastUsedAt = d.SignCount, r.At
	s.passkeys[pk.ID] = pk
	return cloneApproval(rec), nil
}

// usablePasskey is passkey id when it is subject's, not revoked, and count
// advances its counter (approval.SignCountAdvances): approval.ErrNotFound,
// ErrRevoked or ErrSignCount otherwise (the caller holds the lock).
func (s *Store) usablePasskey(id, subject string, count uint32) (approval.Passkey, error) {
	pk, ok := s.passkeys[id]
	switch {
	case !ok || pk.Subject != subject:
		return pk, approval.ErrNotFound
	case !pk.RevokedAt.IsZero():
		return pk, approval.ErrRevoked
	case !approval.SignCountAdvances(pk.SignCount, count):
		return pk, approval.ErrSignCount
	}
	return pk, nil
}

// advancePasskey moves passkey id's counter to count, used at at, when
// usablePasskey allows it (the caller holds the lock).
func (s *Store) advancePasskey(id, subject string, count uint32, at time.Time) error {
	pk, err := s.usablePasskey(id, subject, count)
	if err != nil {
		return err
	}
	pk.SignCount, pk.LastUsedAt = count, at
	s.passkeys[id] = pk
	return nil
}

// Approvals lists up to limit approvals (approval.DefaultListLimit when
// not positive) in state (every state when empty), newest first.
func (s *Store) Approvals(_ context.Context, state approval.State, limit int) ([]approval.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	if limit <= 0 {
		limit = approval.DefaultListLimit
	}
	var out []approval.Record
	for _, rec := range s.approvals {
		if state == "" || rec.State == state {
			out = append(out, cloneApproval(rec))
		}
	}
	slices.SortFunc(out, func(a, b approval.Record) int {
		return cmp.Or(b.RequestedAt.Compare(a.RequestedAt), cmp.Compare(a.OperationID, b.OperationID))
	})
	return out[:min(limit, len(out))], nil
}

// PayeeKnown reports whether subject completed (DONE) an operation of
// scope whose bound payee_id is payee, and the store still holds it.
func (s *Store) PayeeKnown(_ context.Context, subject, scope, payee string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return false, fmt.Errorf("payee known: %w", err)
	}
	return s.payeeKnown(subject, scope, payee), nil
}

// payeeKnown is PayeeKnown's answer (the caller holds the lock).
func (s *Store) payeeKnown(subject, scope, payee string) bool {
	for _, rec := range s.records {
		if rec.Subject == subject && rec.Scope == scope && rec.State == operation.StateDone && payeeOf(rec.BoundParams) == payee {
			return true
		}
	}
	return false
}

// payeeOf is the text of bound's payee_id, as PostgreSQL's ->> reads it
// ("" when there is none).
func payeeOf(bound json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(bound, &fields) != nil {
		return ""
	}
	raw, ok := fields["payee_id"]
	if !ok {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	return string(raw) // a number or a literal is its own text
}

// CreateInvite stores a new enrolment invite; a token stored already is an
// error.
func (s *Store) CreateInvite(_ context.Context, inv approval.Invite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return fmt.Errorf("create invite: %w", err)
	}
	if _, ok := s.invites[inv.TokenSHA256]; ok {
		return errors.New("create invite: the token exists")
	}
	inv.Session, inv.Roles = nil, slices.Clone(inv.Roles)
	s.invites[inv.TokenSHA256] = &invite{Invite: inv}
	return nil
}

// Invite reads a usable invite (unexpired at now, unused), or
// approval.ErrInviteInvalid.
func (s *Store) Invite(_ context.Context, tokenSHA256 string, now time.Time) (approval.Invite, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return approval.Invite{}, fmt.Errorf("invite: %w", err)
	}
	inv, ok := s.invites[tokenSHA256]
	if !ok || !inv.usable(now) {
		return approval.Invite{}, approval.ErrInviteInvalid
	}
	out := inv.Invite
	out.Session = bytes.Clone(inv.Session)
	return out, nil
}

// BeginEnrolment keeps the registration session on a usable invite, or
// answers approval.ErrInviteInvalid.
func (s *Store) BeginEnrolment(_ context.Context, tokenSHA256 string, session json.RawMessage, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return fmt.Errorf("begin enrolment: %w", err)
	}
	inv, ok := s.invites[tokenSHA256]
	if !ok || !inv.usable(now) {
		return approval.ErrInviteInvalid
	}
	inv.Session = bytes.Clone(session)
	return nil
}

// Enrol uses a usable invite of pk.Subject once and stores pk, enrolled
// at now, atomically: approval.ErrInviteInvalid when the invite is
// unknown, expired, used or another subject's; an error, with the invite
// left unused, when a passkey of pk.ID exists.
func (s *Store) Enrol(_ context.Context, tokenSHA256 string, pk approval.Passkey, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return fmt.Errorf("enrol %s: %w", pk.Subject, err)
	}
	inv, ok := s.invites[tokenSHA256]
	if !ok || !inv.usable(now) || inv.Subject != pk.Subject {
		return approval.ErrInviteInvalid
	}
	if _, taken := s.passkeys[pk.ID]; taken {
		return fmt.Errorf("enrol %s: passkey %s exists", pk.Subject, pk.ID)
	}
	inv.usedAt = now
	s.passkeys[pk.ID] = approval.Passkey{ID: pk.ID, Subject: pk.Subject, Roles: slices.Clone(inv.Roles),
		Credential: bytes.Clone(pk.Credential), SignCount: pk.SignCount, CreatedAt: now, EnrolTraceID: pk.EnrolTraceID}
	return nil
}

// PasskeysWithRole lists the active passkeys enrolled with role, by
// subject, oldest first.
func (s *Store) PasskeysWithRole(ctx context.Context, role string) ([]approval.Passkey, error) {
	all, err := s.Passkeys(ctx, "", false)
	if err != nil {
		return nil, err
	}
	var out []approval.Passkey
	for _, pk := range all {
		if slices.Contains(pk.Roles, role) {
			out = append(out, pk)
		}
	}
	return out, nil
}

// Passkeys lists subject's passkeys (every subject's when empty) by
// subject, oldest first; revoked ones only when withRevoked.
func (s *Store) Passkeys(_ context.Context, subject string, withRevoked bool) ([]approval.Passkey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return nil, fmt.Errorf("passkeys: %w", err)
	}
	var out []approval.Passkey
	for _, pk := range s.passkeys {
		if (subject == "" || pk.Subject == subject) && (withRevoked || pk.RevokedAt.IsZero()) {
			pk.Credential, pk.Roles = bytes.Clone(pk.Credential), slices.Clone(pk.Roles)
			out = append(out, pk)
		}
	}
	slices.SortFunc(out, func(a, b approval.Passkey) int {
		return cmp.Or(cmp.Compare(a.Subject, b.Subject), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Revoke revokes a passkey: approval.ErrNotFound, or approval.ErrRevoked
// with the passkey when it was revoked already (the first revocation
// stands).
func (s *Store) Revoke(_ context.Context, r approval.Revocation) (approval.Passkey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return approval.Passkey{}, fmt.Errorf("revoke %s: %w", r.ID, err)
	}
	pk, ok := s.passkeys[r.ID]
	switch {
	case !ok:
		return approval.Passkey{}, fmt.Errorf("revoke %s: %w", r.ID, approval.ErrNotFound)
	case !pk.RevokedAt.IsZero():
		pk.Credential = bytes.Clone(pk.Credential)
		return pk, fmt.Errorf("revoke %s: %w", r.ID, approval.ErrRevoked)
	}
	pk.RevokedAt, pk.RevokedBy, pk.RevokeTraceID = r.At, r.By, r.TraceID
	s.passkeys[r.ID] = pk
	pk.Credential = bytes.Clone(pk.Credential)
	return pk, nil
}
