package pgstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/puddle/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newStore opens a store on a fresh database, closed at the end of t.
func newStore(t *testing.T) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), testenv.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// sharedStore gives a suite's subtests one database, opened by the first
// that asks (they use random keys and subjects).
func sharedStore(t *testing.T) func(*testing.T) *pgstore.Store {
	var once sync.Once
	var s *pgstore.Store
	return func(*testing.T) *pgstore.Store {
		once.Do(func() { s = newStore(t) })
		return s
	}
}

var (
	_ storetest.ApprovalStore = (*pgstore.Store)(nil)
	_ storetest.BudgetStore   = (*pgstore.Store)(nil)
	_ storetest.MandateStore  = (*pgstore.Store)(nil)
)

func TestStore(t *testing.T) {
	t.Parallel()
	shared := sharedStore(t)
	storetest.Exercise(t, func(t *testing.T) idemstore.Store { return shared(t) })
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	shared := sharedStore(t)
	storetest.ExerciseApprovals(t, func(t *testing.T) storetest.ApprovalStore { return shared(t) })
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	shared := sharedStore(t)
	storetest.ExerciseBudgets(t, func(t *testing.T) storetest.BudgetStore { return shared(t) })
}

func TestMandates(t *testing.T) {
	t.Parallel()
	shared := sharedStore(t)
	storetest.ExerciseMandates(t, func(t *testing.T) storetest.MandateStore { return shared(t) })
}

func TestPostgresSpecifics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MigrateIsIdempotent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.NoError(t, s.Migrate(ctx))
		var n int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+pgstore.MigrationTable+` WHERE version_id > 0`).Scan(&n))
		files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
		require.NoError(t, err)
		assert.Equal(t, len(files), n, "every migration applied exactly once")
	})

	t.Run("UniqueCollisionReadsBack", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		assert.True(t, d.TruthFound)
		assert.Equal(t, c.Subject, d.Record.Subject)
		assert.Equal(t, c.FingerprintExp, d.Record.FingerprintExp.Truncate(time.Second).In(c.FingerprintExp.Location()))

		again := c
		again.Owner = "owner-b"
		d, err = s.Acquire(ctx, again)
		require.NoError(t, err, "a collision is never an error")
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, "owner-a", d.Owner)
		assert.Equal(t, operation.StateInFlight, d.Record.State)
		assert.True(t, d.TruthFound)
		assert.False(t, d.ClaimedAt.IsZero())

		var rows int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM write_record WHERE idem_key = $1`, c.OperationID).Scan(&rows))
		assert.Equal(t, 1, rows)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var keys []string
		for i := range 4 {
			c := storetest.NewClaim(t, "owner-a")
			keys = append(keys, c.OperationID)
			_, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			if i == 1 {
				require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
			}
			if i == 2 {
				require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "unknown"}))
			}
		}

		all, err := s.List(ctx, idemstore.ListFilter{})
		require.NoError(t, err)
		require.Len(t, all, 4)
		assert.Equal(t, []string{keys[3], keys[2], keys[1], keys[0]}, recordKeys(all), "newest first")

		inFlight, err := s.List(ctx, idemstore.ListFilter{State: operation.StateInFlight, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{keys[3], keys[0]}, recordKeys(inFlight))

		review, err := s.List(ctx, idemstore.ListFilter{State: operation.StateNeedsReview, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{keys[2]}, recordKeys(review))

		limited, err := s.List(ctx, idemstore.ListFilter{Limit: 2})
		require.NoError(t, err)
		assert.Equal(t, []string{keys[3], keys[2]}, recordKeys(limited))
	})

	t.Run("ListOlderThanAndStateAges", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		old, fresh := storetest.NewClaim(t, "owner-a"), storetest.NewClaim(t, "owner-a")
		for _, c := range []idemstore.Claim{old, fresh} {
			_, err := s.Acquire(ctx, c)
			require.NoError(t, err)
		}
		_, err := s.Pool().Exec(ctx, `UPDATE write_record SET updated_at = now() - interval '10 minutes' WHERE idem_key = $1`, old.OperationID)
		require.NoError(t, err)

		stuck, err := s.List(ctx, idemstore.ListFilter{State: operation.StateInFlight, OlderThan: 5 * time.Minute})
		require.NoError(t, err)
		assert.Equal(t, []string{old.OperationID}, recordKeys(stuck))
		none, err := s.List(ctx, idemstore.ListFilter{State: operation.StateInFlight, OlderThan: time.Hour})
		require.NoError(t, err)
		assert.Empty(t, none)

		ages, err := s.StateAges(ctx)
		require.NoError(t, err)
		require.Len(t, ages, 1, "one action, one non-terminal state")
		assert.Equal(t, operation.StateInFlight, ages[0].State)
		assert.Equal(t, 2, ages[0].Count)
		assert.WithinDuration(t, time.Now().Add(-10*time.Minute), ages[0].Oldest, time.Minute)
	})

	t.Run("BoundParamsAndEvidenceKept", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		c.BoundParams = []byte(`{"amount":12.5,"currency":"USD","payee_id":"p-1"}`)
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "status unavailable"}))
		decided := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
		f := storetest.Failed(c, "owner-a")
		f.ResolvedBy, f.ResolutionNote, f.EvidenceURL, f.ResolvedAt = "ops", "bank says no", "https://tickets.example/1", decided
		require.NoError(t, s.Finalize(ctx, f))

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.JSONEq(t, string(c.BoundParams), string(rec.BoundParams))
		assert.Equal(t, "https://tickets.example/1", rec.EvidenceURL)
		assert.Equal(t, "bank says no", rec.ResolutionNote)
		assert.True(t, decided.Equal(rec.ResolvedAt), "resolved_at %s, want %s", rec.ResolvedAt, decided)
		assert.False(t, rec.CompletedAt.IsZero())
	})

	t.Run("WebhookReceiptRetention", func(t *testing.T) {
		t.Parallel()
		assert.GreaterOrEqual(t, idemstore.WebhookReceiptRetention, 2*catalog.MaxWebhookTolerance)
	})

	t.Run("Reap", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		now := time.Now()

		claim := func(exp time.Time, terminalTTL time.Duration) idemstore.Claim {
			return reapClaim(t, s, exp, terminalTTL)
		}
		finalize := func(c idemstore.Claim, state operation.State) { reapFinalize(t, s, c, state) }

		// terminal_ttl 2h, exp in 1h: reapable after 2h.
		ttlLonger := claim(now.Add(time.Hour), 2*time.Hour)
		finalize(ttlLonger, operation.StateDone)
		// terminal_ttl 1h, exp in 5h: reapable only after exp.
		expLonger := claim(now.Add(5*time.Hour), time.Hour)
		finalize(expLonger, operation.StateFailed)
		// Never reaped, however old: IN_FLIGHT and NEEDS_REVIEW.
		inFlight := claim(now.Add(-time.Hour), time.Minute)
		review := claim(now.Add(-time.Hour), time.Minute)
		require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: review.OperationID, Reason: "unknown"}))

		exists := func(c idemstore.Claim) bool { return storetest.Exists(t, s, c) }

		n, err := s.Reap(ctx, now.Add(90*time.Minute)) // past exp of the first, not its terminal_ttl
		require.NoError(t, err)
		assert.EqualValues(t, 0, n)

		n, err = s.Reap(ctx, now.Add(3*time.Hour)) // past both for the first; the second's exp still ahead
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		assert.False(t, exists(ttlLonger))
		assert.True(t, exists(expLonger))

		n, err = s.Reap(ctx, now.Add(5*time.Hour+time.Minute))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		assert.False(t, exists(expLonger))

		n, err = s.Reap(ctx, now.Add(100*365*24*time.Hour))
		require.NoError(t, err)
		assert.EqualValues(t, 0, n)
		assert.True(t, exists(inFlight))
		assert.True(t, exists(review))

		// A reaped key could be claimed again, but only by a fingerprint
		// before its exp, which the gateway refuses; the store itself allows it.
		d, err := s.Acquire(ctx, ttlLonger)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	})

	t.Run("Unavailable", func(t *testing.T) {
		t.Parallel()
		s, err := pgstore.Open(ctx, testenv.NewDatabase(t))
		require.NoError(t, err)
		s.Close()
		// A closed pool is told by its sentinel, which pgxpool returns as is.
		_, err = s.Get(ctx, "k")
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
		require.ErrorIs(t, err, puddle.ErrClosedPool)
		_, err = s.Acquire(ctx, storetest.NewClaim(t, "owner-a"))
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
		require.ErrorIs(t, s.Ready(ctx), idemstore.ErrUnavailable)

		port := testenv.MustFreePort(t)
		_, err = pgstore.Open(ctx, "postgres://postgres@127.0.0.1:"+strconv.Itoa(port)+"/x?sslmode=disable&connect_timeout=2")
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
	})
}

func recordKeys(recs []idemstore.Record) []string {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.OperationID
	}
	return keys
}

// reapClaim acquires a new claim of owner-a whose fingerprint expires at
// exp and whose outcome is kept terminalTTL.
func reapClaim(t *testing.T, s *pgstore.Store, exp time.Time, terminalTTL time.Duration) idemstore.Claim {
	t.Helper()
	c := storetest.NewClaim(t, "owner-a")
	c.FingerprintExp, c.TerminalTTL = exp, terminalTTL
	_, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
	return c
}

// reapFinalize ends c in state (DONE or FAILED), kept its terminal TTL.
func reapFinalize(t *testing.T, s *pgstore.Store, c idemstore.Claim, state operation.State) {
	t.Helper()
	f := storetest.Done(c, "owner-a")
	if state == operation.StateFailed {
		f = storetest.Failed(c, "owner-a")
	}
	f.TerminalTTL = c.TerminalTTL
	require.NoError(t, s.Finalize(context.Background(), f))
}

// TestReapBounded: a pass deletes exactly min(cap, due) records, leaves the
// rest (reported as the backlog) for the next pass, and repeated passes
// drain it to 0; IN_FLIGHT, NEEDS_REVIEW and not-yet-due records survive
// every pass.
func TestReapBounded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()

	claim := func(exp time.Time, terminalTTL time.Duration) idemstore.Claim {
		return reapClaim(t, s, exp, terminalTTL)
	}
	finalize := func(c idemstore.Claim, state operation.State) { reapFinalize(t, s, c, state) }
	exists := func(c idemstore.Claim) bool { return storetest.Exists(t, s, c) }

	const due = 25
	for i := range due {
		c := claim(now.Add(-time.Hour), time.Minute)
		finalize(c, []operation.State{operation.StateDone, operation.StateFailed}[i%2])
	}
	// Old, but never reaped: their outcome is not known.
	inFlight := claim(now.Add(-48*time.Hour), time.Minute)
	review := claim(now.Add(-48*time.Hour), time.Minute)
	require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: review.OperationID, Reason: "unknown"}))
	// Terminal, but its replay is owed until terminal_ttl (10h) has passed.
	notDue := claim(now.Add(-time.Hour), 10*time.Hour)
	finalize(notDue, operation.StateDone)

	cutoff := now.Add(time.Hour)
	limits := pgstore.ReapLimits{BatchRows: 4, MaxRows: 10}
	for i, want := range []pgstore.ReapResult{
		{Removed: 10, Backlog: 15},
		{Removed: 10, Backlog: 5},
		{Removed: 5, Backlog: 0},
		{Removed: 0, Backlog: 0},
	} {
		got, err := s.ReapBounded(ctx, cutoff, limits)
		require.NoError(t, err)
		assert.Equal(t, want, got, "pass %d", i+1)
		assert.True(t, exists(inFlight), "IN_FLIGHT survives pass %d", i+1)
		assert.True(t, exists(review), "NEEDS_REVIEW survives pass %d", i+1)
		assert.True(t, exists(notDue), "a record before its reap_after survives pass %d", i+1)
	}

	// A cap that is not a multiple of the batch: exactly the cap.
	for range 3 {
		finalize(claim(now.Add(-time.Hour), time.Minute), operation.StateDone)
	}
	got, err := s.ReapBounded(ctx, cutoff, pgstore.ReapLimits{BatchRows: 2, MaxRows: 1})
	require.NoError(t, err)
	assert.Equal(t, pgstore.ReapResult{Removed: 1, Backlog: 2}, got)

	// A canceled context stops the pass before its next batch.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.ReapBounded(canceled, cutoff, limits)
	require.ErrorIs(t, err, context.Canceled)
}

// TestReapBoundedWebhookReceipts: the webhook receipts are reaped within the
// same cap: of 7 expired receipts a pass capped at 3 forgets exactly 3.
func TestReapBoundedWebhookReceipts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	params := make([]idemstore.WebhookParams, 7)
	for i := range params {
		params[i] = idemstore.WebhookParams{Scope: "payments.refund", Signature: fmt.Sprintf("sig-%d-%d", time.Now().UnixNano(), i)}
		first, err := s.RecordWebhook(ctx, params[i])
		require.NoError(t, err)
		require.True(t, first)
	}
	_, err := s.ReapBounded(ctx, time.Now().Add(idemstore.WebhookReceiptRetention+time.Minute), pgstore.ReapLimits{BatchRows: 2, MaxRows: 3})
	require.NoError(t, err)
	forgotten := 0
	for _, p := range params {
		first, err := s.RecordWebhook(ctx, p)
		require.NoError(t, err)
		if first {
			forgotten++
		}
	}
	assert.Equal(t, 3, forgotten)
}
