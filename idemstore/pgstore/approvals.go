package pgstore

import (
	"context"
	"encoding/json"
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

// approvalBase are the approval row's own columns, in scanApproval's order.
const approvalBase = `operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state,
	requested_at, decided_at, credential_id, statement, evidence, evidence_sha256, trace_id, approvers, given`

// approvalColumns are the columns scanApproval reads from `approval a`:
// the row's own and its decisions, as one JSON array in the order they came.
const approvalColumns = approvalBase + `, (SELECT coalesce(jsonb_agg(jsonb_build_object('approver', d.approver,
	'state', d.state, 'decided_at', d.decided_at, 'credential_id', d.credential_id, 'evidence_sha256', d.evidence_sha256,
	'trace_id', d.trace_id) ORDER BY d.decided_at, d.approver), '[]'::jsonb)
	FROM approval_decision d WHERE d.operation_id = a.operation_id)`

// scanApproval reads one row of approvalColumns.
func scanApproval(row pgx.Row) (approval.Record, error) {
	var r approval.Record
	var bound, statement, evidence, approvers, decisions []byte
	var reasons []string
	var decidedAt *time.Time
	if err := row.Scan(&r.OperationID, &r.Subject, &r.Scope, &r.ParamHash, &bound, &reasons, &r.ExpiresAt, &r.State,
		&r.RequestedAt, &decidedAt, &r.CredentialID, &statement, &evidence, &r.EvidenceSHA256, &r.TraceID,
		&approvers, &r.Given, &decisions); err != nil {
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
	if len(approvers) > 0 {
		if err := json.Unmarshal(approvers, &r.Approvers); err != nil {
			return approval.Record{}, fmt.Errorf("approvers of %s: %w", r.OperationID, err)
		}
	}
	r.Needed = r.Approvers.Needed()
	if err := json.Unmarshal(decisions, &r.Decisions); err != nil {
		return approval.Record{}, fmt.Errorf("decisions of %s: %w", r.OperationID, err)
	}
	if len(r.Decisions) == 0 {
		r.Decisions = nil
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

// approversJSON is a's column value (nil: the subject alone).
func approversJSON(a *approval.Approvers) any {
	if a == nil {
		return nil
	}
	raw, _ := json.Marshal(a) // plain fields: never fails
	return string(raw)
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
			INSERT INTO approval (operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state, requested_at,
				trace_id, approvers)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'PENDING', $8, $9, $10)
			ON CONFLICT (operation_id) DO NOTHING
			RETURNING `+approvalBase+`)
		SELECT `+approvalBase+`, '[]'::jsonb FROM ins
		UNION ALL
		SELECT `+approvalColumns+` FROM approval a WHERE operation_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
		r.OperationID, r.Subject, r.Scope, r.ParamHash, jsonOrNil(r.BoundParams), reasonCodes(r.Reasons), r.ExpiresAt, r.At,
		r.TraceID, approversJSON(r.Approvers))
	rec, err := scanApproval(row)
	if err != nil {
		return approval.Record{}, fmt.Errorf("request approval %s: %w", r.OperationID, approvalError(err))
	}
	return rec, nil
}

// Approval reads one operation's approval, or approval.ErrNotFound.
func (s *Store) Approval(ctx context.Context, opID string) (approval.Record, error) {
	rec, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approval a WHERE operation_id = $1`, opID))
	if err != nil {
		return approval.Record{}, fmt.Errorf("approval %s: %w", opID, approvalError(err))
	}
	return rec, nil
}

// Decide records d, one person's decision, when the operation is
// undecided and that person has not decided it, and advances the
// passkey's counter, in one transaction (approval.Apply tallies): the
// approval row locked, the decision's row, the row's state and count.
// ErrAlreadyDecided (with the standing record), ErrSignCount when the
// counter does not advance (a replay that raced the first use),
// ErrRevoked for a revoked passkey, ErrNotFound for a passkey that is not
// the approver's.
func (s *Store) Decide(ctx context.Context, d approval.Decided) (approval.Record, error) {
	r := d.Request
	var out approval.Record
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := advancePasskey(ctx, tx, d.CredentialID, d.ApproverName(), d.SignCount, r.At); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO approval (operation_id, subject, scope, param_hash, bound_params, reasons, expires_at, state, requested_at,
				trace_id, approvers)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'PENDING', $8, $9, $10)
			ON CONFLICT (operation_id) DO NOTHING`,
			r.OperationID, r.Subject, r.Scope, r.ParamHash, jsonOrNil(r.BoundParams), reasonCodes(r.Reasons), r.ExpiresAt, r.At,
			r.TraceID, approversJSON(r.Approvers)); err != nil {
			return err
		}
		standing, err := scanApproval(tx.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approval a
			WHERE operation_id = $1 FOR UPDATE`, r.OperationID))
		if err != nil {
			return err
		}
		rec, err := approval.Apply(standing, d)
		if err != nil {
			out = standing
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO approval_decision (operation_id, approver, state, decided_at, credential_id,
			evidence, evidence_sha256, trace_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.OperationID, d.ApproverName(), string(d.State), r.At, d.CredentialID, jsonOrNil(d.Evidence), d.EvidenceSHA256,
			r.TraceID); err != nil {
			return err
		}
		var decidedAt *time.Time
		if !rec.DecidedAt.IsZero() {
			decidedAt = &rec.DecidedAt
		}
		_, err = tx.Exec(ctx, `UPDATE approval SET state = $2, given = $3, decided_at = $4, credential_id = $5,
			statement = $6, evidence = $7, evidence_sha256 = $8, trace_id = $9, bound_params = $10 WHERE operation_id = $1`,
			r.OperationID, string(rec.State), rec.Given, decidedAt, rec.CredentialID, jsonOrNil(rec.Statement),
			jsonOrNil(rec.Evidence), rec.EvidenceSHA256, rec.TraceID, jsonOrNil(rec.BoundParams))
		out = rec
		return err
	})
	switch {
	case errors.Is(err, approval.ErrAlreadyDecided):
		return out, fmt.Errorf("decide %s: %w", r.OperationID, approval.ErrAlreadyDecided)
	case errors.Is(err, approval.ErrSignCount), errors.Is(err, approval.ErrRevoked), errors.Is(err, approval.ErrNotFound):
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, err)
	case err != nil:
		return approval.Record{}, fmt.Errorf("decide %s: %w", r.OperationID, approvalError(err))
	}
	return out, nil
}

// advancePasskey locks passkey id of subject and moves its signature
// counter to count, used at at, in tx: approval.ErrNotFound when it is not
// subject's, approval.ErrRevoked when revoked, approval.ErrSignCount when
// count does not advance (approval.SignCountAdvances). Every passkey
// decision (an approval, a mandate's signature) takes it in its own
// transaction, so a replayed assertion cannot decide twice.
func advancePasskey(ctx context.Context, tx pgx.Tx, id, subject string, count uint32, at time.Time) error {
	var revoked *time.Time
	var stored int64
	err := tx.QueryRow(ctx, `SELECT revoked_at, sign_count FROM passkey WHERE id = $1 AND subject = $2 FOR UPDATE`,
		id, subject).Scan(&revoked, &stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return approval.ErrNotFound
	case err != nil:
		return err
	case revoked != nil:
		return approval.ErrRevoked
	case !approval.SignCountAdvances(uint32(stored), count):
		return approval.ErrSignCount
	}
	_, err = tx.Exec(ctx, `UPDATE passkey SET sign_count = $2, last_used_at = $3 WHERE id = $1`, id, int64(count), at)
	return err
}

// Approvals lists approvals in state (empty: every state), newest first.
func (s *Store) Approvals(ctx context.Context, state approval.State, limit int) ([]approval.Record, error) {
	if limit <= 0 {
		limit = approval.DefaultListLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM approval a
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
