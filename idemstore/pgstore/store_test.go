package pgstore_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/testenv"
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

// sharedStore gives the suite's subtests one database (they use random keys).
func sharedStore(t *testing.T) func(*testing.T) idemstore.Store {
	var once sync.Once
	var s *pgstore.Store
	return func(*testing.T) idemstore.Store {
		once.Do(func() { s = newStore(t) })
		return s
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, sharedStore(t))
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
		assert.Equal(t, idemstore.StateInFlight, d.Record.State)
		assert.True(t, d.TruthFound)
		assert.False(t, d.ClaimedAt.IsZero())

		var rows int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM write_record WHERE idem_key = $1`, c.Key).Scan(&rows))
		assert.Equal(t, 1, rows)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.ErrorIs(t, s.Release(ctx, c.Key, "owner-b"), idemstore.ErrNotOwner, "another owner's claim stays")
		require.NoError(t, s.Release(ctx, c.Key, "owner-a"))
		_, err = s.Get(ctx, c.Key)
		require.ErrorIs(t, err, idemstore.ErrNotFound)
		require.ErrorIs(t, s.Release(ctx, c.Key, "owner-a"), idemstore.ErrNotFound)

		// A record that left IN_FLIGHT is never deleted.
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome, "released: claimable again")
		require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
		require.ErrorIs(t, s.Release(ctx, c.Key, "owner-a"), idemstore.ErrNotOwner)
		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
	})

	t.Run("MarkNeedsReview", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		require.NoError(t, s.MarkNeedsReview(ctx, c.Key, "status endpoint unavailable"))
		require.NoError(t, s.MarkNeedsReview(ctx, c.Key, "status endpoint unavailable"), "idempotent")

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, idemstore.StateNeedsReview, d.Record.State)
		assert.Equal(t, "status endpoint unavailable", d.Record.Reason)
		require.ErrorIs(t, s.Takeover(ctx, c.Key, "owner-a", "owner-b", time.Minute), idemstore.ErrNotOwner)

		// An operator resolves it through the workflow, which finalizes as its owner.
		f := storetest.Done(c, "owner-a")
		f.ResolvedBy, f.ResolutionNote = "ops", "confirmed with the bank"
		require.NoError(t, s.Finalize(ctx, f))
		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
		assert.Equal(t, "ops", rec.ResolvedBy)
		assert.Equal(t, "confirmed with the bank", rec.ResolutionNote)

		require.ErrorIs(t, s.MarkNeedsReview(ctx, c.Key, "late"), idemstore.ErrAlreadyTerminal)
		require.ErrorIs(t, s.MarkNeedsReview(ctx, storetest.NewKey(t), "x"), idemstore.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var keys []string
		for i := range 4 {
			c := storetest.NewClaim(t, "owner-a")
			keys = append(keys, c.Key)
			_, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			if i == 1 {
				require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
			}
			if i == 2 {
				require.NoError(t, s.MarkNeedsReview(ctx, c.Key, "unknown"))
			}
		}

		all, err := s.List(ctx, idemstore.ListFilter{})
		require.NoError(t, err)
		require.Len(t, all, 4)
		assert.Equal(t, []string{keys[3], keys[2], keys[1], keys[0]}, recordKeys(all), "newest first")

		inFlight, err := s.List(ctx, idemstore.ListFilter{State: idemstore.StateInFlight, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{keys[3], keys[0]}, recordKeys(inFlight))

		review, err := s.List(ctx, idemstore.ListFilter{State: idemstore.StateNeedsReview, Limit: 10})
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
		_, err := s.Pool().Exec(ctx, `UPDATE write_record SET updated_at = now() - interval '10 minutes' WHERE idem_key = $1`, old.Key)
		require.NoError(t, err)

		stuck, err := s.List(ctx, idemstore.ListFilter{State: idemstore.StateInFlight, OlderThan: 5 * time.Minute})
		require.NoError(t, err)
		assert.Equal(t, []string{old.Key}, recordKeys(stuck))
		none, err := s.List(ctx, idemstore.ListFilter{State: idemstore.StateInFlight, OlderThan: time.Hour})
		require.NoError(t, err)
		assert.Empty(t, none)

		ages, err := s.StateAges(ctx)
		require.NoError(t, err)
		require.Len(t, ages, 1, "one action, one non-terminal state")
		assert.Equal(t, idemstore.StateInFlight, ages[0].State)
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
		require.NoError(t, s.MarkNeedsReview(ctx, c.Key, "status unavailable"))
		decided := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
		f := storetest.Failed(c, "owner-a")
		f.ResolvedBy, f.ResolutionNote, f.EvidenceURL, f.ResolvedAt = "ops", "bank says no", "https://tickets.example/1", decided
		require.NoError(t, s.Finalize(ctx, f))

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.JSONEq(t, string(c.BoundParams), string(rec.BoundParams))
		assert.Equal(t, "https://tickets.example/1", rec.EvidenceURL)
		assert.Equal(t, "bank says no", rec.ResolutionNote)
		assert.True(t, decided.Equal(rec.ResolvedAt), "resolved_at %s, want %s", rec.ResolvedAt, decided)
		assert.False(t, rec.CompletedAt.IsZero())
	})

	t.Run("FindRecent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		since := time.Now().Add(-time.Minute)

		_, err := s.FindRecent(ctx, "alice", "payments.transfer", storetest.NewClaim(t, "").ParamHash, since)
		require.ErrorIs(t, err, idemstore.ErrNotFound)

		first := storetest.NewClaim(t, "owner-a")
		_, err = s.Acquire(ctx, first)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, storetest.Done(first, "owner-a")))

		failed := storetest.NewClaim(t, "owner-a")
		_, err = s.Acquire(ctx, failed)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, storetest.Failed(failed, "owner-a")))

		rec, err := s.FindRecent(ctx, "alice", "payments.transfer", first.ParamHash, since)
		require.NoError(t, err)
		assert.Equal(t, first.Key, rec.Key, "a failure refused by the downstream is not a recent intent")
		assert.Equal(t, idemstore.StateDone, rec.State)

		// Every other failure is reported: the user should hear of it first.
		for _, kind := range []idemstore.FailureKind{idemstore.FailureNotExecuted, idemstore.FailureOperator, ""} {
			reconciled := storetest.NewClaim(t, "owner-a")
			_, err = s.Acquire(ctx, reconciled)
			require.NoError(t, err)
			f := storetest.Failed(reconciled, "owner-a")
			f.Reason, f.FailureKind = "not executed", kind
			require.NoError(t, s.Finalize(ctx, f))
			rec, err = s.FindRecent(ctx, "alice", "payments.transfer", first.ParamHash, since)
			require.NoError(t, err)
			assert.Equal(t, reconciled.Key, rec.Key, "failed with kind %q", kind)
			assert.Equal(t, idemstore.StateFailed, rec.State)
			assert.Equal(t, kind, rec.FailureKind)
		}

		running := storetest.NewClaim(t, "owner-b")
		_, err = s.Acquire(ctx, running)
		require.NoError(t, err)
		rec, err = s.FindRecent(ctx, "alice", "payments.transfer", first.ParamHash, since)
		require.NoError(t, err)
		assert.Equal(t, running.Key, rec.Key, "the most recent one")

		for name, args := range map[string][3]string{
			"other subject": {"bob", "payments.transfer", first.ParamHash},
			"other scope":   {"alice", "payments.legacy_transfer", first.ParamHash},
			"other params":  {"alice", "payments.transfer", "00" + first.ParamHash[2:]},
		} {
			_, err = s.FindRecent(ctx, args[0], args[1], args[2], since)
			assert.ErrorIs(t, err, idemstore.ErrNotFound, name)
		}
		_, err = s.FindRecent(ctx, "alice", "payments.transfer", first.ParamHash, time.Now().Add(time.Hour))
		require.ErrorIs(t, err, idemstore.ErrNotFound, "created before since")
	})

	t.Run("DownstreamStateAndWebhookReceipts", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.RecordDownstreamState(ctx, c.Key, "pending"))
		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, "pending", rec.DownstreamState)
		require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
		require.NoError(t, s.RecordDownstreamState(ctx, c.Key, "pending"), "a late report on a finished record is ignored")
		require.ErrorIs(t, s.RecordDownstreamState(ctx, "missing", "pending"), idemstore.ErrNotFound)

		first, err := s.RecordWebhook(ctx, "payments.payout", "t=1,v1=ab")
		require.NoError(t, err)
		assert.True(t, first)
		again, err := s.RecordWebhook(ctx, "payments.payout", "t=1,v1=ab")
		require.NoError(t, err)
		assert.False(t, again, "the same event twice is a replay")

		// The reaper keeps a receipt as long as its event could be accepted.
		_, err = s.Reap(ctx, time.Now().Add(pgstore.WebhookReceiptRetention-time.Minute))
		require.NoError(t, err)
		again, err = s.RecordWebhook(ctx, "payments.payout", "t=1,v1=ab")
		require.NoError(t, err)
		assert.False(t, again, "kept within the retention")
		_, err = s.Reap(ctx, time.Now().Add(pgstore.WebhookReceiptRetention+time.Minute))
		require.NoError(t, err)
		fresh, err := s.RecordWebhook(ctx, "payments.payout", "t=1,v1=ab")
		require.NoError(t, err)
		assert.True(t, fresh, "reaped after the retention (its event is stale by then)")
		assert.GreaterOrEqual(t, pgstore.WebhookReceiptRetention, 2*catalog.MaxWebhookTolerance)
	})

	t.Run("Reap", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		now := time.Now()

		claim := func(exp time.Time, terminalTTL time.Duration) idemstore.Claim {
			c := storetest.NewClaim(t, "owner-a")
			c.FingerprintExp, c.TerminalTTL = exp, terminalTTL
			_, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			return c
		}
		finalize := func(c idemstore.Claim, state idemstore.State) {
			f := storetest.Done(c, "owner-a")
			if state == idemstore.StateFailed {
				f = storetest.Failed(c, "owner-a")
			}
			f.TerminalTTL = c.TerminalTTL
			require.NoError(t, s.Finalize(ctx, f))
		}

		// terminal_ttl 2h, exp in 1h: reapable after 2h.
		ttlLonger := claim(now.Add(time.Hour), 2*time.Hour)
		finalize(ttlLonger, idemstore.StateDone)
		// terminal_ttl 1h, exp in 5h: reapable only after exp.
		expLonger := claim(now.Add(5*time.Hour), time.Hour)
		finalize(expLonger, idemstore.StateFailed)
		// Never reaped, however old: IN_FLIGHT and NEEDS_REVIEW.
		inFlight := claim(now.Add(-time.Hour), time.Minute)
		review := claim(now.Add(-time.Hour), time.Minute)
		require.NoError(t, s.MarkNeedsReview(ctx, review.Key, "unknown"))

		exists := func(c idemstore.Claim) bool {
			_, err := s.Get(ctx, c.Key)
			if err != nil {
				require.ErrorIs(t, err, idemstore.ErrNotFound)
				return false
			}
			return true
		}

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

	t.Run("FinalizeClaimInsertsMissingTruth", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := storetest.NewClaim(t, "owner-a")
		claimRec := idemstore.Record{Key: c.Key, Subject: c.Subject, Scope: c.Scope, ParamHash: c.ParamHash,
			State: idemstore.StateInFlight, Owner: "owner-a", FingerprintExp: c.FingerprintExp,
			ClaimedAt: time.Now().Add(-time.Second)}
		require.ErrorIs(t, s.FinalizeClaim(ctx, claimRec, storetest.Done(c, "owner-b")), idemstore.ErrNotOwner)
		require.NoError(t, s.FinalizeClaim(ctx, claimRec, storetest.Done(c, "owner-a")))
		require.NoError(t, s.FinalizeClaim(ctx, claimRec, storetest.Done(c, "owner-a")), "idempotent")
		require.ErrorIs(t, s.FinalizeClaim(ctx, claimRec, storetest.Failed(c, "owner-a")), idemstore.ErrAlreadyTerminal)
		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
		assert.Equal(t, "alice", rec.Subject)
		assert.Equal(t, "tr_123", rec.ResultRef)
	})

	t.Run("Unavailable", func(t *testing.T) {
		t.Parallel()
		s, err := pgstore.Open(ctx, testenv.NewDatabase(t))
		require.NoError(t, err)
		s.Close()
		_, err = s.Get(ctx, "k")
		require.ErrorIs(t, err, idemstore.ErrUnavailable)

		port := testenv.MustFreePort(t)
		_, err = pgstore.Open(ctx, "postgres://postgres@127.0.0.1:"+strconv.Itoa(port)+"/x?sslmode=disable&connect_timeout=2")
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
	})
}

func recordKeys(recs []idemstore.Record) []string {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.Key
	}
	return keys
}
