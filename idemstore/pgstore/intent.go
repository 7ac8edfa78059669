package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncegate/oncegate/idemstore"
)

var _ idemstore.Truth = (*Store)(nil)

// epochChannel is the NOTIFY channel of fast_path_epoch's changes; the
// payload is "<epoch>|<leased_until, unix microseconds>".
const epochChannel = "oncegate_fast_path_epoch"

// RecentIntents returns the newest record of each intent (scope,
// param_hash) of subject created at or after since, in any state: what a
// warm-up writes into the fast path's recent-intent index.
func (s *Store) RecentIntents(ctx context.Context, subject string, since time.Time) ([]idemstore.IntentEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (scope, param_hash) scope, param_hash, idem_key, created_at
		FROM write_record WHERE subject = $1 AND created_at >= $2
		ORDER BY scope, param_hash, created_at DESC, id DESC`, subject, since)
	if err != nil {
		return nil, fmt.Errorf("recent intents %s: %w", subject, interpretError(err))
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (idemstore.IntentEntry, error) {
		var e idemstore.IntentEntry
		err := row.Scan(&e.Scope, &e.ParamHash, &e.OperationID, &e.CreatedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("recent intents %s: %w", subject, interpretError(err))
	}
	return entries, nil
}

// FastPathEpoch reads fast_path_epoch.
func (s *Store) FastPathEpoch(ctx context.Context) (idemstore.FastPathEpoch, error) {
	var e idemstore.FastPathEpoch
	if err := s.pool.QueryRow(ctx, `SELECT epoch, leased_until FROM fast_path_epoch`).Scan(&e.Value, &e.LeasedUntil); err != nil {
		return idemstore.FastPathEpoch{}, fmt.Errorf("fast path epoch: %w", interpretError(err))
	}
	return e, nil
}

// LeaseFastPath moves the epoch on and extends the lease to at least d from
// the database's now, and notifies the watchers, in one statement.
func (s *Store) LeaseFastPath(ctx context.Context, d time.Duration) (idemstore.FastPathEpoch, error) {
	var e idemstore.FastPathEpoch
	err := s.pool.QueryRow(ctx, `WITH moved AS (
			UPDATE fast_path_epoch SET epoch = epoch + 1,
				leased_until = greatest(leased_until, now() + $1 * interval '1 microsecond')
			RETURNING epoch, leased_until)
		SELECT epoch, leased_until, pg_notify($2, epoch || '|' || (extract(epoch FROM leased_until) * 1000000)::bigint)
		FROM moved`, d.Microseconds(), epochChannel).Scan(&e.Value, &e.LeasedUntil, nil)
	if err != nil {
		return idemstore.FastPathEpoch{}, fmt.Errorf("lease the fast path: %w", interpretError(err))
	}
	return e, nil
}

// WatchFastPathEpoch listens for the epoch's changes on a connection of its
// own (outside the pool, which it would hold for good): seen gets the
// current epoch, then every change, until ctx ends (nil) or the connection
// fails (its error; the caller reconnects).
func (s *Store) WatchFastPathEpoch(ctx context.Context, seen func(idemstore.FastPathEpoch)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("watch the fast path epoch: %w", interpretError(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+epochChannel); err != nil {
		return fmt.Errorf("watch the fast path epoch: %w", interpretError(err))
	}
	var e idemstore.FastPathEpoch
	if err := conn.QueryRow(ctx, `SELECT epoch, leased_until FROM fast_path_epoch`).Scan(&e.Value, &e.LeasedUntil); err != nil {
		return fmt.Errorf("watch the fast path epoch: %w", interpretError(err))
	}
	seen(e)
	for {
		n, err := conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("watch the fast path epoch: %w", interpretError(err))
		}
		e, err := parseEpoch(n.Payload)
		if err != nil {
			return fmt.Errorf("watch the fast path epoch: %w", err)
		}
		seen(e)
	}
}

// parseEpoch reads a NOTIFY payload "<epoch>|<leased_until µs>".
func parseEpoch(payload string) (idemstore.FastPathEpoch, error) {
	a, b, ok := strings.Cut(payload, "|")
	epoch, errA := strconv.ParseInt(a, 10, 64)
	until, errB := strconv.ParseInt(b, 10, 64)
	if !ok || errA != nil || errB != nil {
		return idemstore.FastPathEpoch{}, fmt.Errorf("malformed epoch notification %q", payload)
	}
	return idemstore.FastPathEpoch{Value: epoch, LeasedUntil: time.UnixMicro(until)}, nil
}
