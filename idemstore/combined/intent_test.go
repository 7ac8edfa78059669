package combined_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

// guardAnswers reads oncegate_amnesia_guard_answers_total{by}.
func guardAnswers(t *testing.T, reg *prometheus.Registry, by string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "oncegate_amnesia_guard_answers_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == by {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// guard is one subject's intent and the amnesia guard's view of it through
// a store.
type guard struct {
	store  *combined.Store
	reg    *prometheus.Registry
	intent idemstore.FindRecentParams
}

// find asks the guard and reports who answered.
func (g guard) find(t *testing.T) (idemstore.Record, error, string) {
	t.Helper()
	index := guardAnswers(t, g.reg, "index")
	rec, err := g.store.FindRecent(context.Background(), g.intent)
	by := "truth"
	if guardAnswers(t, g.reg, "index") > index {
		by = "index"
	}
	return rec, err, by
}

// fromIndex asks until the index answers alone and returns that answer;
// every answer on the way must be want's. A preview writes nothing: while
// the truth answers, a claim of another intent of the subject (on s) warms
// the index once the store has heard the fast-path epoch.
func (g guard) fromIndex(t *testing.T, s *combined.Store, want string) {
	t.Helper()
	require.NoError(t, testenv.WaitFor(context.Background(), 15*time.Second, func(context.Context) error {
		rec, err, by := g.find(t)
		if want == "" {
			require.ErrorIs(t, err, idemstore.ErrNotFound)
		} else {
			require.NoError(t, err)
			require.Equal(t, want, rec.OperationID, "answered by the %s", by)
		}
		if by != "index" {
			g.nudge(t, s)
			return fmt.Errorf("answered by the %s", by)
		}
		return nil
	}))
}

// nudge claims an operation of another intent of g's subject on s.
func (g guard) nudge(t *testing.T, s *combined.Store) {
	t.Helper()
	c := storetest.NewClaim(t, "owner-nudge")
	c.Subject, c.Scope = g.intent.Subject, "payments.payout"
	_, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
}

// claimDone claims an operation of g's intent on s and finalizes it DONE.
func (g guard) claimDone(t *testing.T, s *combined.Store) idemstore.Claim {
	t.Helper()
	ctx := context.Background()
	c := storetest.NewClaim(t, "owner-"+storetest.NewKey(t)[:6])
	c.Subject, c.Scope, c.ParamHash = g.intent.Subject, g.intent.Scope, g.intent.ParamHash
	d, err := s.Acquire(ctx, c)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	require.NoError(t, s.Finalize(ctx, storetest.Done(c, c.Owner)))
	return c
}

// warmedAgain follows an index that lost what it knew of c (a flush, a
// degraded period): the subject's next claim (fromIndex's nudge) warms it
// from the truth, and an intent never claimed is answered by the index
// alone again; c, DONE, is named by the index, but its record is the
// truth's until a replay through s refills Redis, and then the index
// answers c alone.
func (g guard) warmedAgain(t *testing.T, s *combined.Store, c idemstore.Claim) {
	t.Helper()
	fresh := g
	fresh.intent.ParamHash = "00" + g.intent.ParamHash[2:]
	fresh.fromIndex(t, s, "")
	rec, err, by := g.find(t)
	require.NoError(t, err)
	assert.Equal(t, c.OperationID, rec.OperationID)
	assert.Equal(t, "truth", by, "the index names it, Redis lost its record")
	d, err := s.Acquire(context.Background(), g.claimOf(c))
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeDone, d.Outcome, "a replay refills it")
	g.fromIndex(t, s, c.OperationID)
}

// claimOf is c again, claimed by another owner: a replay.
func (g guard) claimOf(c idemstore.Claim) idemstore.Claim {
	c.Owner = "owner-replay"
	return c
}

// newGuard is the guard of a fresh subject on b.
func newGuard(t *testing.T, b *testBundle) guard {
	intent := storetest.NewClaim(t, "")
	return guard{store: b.store, reg: b.reg, intent: idemstore.FindRecentParams{Subject: "subject-" + storetest.NewKey(t),
		Scope: intent.Scope, ParamHash: intent.ParamHash, Since: time.Now().Add(-time.Hour)}}
}

// TestAmnesiaGuardFromRedis: the amnesia guard answers from Redis's
// recent-intent index without the truth once the subject's index is warm,
// and still reports every recent operation after Redis lost the index
// (FLUSHALL, a restart without persistence), after a claim the index
// missed, and after a gateway claimed on the truth alone while another
// one kept the index.
func TestAmnesiaGuardFromRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("WarmIndexAnswersAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		g := newGuard(t, b)
		_, err, _ := g.find(t)
		require.ErrorIs(t, err, idemstore.ErrNotFound)
		c := g.claimDone(t, b.store)
		g.fromIndex(t, b.store, c.OperationID)
		rec, err, by := g.find(t)
		require.NoError(t, err)
		assert.Equal(t, "index", by)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "tr_123", rec.ResultRef)
		assert.False(t, rec.UpdatedAt.IsZero(), "when it completed")

		// A newer operation of the intent, still running: the truth tells
		// IN_FLIGHT from NEEDS_REVIEW, the index names it.
		running := storetest.NewClaim(t, "owner-b")
		running.Subject, running.Scope, running.ParamHash = g.intent.Subject, g.intent.Scope, g.intent.ParamHash
		_, err = b.store.Acquire(ctx, running)
		require.NoError(t, err)
		rec, err, by = g.find(t)
		require.NoError(t, err)
		assert.Equal(t, running.OperationID, rec.OperationID)
		assert.Equal(t, "truth", by)
	})

	t.Run("AfterFlushAll", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		g := newGuard(t, b)
		c := g.claimDone(t, b.store)
		g.fromIndex(t, b.store, c.OperationID)

		require.NoError(t, b.rdb.FlushAll(ctx).Err())
		rec, err, by := g.find(t)
		require.NoError(t, err)
		assert.Equal(t, c.OperationID, rec.OperationID, "the truth answers the cold index")
		assert.Equal(t, "truth", by)
		g.warmedAgain(t, b.store, c)
	})

	t.Run("AfterARedisRestart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{ProbeInterval: 50 * time.Millisecond, FastPathLease: 2 * time.Second})
		g := newGuard(t, b)
		c := g.claimDone(t, b.store)
		g.fromIndex(t, b.store, c.OperationID)

		// Redis goes down: a newer operation of the intent is claimed and
		// finalized on the truth alone (under a lease), missed by the index.
		b.redis.Stop()
		missed := g.claimDone(t, b.store)
		require.True(t, b.store.Degraded())
		rec, err, by := g.find(t)
		require.NoError(t, err)
		assert.Equal(t, missed.OperationID, rec.OperationID, "Redis down: the truth")
		assert.Equal(t, "truth", by)
		require.NoError(t, b.redis.Restart()) // empty: no persistence
		rec, err, _ = g.find(t)
		require.NoError(t, err)
		assert.Equal(t, missed.OperationID, rec.OperationID)
		require.NoError(t, testenv.WaitFor(ctx, 15*time.Second, func(context.Context) error {
			if b.store.Degraded() {
				return fmt.Errorf("still degraded")
			}
			return nil
		}))
		g.warmedAgain(t, b.store, missed)
	})

	t.Run("AClaimTheIndexMissedTakesALease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{FastPathLease: 2 * time.Second})
		g := newGuard(t, b)
		c := g.claimDone(t, b.store)
		g.fromIndex(t, b.store, c.OperationID)

		// The index's key cannot take the claim's entry (a failed node
		// would answer an error as well) while the claim itself succeeds.
		key := redisstore.RecentKey(g.intent.Subject)
		require.NoError(t, b.rdb.Del(ctx, key).Err())
		require.NoError(t, b.rdb.Set(ctx, key, "not a hash", time.Minute).Err())
		missed := g.claimDone(t, b.store)
		assert.Equal(t, 1.0, counter(t, b.reg, "oncegate_fast_path_leases_total"))
		require.NoError(t, b.rdb.Del(ctx, key).Err())

		rec, err, by := g.find(t)
		require.NoError(t, err)
		assert.Equal(t, missed.OperationID, rec.OperationID)
		assert.Equal(t, "truth", by, "while the lease runs")
		g.fromIndex(t, b.store, missed.OperationID) // after it, warmed again at the new epoch
	})

	t.Run("AfterADegradedPeriodOfAnotherGateway", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		g := newGuard(t, b)
		c := g.claimDone(t, b.store)
		g.fromIndex(t, b.store, c.OperationID)

		// Gateway 1 cannot reach Redis; gateway 2 (b.store) can and keeps
		// its index warm. Gateway 1's claim reaches the truth alone.
		epoch := gauge(t, b.reg, "oncegate_fast_path_epoch")
		require.Positive(t, epoch, "gateway 2 heard the epoch")
		down := testenv.StartRedis(t)
		rdb1 := redis.NewClient(&redis.Options{Addr: down.Addr})
		t.Cleanup(func() { _ = rdb1.Close() })
		down.Stop()
		g1 := combined.New(redisstore.New(rdb1), b.truth, combined.Options{ProbeInterval: time.Hour,
			FastPathLease: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(g1.Close)
		missed := g.claimDone(t, g1)
		require.True(t, g1.Degraded())

		// Gateway 2 hears of the lease (NOTIFY, within milliseconds): then
		// the truth answers.
		require.NoError(t, testenv.WaitFor(ctx, 15*time.Second, func(context.Context) error {
			if e := gauge(t, b.reg, "oncegate_fast_path_epoch"); e <= epoch {
				return fmt.Errorf("epoch %v", e)
			}
			return nil
		}))
		rec, err, by := g.find(t)
		require.NoError(t, err)
		assert.Equal(t, missed.OperationID, rec.OperationID)
		assert.Equal(t, "truth", by)
		// After the lease the marker's epoch is stale: the next claim
		// warms the index again from the truth, which holds gateway 1's
		// claim; its record is in the truth only (gateway 1 finalized it
		// there) until a replay through gateway 2 refills Redis.
		g.warmedAgain(t, b.store, missed)
	})
}
