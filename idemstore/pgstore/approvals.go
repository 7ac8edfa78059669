package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
)

// The truth also keeps approvals, passkeys and enrolment invites
// (approval.Store): they are evidence, and live beside the records they
// approve (migrations 00006 and 00007).
var _ approval.Store = (*Store)(nil)

// approvalError translates a pgx error of the approval tables:
// pgx.ErrNoRows is approval.ErrNotFound, an unreachable PostgreSQL wraps
// idemstore.ErrUnavailable.
func approvalError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return approval.ErrNotFound
	}
	return idemstore.Unavailable(err, pgDown)
}

// approvalColumns are the columns scanApproval reads, in order.
const approvalColumns = `operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state,
	requested_at, decided_at, credential_id, statement, evidence, evidence_sha256, trace_id`

// scanApproval reads one row of approvalColumns.
func scanApproval(row pgx.Row) (approval.Record, error) {
	var r approval.Record
	var bound, statement, evidence []byte
	var reasons []string
	var decidedAt *time.Time
	if err := row.Scan(&r.OperationID, &r.Subject, &r.Scope, &r.ParamHash, &bound, &reasons, &r.ExpiresAt, &r.State,
		&r.RequestedAt, &decidedAt, &r.CredentialID, &statement, &evidence, &r.EvidenceSHA256, &r.TraceID); err != nil {
		return approval.Record{}, err
	}
	if len(bound) > 0 {
		r.BoundParams = bound
	}
	if len(statement) > 0 {
		r.Statement = statement
	}
	if len(evidence) > 0 {
		r.Evidence = evidence
	}
	r.Reasons = make([]approval.Reason, len(reasons))
	for i, code := range reasons {
		r.Reasons[i] = approval.Reason(code)
	}
	if decidedAt != nil {
		r.DecidedAt = *decidedAt
	}
	return r, nil
}

func reasonCodes(rs []approval.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// RequestApproval records r PENDING unless the operation's approval is
// recorded already, and returns the record as it stands.
func (s *Store) RequestApproval(ctx context.Context, r approval.Request) (approval.Record, error) {
	row := s.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO approval (operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state, requested_at, trace_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'PENDING', $8, $9)
			ON CONFLICT (operation_id) DO NOTHING
			RETURNING `+approvalColumns+`)
		SELECT `+approvalColumns+` FROM ins
		UNION ALL
		SELECT `+approvalColumns+` FROM approval WHERE operation_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
		r.OperationID, r.Subject, r.Scope, r.ParamHash, jsonOrNil(r.BoundParams), reasonCodes(r.Reasons), r.ExpiresAt, r.At, r.TraceID)
	rec, err := scanApproval(row)
	if err != nil {
		return approval.Record{}, fmt.Errorf("request approval %s: %w", r.OperationID, approvalError(err))
	}
	return rec, nil
}

// Approval reads one operation's approval, or approval.ErrNotFound.
func (s *Store) Approval(ctx context.Context, opID string) (approval.Record, error) {
	rec, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approval WHERE operation_id = $1`, opID))
	if err != nil {
		return approval.Record{}, fmt.Errorf("approval %s: %w", opID, approvalError(err))
	}
	return rec, nil
}

// Decide records d when the operation is undecided and advances the
// passkey's counter, in one transaction: ErrAlreadyDecided (with the
// standing record), ErrSignCount when the counter does not advance (a
// replay that raced the first use), ErrRevoked for a revoked passkey.
func (s *Store) Decide(ctx context.Context, d approval.Decided) (approval.Record, error) {
	r := d.Request
	var out approval.Record
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var revoked *time.Time
		var count int64
		err := tx.QueryRow(ctx, `SELECT revoked_at, sign_count FROM passkey WHERE id = $1 AND subject = $2 FOR UPDATE`,
			d.CredentialID, r.Subject).Scan(&revoked, &count)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return approval.ErrNotFound
		case err != nil:
			return err
		case revoked != nil:
			return approval.ErrRevoked
		case !approval.SignCountAdvances(uint32(count), d.SignCount):
			return approval.ErrSignCount
		}
		if _, err := tx.Exec(ctx, `UPDATE passkey SET sign_count = $2, last_used_at = $3 WHERE id = $1`,
			d.CredentialID, int64(d.SignCount), r.At); err != nil {
			return err
		}
		row := tx.QueryRow(ctx, `
			INSERT INTO approval (operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state, requested_at,
				decided_at, credential_id, statement, evidence, evidence_sha256, trace_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (operation_id) DO UPDATE SET state = EXCLUDED.state, decided_at = EXCLUDED.decided_at,
				credential_id = EXCLUDED.credential_id, statement = EXCLUDED.statement, evidence = EXCLUDED.evidence,
				evidence_sha256 = EXCLUDED.evidence_sha256, trace_id = EXCLUDED.trace_id,
				bound_params = COALESCE(approval.bound_params, EXCLUDED.bound_params)
			WHERE approval.state = 'PENDING'
			RETURNING `+approvalColumns,
			r.OperationID, r.Subject, r.Scope, r.ParamHash, jsonOrNil(r.BoundParams), reasonCodes(r.Reasons), r.ExpiresAt,
			string(d.State), r.At, d.CredentialID, jsonOrNil(d.Statement), jsonOrNil(d.Evidence), d.EvidenceSHA256, r.TraceID)
		rec, err := scanApproval(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return approval.ErrAlreadyDecided
		}
		out = rec
		return err
	})
	switch {
	case errors.Is(err, approval.ErrAlreadyDecided):
		standing, gerr := s.Approval(ctx, r.OperationID)
		if gerr != nil {
			return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, gerr)
		}
		return standing, fmt.Errorf("decide %s: %w", r.OperationID, approval.ErrAlreadyDecided)
	case errors.Is(err, approval.ErrSignCount), errors.Is(err, approval.ErrRevoked), errors.Is(err, approval.ErrNotFound):
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, err)
	case err != nil:
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, approvalError(err))
	}
	return out, nil
}

// Approvals lists approvals in state (empty: every state), newest first.
func (s *Store) Approvals(ctx context.Context, state approval.State, limit int) ([]approval.Record, error) {
	if limit <= 0 {
		limit = approval.DefaultListLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM approval
		WHERE $1 = '' OR state = $1 ORDER BY requested_at DESC, operation_id LIMIT $2`, string(state), limit)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", approvalError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (approval.Record, error) { return scanApproval(row) })
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", approvalError(err))
	}
	return out, nil
}

// PayeeKnown reports whether subject completed an operation of scope to
// payee that the truth still holds (terminal records are reaped after
// their terminal_ttl: a payee not paid for that long is new again).
func (s *Store) PayeeKnown(ctx context.Context, subject, scope, payee string) (bool, error) {
	var known bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM write_record
		WHERE subject = $1 AND scope = $2 AND state = 'DONE' AND bound_params ->> 'payee_id' = $3)`,
		subject, scope, payee).Scan(&known)
	if err != nil {
		return false, fmt.Errorf("payee known: %w", approvalError(err))
	}
	return known, nil
}
