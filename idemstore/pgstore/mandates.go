package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/mandate"
)

// The truth keeps the standing mandates and their reservations (migration
// 00014); the reservation itself is claim_operation's (Acquire).
var _ mandate.Store = (*Store)(nil)

// mandateError translates a pgx error of the mandate tables: pgx.ErrNoRows
// is mandate.ErrNotFound, an unreachable PostgreSQL wraps
// idemstore.ErrUnavailable.
func mandateError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return mandate.ErrNotFound
	}
	return idemstore.Unavailable(err, pgDown)
}

// mandateArgs are claim_operation's mandate arguments of u (all nil without one).
func mandateArgs(u *mandate.Use) (id, amount, currency, payee any) {
	if u == nil {
		return nil, nil, nil, nil
	}
	return u.MandateID, u.Amount.Text('f'), u.Currency, u.Payee
}

// mandateColumns are the columns scanMandate reads from `mandate m`, the
// usage of its unreleased reservations last.
const mandateColumns = `m.id, m.subject, m.actions, m.currency, m.max_per_operation::text, m.max_total::text, m.max_count,
	m.payees, m.not_before, m.expires_at, m.description, m.statement_sha256, m.state, m.proposed_at, m.propose_trace_id,
	m.signed_at, m.credential_id, m.evidence, m.evidence_sha256, m.sign_trace_id, m.revoked_at, m.revoked_by, m.revoke_trace_id,
	u.used::text, u.n
	FROM mandate m, LATERAL (SELECT coalesce(sum(r.amount), 0) AS used, count(*) AS n FROM mandate_reservation r
		WHERE r.mandate_id = m.id AND r.released_at IS NULL) u`

// scanMandate reads one row of mandateColumns.
func scanMandate(row pgx.Row) (mandate.Mandate, error) {
	var m mandate.Mandate
	var perOp, total, used string
	var payees []string
	var signed, revoked *time.Time
	var n int64
	if err := row.Scan(&m.ID, &m.Subject, &m.Actions, &m.Currency, &perOp, &total, &m.MaxCount, &payees, &m.NotBefore,
		&m.ExpiresAt, &m.Description, &m.StatementSHA256, &m.State, &m.ProposedAt, &m.ProposeTraceID, &signed,
		&m.CredentialID, &m.Evidence, &m.EvidenceSHA256, &m.SignTraceID, &revoked, &m.RevokedBy, &m.RevokeTraceID,
		&used, &n); err != nil {
		return mandate.Mandate{}, err
	}
	m.Payees, m.PayeesKnown, m.UsedCount = payees, payees == nil, int(n)
	if signed != nil {
		m.SignedAt = *signed
	}
	if revoked != nil {
		m.RevokedAt = *revoked
	}
	for dst, text := range map[*apd.Decimal]string{&m.MaxPerOperation: perOp, &m.MaxTotal: total, &m.Used: used} {
		if _, _, err := dst.SetString(text); err != nil {
			return mandate.Mandate{}, fmt.Errorf("decimal %q: %w", text, err)
		}
	}
	return m, nil
}

// ProposeMandate records m PROPOSED, with its statement's hash;
// mandate.ErrInvalid when it is not mandate.Sane.
func (s *Store) ProposeMandate(ctx context.Context, m mandate.Mandate) (mandate.Mandate, error) {
	if err := mandate.Sane(m); err != nil {
		return mandate.Mandate{}, fmt.Errorf("propose mandate %s: %w", m.ID, err)
	}
	m.State, m.StatementSHA256 = mandate.StateProposed, mandate.StatementSHA256(m)
	var payees []string
	if !m.PayeesKnown {
		payees = m.Payees
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO mandate (id, subject, actions, currency, max_per_operation, max_total, max_count,
		payees, not_before, expires_at, description, statement_sha256, state, proposed_at, propose_trace_id)
		VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7, $8, $9, $10, $11, $12, 'PROPOSED', $13, $14)`,
		m.ID, m.Subject, m.Actions, m.Currency, m.MaxPerOperation.Text('f'), m.MaxTotal.Text('f'), m.MaxCount, payees,
		m.NotBefore, m.ExpiresAt, m.Description, m.StatementSHA256, m.ProposedAt, m.ProposeTraceID)
	if err != nil {
		return mandate.Mandate{}, fmt.Errorf("propose mandate %s: %w", m.ID, mandateError(err))
	}
	return s.Mandate(ctx, m.ID)
}

// Mandate reads mandate id with its usage, or mandate.ErrNotFound.
func (s *Store) Mandate(ctx context.Context, id string) (mandate.Mandate, error) {
	m, err := scanMandate(s.pool.QueryRow(ctx, `SELECT `+mandateColumns+` WHERE m.id = $1`, id))
	if err != nil {
		return mandate.Mandate{}, fmt.Errorf("mandate %s: %w", id, mandateError(err))
	}
	return m, nil
}

// Mandates lists the mandates f selects, newest first.
func (s *Store) Mandates(ctx context.Context, f mandate.ListFilter) ([]mandate.Mandate, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = mandate.DefaultListLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+mandateColumns+` WHERE ($1 = '' OR m.subject = $1)
		ORDER BY m.proposed_at DESC, m.id LIMIT $2`, f.Subject, limit)
	if err != nil {
		return nil, fmt.Errorf("list mandates: %w", mandateError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (mandate.Mandate, error) { return scanMandate(row) })
	if err != nil {
		return nil, fmt.Errorf("list mandates: %w", mandateError(err))
	}
	return out, nil
}

// ActivateMandate records the signature sg on its PROPOSED, unexpired mandate
// and advances the passkey's counter, in one transaction.
func (s *Store) ActivateMandate(ctx context.Context, sg mandate.Signed) (mandate.Mandate, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		m, err := scanMandate(tx.QueryRow(ctx, `SELECT `+mandateColumns+` WHERE m.id = $1 FOR UPDATE OF m`, sg.ID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return mandate.ErrNotFound
		case err != nil:
			return err
		case m.Subject != sg.Subject:
			return mandate.ErrNotFound
		case m.StateAt(sg.At) != mandate.StateProposed || m.StatementSHA256 != sg.StatementSHA256:
			return mandate.ErrNotProposed
		}
		if err := advancePasskey(ctx, tx, sg.CredentialID, sg.Subject, sg.SignCount, sg.At); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE mandate SET state = 'ACTIVE', signed_at = $2, credential_id = $3, evidence = $4,
			evidence_sha256 = $5, sign_trace_id = $6 WHERE id = $1`,
			sg.ID, sg.At, sg.CredentialID, sg.Evidence, sg.EvidenceSHA256, sg.TraceID)
		return err
	})
	switch {
	case errors.Is(err, mandate.ErrNotFound), errors.Is(err, mandate.ErrNotProposed), errors.Is(err, approval.ErrSignCount),
		errors.Is(err, approval.ErrRevoked), errors.Is(err, approval.ErrNotFound):
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, err)
	case err != nil:
		return mandate.Mandate{}, fmt.Errorf("activate mandate %s: %w", sg.ID, mandateError(err))
	}
	return s.Mandate(ctx, sg.ID)
}

// RevokeMandate revokes a PROPOSED or ACTIVE, unexpired mandate (of r.Subject
// when set). The update takes the mandate's row lock, which every claim
// under it takes too: a claim after the commit reads it REVOKED.
func (s *Store) RevokeMandate(ctx context.Context, r mandate.Revocation) (mandate.Mandate, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE mandate SET state = 'REVOKED', revoked_at = $2, revoked_by = $3, revoke_trace_id = $4
		WHERE id = $1 AND ($5 = '' OR subject = $5) AND state IN ('PROPOSED', 'ACTIVE') AND expires_at > $2`,
		r.ID, r.At, r.By, r.TraceID, r.Subject)
	if err != nil {
		return mandate.Mandate{}, fmt.Errorf("revoke mandate %s: %w", r.ID, mandateError(err))
	}
	m, err := s.Mandate(ctx, r.ID)
	switch {
	case err != nil:
		return mandate.Mandate{}, fmt.Errorf("revoke: %w", err)
	case r.Subject != "" && m.Subject != r.Subject:
		return mandate.Mandate{}, fmt.Errorf("revoke mandate %s: %w", r.ID, mandate.ErrNotFound)
	case tag.RowsAffected() == 0:
		return m, fmt.Errorf("revoke mandate %s: %w", r.ID, mandate.ErrAlreadyEnded)
	}
	return m, nil
}
