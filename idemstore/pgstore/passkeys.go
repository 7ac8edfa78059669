package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncegate/oncegate/approval"
)

// passkeyColumns are the columns scanPasskey reads, in order.
const passkeyColumns = `id, subject, roles, credential, sign_count, created_at, enrol_trace_id, last_used_at, revoked_at, revoked_by, revoke_trace_id`

// scanPasskey reads one row of passkeyColumns.
func scanPasskey(row pgx.Row) (approval.Passkey, error) {
	var pk approval.Passkey
	var cred []byte
	var count int64
	var lastUsed, revoked *time.Time
	if err := row.Scan(&pk.ID, &pk.Subject, &pk.Roles, &cred, &count, &pk.CreatedAt, &pk.EnrolTraceID, &lastUsed, &revoked,
		&pk.RevokedBy, &pk.RevokeTraceID); err != nil {
		return approval.Passkey{}, err
	}
	if len(pk.Roles) == 0 {
		pk.Roles = nil
	}
	pk.Credential = json.RawMessage(cred)
	pk.SignCount = uint32(count)
	if lastUsed != nil {
		pk.LastUsedAt = *lastUsed
	}
	if revoked != nil {
		pk.RevokedAt = *revoked
	}
	return pk, nil
}

// CreateInvite stores a new enrolment invite.
func (s *Store) CreateInvite(ctx context.Context, inv approval.Invite) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO passkey_invite (token_sha256, subject, created_by, created_at, expires_at, trace_id, roles)
		VALUES ($1, $2, $3, now(), $4, $5, $6)`, inv.TokenSHA256, inv.Subject, inv.CreatedBy, inv.ExpiresAt, inv.TraceID, rolesOf(inv.Roles))
	if err != nil {
		return fmt.Errorf("create invite: %w", approvalError(err))
	}
	return nil
}

// Invite reads a usable invite: unexpired at now and unused.
func (s *Store) Invite(ctx context.Context, tokenSHA256 string, now time.Time) (approval.Invite, error) {
	var inv approval.Invite
	var session []byte
	err := s.pool.QueryRow(ctx, `SELECT token_sha256, subject, created_by, expires_at, session, trace_id, roles FROM passkey_invite
		WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at > $2`, tokenSHA256, now).
		Scan(&inv.TokenSHA256, &inv.Subject, &inv.CreatedBy, &inv.ExpiresAt, &session, &inv.TraceID, &inv.Roles)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return approval.Invite{}, approval.ErrInviteInvalid
	case err != nil:
		return approval.Invite{}, fmt.Errorf("invite: %w", approvalError(err))
	}
	if len(session) > 0 {
		inv.Session = session
	}
	if len(inv.Roles) == 0 {
		inv.Roles = nil
	}
	return inv, nil
}

// BeginEnrolment keeps the registration session on a usable invite.
func (s *Store) BeginEnrolment(ctx context.Context, tokenSHA256 string, session json.RawMessage, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE passkey_invite SET session = $2
		WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at > $3`, tokenSHA256, string(session), now)
	switch {
	case err != nil:
		return fmt.Errorf("begin enrolment: %w", approvalError(err))
	case tag.RowsAffected() == 0:
		return approval.ErrInviteInvalid
	}
	return nil
}

// Enrol uses the invite once and stores the passkey, in one transaction.
func (s *Store) Enrol(ctx context.Context, tokenSHA256 string, pk approval.Passkey, now time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE passkey_invite SET used_at = $2, passkey_id = $3
			WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at > $2 AND subject = $4`, tokenSHA256, now, pk.ID, pk.Subject)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return approval.ErrInviteInvalid
		}
		// The passkey has the roles its invite named.
		_, err = tx.Exec(ctx, `INSERT INTO passkey (id, subject, credential, sign_count, created_at, enrol_trace_id, roles)
			SELECT $1, $2, $3, $4, $5, $6, roles FROM passkey_invite WHERE token_sha256 = $7`,
			pk.ID, pk.Subject, string(pk.Credential), int64(pk.SignCount), now, pk.EnrolTraceID, tokenSHA256)
		return err
	})
	switch {
	case errors.Is(err, approval.ErrInviteInvalid):
		return err
	case err != nil:
		return fmt.Errorf("enrol %s: %w", pk.Subject, approvalError(err))
	}
	return nil
}

// Passkeys lists subject's passkeys (every subject's when empty), oldest
// first; revoked ones only when withRevoked.
func (s *Store) Passkeys(ctx context.Context, subject string, withRevoked bool) ([]approval.Passkey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+passkeyColumns+` FROM passkey
		WHERE ($1 = '' OR subject = $1) AND ($2 OR revoked_at IS NULL) ORDER BY subject, created_at, id`, subject, withRevoked)
	if err != nil {
		return nil, fmt.Errorf("passkeys: %w", approvalError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (approval.Passkey, error) { return scanPasskey(row) })
	if err != nil {
		return nil, fmt.Errorf("passkeys: %w", approvalError(err))
	}
	return out, nil
}

// PasskeysWithRole lists the active passkeys enrolled with role, by
// subject, oldest first.
func (s *Store) PasskeysWithRole(ctx context.Context, role string) ([]approval.Passkey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+passkeyColumns+` FROM passkey
		WHERE roles @> ARRAY[$1::text] AND revoked_at IS NULL ORDER BY subject, created_at, id`, role)
	if err != nil {
		return nil, fmt.Errorf("passkeys with role %s: %w", role, approvalError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (approval.Passkey, error) { return scanPasskey(row) })
	if err != nil {
		return nil, fmt.Errorf("passkeys with role %s: %w", role, approvalError(err))
	}
	return out, nil
}

// rolesOf is roles as a text[] value (never NULL).
func rolesOf(roles []string) []string {
	if roles == nil {
		return []string{}
	}
	return roles
}

// Revoke revokes a passkey: approval.ErrNotFound, or approval.ErrRevoked
// with the passkey when it was revoked already.
func (s *Store) Revoke(ctx context.Context, r approval.Revocation) (approval.Passkey, error) {
	pk, err := scanPasskey(s.pool.QueryRow(ctx, `UPDATE passkey SET revoked_at = $2, revoked_by = $3, revoke_trace_id = $4
		WHERE id = $1 AND revoked_at IS NULL RETURNING `+passkeyColumns, r.ID, r.At, r.By, r.TraceID))
	if err == nil {
		return pk, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return approval.Passkey{}, fmt.Errorf("revoke %s: %w", r.ID, approvalError(err))
	}
	pk, err = scanPasskey(s.pool.QueryRow(ctx, `SELECT `+passkeyColumns+` FROM passkey WHERE id = $1`, r.ID))
	if err != nil {
		return approval.Passkey{}, fmt.Errorf("revoke %s: %w", r.ID, approvalError(err))
	}
	return pk, fmt.Errorf("revoke %s: %w", r.ID, approval.ErrRevoked)
}
