package history

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what the readers below need of a pgx pool or connection.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Executions reads, from the downstream simulator's database, one
// KindExecute event per side effect it recorded for each operation of ids
// (by Idempotency-Key or client_reference, what GET /_sim/executions
// counts), at the time the record was made; a payout whose record says
// failed is NoEffect.
func Executions(ctx context.Context, sim Querier, ids []string) ([]Event, error) {
	rows, err := sim.Query(ctx, `
		SELECT coalesce(idempotency_key, client_reference), created_at, false FROM sim_transfer
			WHERE idempotency_key = ANY($1) OR client_reference = ANY($1)
		UNION ALL
		SELECT coalesce(idempotency_key, client_reference), created_at, status = 'failed' FROM sim_payout
			WHERE idempotency_key = ANY($1) OR client_reference = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("history: read executions: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var id string
		var at time.Time
		var noEffect bool
		if err := rows.Scan(&id, &at, &noEffect); err != nil {
			return nil, fmt.Errorf("history: read executions: %w", err)
		}
		out = append(out, Event{Op: id, Client: ClientDownstream, Kind: KindExecute, Call: at.UnixNano(), Return: at.UnixNano(), NoEffect: noEffect})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read executions: %w", err)
	}
	return out, nil
}

// Finals reads the truth's record (write_record) of each operation of ids
// as a KindFinal event at now; an operation without a record is FinalNone.
func Finals(ctx context.Context, truth Querier, ids []string, now time.Time) ([]Event, error) {
	rows, err := truth.Query(ctx, `SELECT idem_key, state, result_ref, failure_kind FROM write_record WHERE idem_key = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("history: read the truth: %w", err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	var out []Event
	for rows.Next() {
		e := Event{Client: ClientAudit, Kind: KindFinal, Call: now.UnixNano(), Return: now.UnixNano()}
		if err := rows.Scan(&e.Op, &e.Status, &e.ResultRef, &e.FailureKind); err != nil {
			return nil, fmt.Errorf("history: read the truth: %w", err)
		}
		seen[e.Op] = true
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read the truth: %w", err)
	}
	for _, id := range ids {
		if !seen[id] {
			out = append(out, Event{Op: id, Client: ClientAudit, Kind: KindFinal, Status: FinalNone, Call: now.UnixNano(), Return: now.UnixNano()})
		}
	}
	return out, nil
}
