package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// windowArg is one window as claim_operation and budget_usage read it.
type windowArg struct {
	Scope    string `json:"scope"`
	PeriodUS int64  `json:"period_us"`
	Max      string `json:"max"`
}

// chargeArgs are the SQL arguments of c: the amount, the currency and the
// windows as JSON (all nil without a charge).
func chargeArgs(c *operation.Charge) (amount, currency, windows any, err error) {
	if c == nil {
		return nil, nil, nil, nil
	}
	ws := make([]windowArg, len(c.Windows))
	for i, w := range c.Windows {
		ws[i] = windowArg{Scope: w.Scope, PeriodUS: w.Period.Microseconds(), Max: w.Max.Text('f')}
	}
	raw, err := json.Marshal(ws)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("encode windows: %w", err)
	}
	return c.Amount.Text('f'), c.Currency, string(raw), nil
}

// usageRow is one element of claim_operation's usage.
type usageRow struct {
	Used    string     `json:"used"`
	FreesAt *time.Time `json:"frees_at"`
}

// decodeUsage decodes claim_operation's usage: one entry per window of c.
func decodeUsage(raw []byte, c *operation.Charge) ([]operation.WindowUsage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var rows []usageRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("decode usage: %w", err)
	}
	if c == nil || len(rows) != len(c.Windows) {
		return nil, errors.New("decode usage: not one entry per window")
	}
	out := make([]operation.WindowUsage, len(rows))
	for i, r := range rows {
		if _, _, err := out[i].Used.SetString(r.Used); err != nil {
			return nil, fmt.Errorf("decode usage: used %q: %w", r.Used, err)
		}
		if r.FreesAt != nil {
			out[i].FreesAt = *r.FreesAt
		}
	}
	return out, nil
}

// Usage reads what each window of c holds of subject's reservations in
// c.Currency and when c.Amount would fit it, without locking or writing
// (the preview's warning and the ops view; the claim checks again).
func (s *Store) Usage(ctx context.Context, subject string, c operation.Charge) ([]operation.WindowUsage, error) {
	if len(c.Windows) == 0 {
		return nil, nil
	}
	amount, currency, windows, err := chargeArgs(&c)
	if err != nil {
		return nil, fmt.Errorf("usage %s: %w", subject, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT used::text, frees_at FROM budget_usage($1, $2, $3::numeric, $4::jsonb)`,
		subject, currency, amount, windows)
	if err != nil {
		return nil, fmt.Errorf("usage %s: %w", subject, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (operation.WindowUsage, error) {
		var u operation.WindowUsage
		var used string
		var frees *time.Time
		if err := row.Scan(&used, &frees); err != nil {
			return u, err
		}
		if frees != nil {
			u.FreesAt = *frees
		}
		_, _, err := u.Used.SetString(used)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage %s: %w", subject, interpretError(err))
	}
	return out, nil
}

// Currencies lists the currencies subject holds reservations in since
// since (the ops view of budgets that count every currency).
func (s *Store) Currencies(ctx context.Context, subject string, since time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT currency FROM budget_reservation
		WHERE subject = $1 AND released_at IS NULL AND reserved_at > $2 ORDER BY currency`, subject, since)
	if err != nil {
		return nil, fmt.Errorf("currencies %s: %w", subject, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("currencies %s: %w", subject, interpretError(err))
	}
	return out, nil
}

// ResetBudget starts r.Subject's windows afresh at the database's now and
// returns the reset as recorded.
func (s *Store) ResetBudget(ctx context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO budget_reset (subject, reset_at, reset_by, trace_id) VALUES ($1, now(), $2, $3)
		ON CONFLICT (subject) DO UPDATE SET reset_at = excluded.reset_at, reset_by = excluded.reset_by, trace_id = excluded.trace_id
		RETURNING reset_at`, r.Subject, r.By, r.TraceID).Scan(&r.At)
	if err != nil {
		return idemstore.BudgetReset{}, fmt.Errorf("reset budget %s: %w", r.Subject, interpretError(err))
	}
	return r, nil
}

// LastReset returns subject's last reset, or ErrNotFound.
func (s *Store) LastReset(ctx context.Context, subject string) (idemstore.BudgetReset, error) {
	r := idemstore.BudgetReset{Subject: subject}
	err := s.pool.QueryRow(ctx, `SELECT reset_at, reset_by, trace_id FROM budget_reset WHERE subject = $1`, subject).
		Scan(&r.At, &r.By, &r.TraceID)
	if err != nil {
		return idemstore.BudgetReset{}, fmt.Errorf("last reset %s: %w", subject, interpretError(err))
	}
	return r, nil
}

// Reservation is one operation's reservation as the truth holds it.
type Reservation struct {
	// OperationID is the operation.
	OperationID string
	// Amount is what it reserved.
	Amount apd.Decimal
	// Currency is the amount's currency.
	Currency string
	// ReservedAt is when it was reserved (the claim).
	ReservedAt time.Time
	// ReleasedAt is when it was released; zero while it counts.
	ReleasedAt time.Time
	// ReleasedBy says why (a failure kind); empty while it counts.
	ReleasedBy string
}

// GetReservation reads opID's reservation, or ErrNotFound.
func (s *Store) GetReservation(ctx context.Context, opID string) (Reservation, error) {
	r := Reservation{OperationID: opID}
	var amount string
	var released *time.Time
	err := s.pool.QueryRow(ctx, `SELECT amount::text, currency, reserved_at, released_at, released_by
		FROM budget_reservation WHERE operation_id = $1`, opID).Scan(&amount, &r.Currency, &r.ReservedAt, &released, &r.ReleasedBy)
	if err != nil {
		return Reservation{}, fmt.Errorf("reservation %s: %w", opID, interpretError(err))
	}
	if released != nil {
		r.ReleasedAt = *released
	}
	if _, _, err := r.Amount.SetString(amount); err != nil {
		return Reservation{}, fmt.Errorf("reservation %s: amount %q: %w", opID, amount, err)
	}
	return r, nil
}
