package combined_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is one combined store on its own Redis server and database.
type testBundle struct {
	store *combined.Store
	fast  *redisstore.Store
	truth *pgstore.Store
	redis *testenv.Redis
	rdb   *redis.Client
	reg   *prometheus.Registry
}

func setup(t *testing.T, opts combined.Options) *testBundle {
	t.Helper()
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	truth, err := pgstore.Open(context.Background(), testenv.NewDatabase(t))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	t.Cleanup(truth.Close)
	fast := redisstore.New(rdb)
	s := combined.New(fast, truth, opts)
	t.Cleanup(s.Close)
	return &testBundle{store: s, fast: fast, truth: truth, redis: srv, rdb: rdb, reg: reg}
}

func TestStore(t *testing.T) {
	t.Parallel()
	var once sync.Once
	var bundle *testBundle
	storetest.Exercise(t, func(*testing.T) idemstore.Store {
		// A generous budget: the suite's 200 concurrent acquires must not
		// degrade the store on a loaded test machine.
		once.Do(func() { bundle = setup(t, combined.Options{RedisBudget: 5 * time.Second}) })
		return bundle.store
	})
}

// mandateStore is the combined store's claims with the truth's mandates and
// passkeys, as the gateway wires them: claims under a mandate pass the
// fast path and are decided by the truth.
type mandateStore struct {
	idemstore.Store
	approvals
	mandates
}

type (
	approvals = approval.Store
	mandates  = mandate.Store
)

func TestMandates(t *testing.T) {
	t.Parallel()
	var once sync.Once
	var bundle *testBundle
	storetest.ExerciseMandates(t, func(*testing.T) storetest.MandateStore {
		once.Do(func() { bundle = setup(t, combined.Options{RedisBudget: 5 * time.Second}) })
		return mandateStore{Store: bundle.store, approvals: bundle.truth, mandates: bundle.truth}
	})
}

func TestStoreDegraded(t *testing.T) {
	t.Parallel()
	var once sync.Once
	var bundle *testBundle
	storetest.Exercise(t, func(*testing.T) idemstore.Store {
		once.Do(func() {
			bundle = setup(t, combined.Options{ProbeInterval: time.Hour})
			bundle.redis.Stop()
		})
		return bundle.store
	})
}

func TestCombined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FlushAllAfterDoneReplaysFromTruth", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		d, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		assert.True(t, d.TruthFound, "a claim is in the truth from the start")
		// The workflow claims the truth (finding the gateway's claim), then finalizes.
		_, err = b.truth.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, b.store.Finalize(ctx, storetest.Done(c, "owner-a")))

		require.NoError(t, b.rdb.FlushAll(ctx).Err())

		retry := c
		retry.Owner = "owner-b"
		d, err = b.store.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, "tr_123", d.Record.ResultRef)
		assert.True(t, d.TruthFound)

		h, err := b.rdb.HGetAll(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.Equal(t, "DONE", h["state"], "Redis refilled")
		assert.Equal(t, "owner-a", h["owner"])
		rec, err := b.fast.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, "tr_123", rec.ResultRef)
		ttl, err := b.rdb.TTL(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0))

		// A swapped param_hash after the flush is still a mismatch.
		swapped := c
		swapped.ParamHash = "00" + c.ParamHash[2:]
		require.NoError(t, b.rdb.FlushAll(ctx).Err())
		d, err = b.store.Acquire(ctx, swapped)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeParamMismatch, d.Outcome)
		d, err = b.store.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
	})

	t.Run("RedisDownDegradesAndRecovers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{ProbeInterval: 100 * time.Millisecond})
		degraded := b.reg
		b.redis.Stop()

		c := storetest.NewClaim(t, "owner-a")
		d, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		assert.True(t, d.TruthFound, "claimed on the truth")
		assert.True(t, b.store.Degraded())
		assert.Equal(t, 1.0, gauge(t, degraded, "oncegate_idemstore_degraded"))

		dup := c
		dup.Owner = "owner-b"
		d, err = b.store.Acquire(ctx, dup)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, "owner-a", d.Owner)

		require.NoError(t, b.store.Finalize(ctx, storetest.Done(c, "owner-a")))
		rec, err := b.store.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		for range 3 {
			d, err = b.store.Acquire(ctx, dup)
			require.NoError(t, err)
			assert.Equal(t, idemstore.OutcomeDone, d.Outcome, "duplicates are still DONE")
			assert.Equal(t, "tr_123", d.Record.ResultRef)
		}
		assert.GreaterOrEqual(t, counter(t, b.reg, "oncegate_idemstore_fallbacks_total"), 5.0)

		require.NoError(t, b.redis.Restart())
		require.NoError(t, testenv.WaitFor(ctx, 5*time.Second, func(context.Context) error {
			if b.store.Degraded() {
				return assert.AnError
			}
			return nil
		}))
		assert.Equal(t, 0.0, gauge(t, degraded, "oncegate_idemstore_degraded"))

		// The fast path is used again: a new claim lands in Redis, and the
		// operation finished while degraded is refilled from the truth.
		c2 := storetest.NewClaim(t, "owner-c")
		d, err = b.store.Acquire(ctx, c2)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		assert.True(t, d.TruthFound)
		n, err := b.rdb.Exists(ctx, redisstore.Key(c2.OperationID)).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "the key appears in Redis")

		d, err = b.store.Acquire(ctx, dup)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		state, err := b.rdb.HGet(ctx, redisstore.Key(c.OperationID), "state").Result()
		require.NoError(t, err)
		assert.Equal(t, "DONE", state)
	})

	t.Run("BothDownIsUnavailableAndConsumesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{ProbeInterval: time.Hour})
		b.redis.Stop()
		b.truth.Close()
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.store.Acquire(ctx, c)
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
		_, err = b.store.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
		require.Error(t, b.store.Ready(ctx))
	})

	t.Run("TruthDownReleasesRedisClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		b.truth.Close()
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.store.Acquire(ctx, c)
		require.ErrorIs(t, err, idemstore.ErrUnavailable)
		n, err := b.rdb.Exists(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 0, n, "nothing consumed")
		assert.False(t, b.store.Degraded())
	})

	t.Run("ExpiredRedisKeyWhileTruthInFlight", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		_, err = b.truth.Acquire(ctx, c) // the workflow claimed the truth
		require.NoError(t, err)
		require.NoError(t, b.rdb.Del(ctx, redisstore.Key(c.OperationID)).Err()) // the in-flight TTL ran out

		retry := c
		retry.Owner = "owner-b"
		d, err := b.store.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome, "the truth holds the running claim: the caller waits on its workflow")
		assert.True(t, d.TruthFound)
		assert.Equal(t, "owner-a", d.Owner)
		assert.Equal(t, operation.StateInFlight, d.Record.State)
		// Redis mirrors the truth's owner again...
		owner, err := b.rdb.HGet(ctx, redisstore.Key(c.OperationID), "owner").Result()
		require.NoError(t, err)
		assert.Equal(t, "owner-a", owner)

		// ...so the workflow's finalize as owner-a lands on both.
		require.NoError(t, b.store.Finalize(ctx, storetest.Done(c, "owner-a")))
		d, err = b.store.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
	})

	t.Run("SlowRedisCallerOnThePostgreSQLPathIsNotASecondClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		// A caller for whom Redis was too slow claimed through PostgreSQL alone.
		d, err := b.truth.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		// Redis itself never saw it: its ACQUIRED must not be a second claim.
		retry := c
		retry.Owner = "owner-b"
		d, err = b.store.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, "owner-a", d.Owner)
	})

	t.Run("NeedsReviewIsVisible", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		_, err = b.truth.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, b.store.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "status unknown"}))

		d, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.True(t, d.TruthFound)
		assert.Equal(t, operation.StateNeedsReview, d.Record.State)

		rec, err := b.store.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateNeedsReview, rec.State)
		list, err := b.store.List(ctx, idemstore.ListFilter{State: operation.StateNeedsReview, Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("OrphanClaimOnlyInRedis", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.fast.Acquire(ctx, c) // the gateway died before starting the workflow
		require.NoError(t, err)

		retry := c
		retry.Owner = "owner-b"
		d, err := b.store.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.False(t, d.TruthFound)
		assert.Equal(t, "owner-a", d.Owner)
		assert.WithinDuration(t, time.Now(), d.ClaimedAt, 10*time.Second)

		// The gateway takes the orphan over and starts it.
		require.NoError(t, b.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: c.OperationID, FromOwner: "owner-a", ToOwner: "owner-b", TTL: time.Minute}))
		d, err = b.store.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, "owner-b", d.Owner)
	})

	t.Run("FinalizeOfAClaimOnlyInRedisWritesTheTruth", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.fast.Acquire(ctx, c) // an orphan taken over before any truth claim
		require.NoError(t, err)
		require.ErrorIs(t, b.store.Finalize(ctx, storetest.Done(c, "owner-b")), idemstore.ErrNotOwner)
		_, err = b.truth.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "another owner writes nothing")

		require.NoError(t, b.store.Finalize(ctx, storetest.Done(c, "owner-a")))
		rec, err := b.truth.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "owner-a", rec.Owner)
		assert.Equal(t, c.Subject, rec.Subject)
		assert.Equal(t, "tr_123", rec.ResultRef)
		require.NoError(t, b.store.Finalize(ctx, storetest.Done(c, "owner-a")), "idempotent")
		require.ErrorIs(t, b.store.Finalize(ctx, storetest.Failed(c, "owner-a")), idemstore.ErrAlreadyTerminal)
		fast, err := b.fast.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, fast.State)
	})

	t.Run("ReleaseOfAClaimOnlyInRedis", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.fast.Acquire(ctx, c)
		require.NoError(t, err)
		require.ErrorIs(t, b.store.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-b"}), idemstore.ErrNotFound,
			"no claim of owner-b anywhere")
		require.NoError(t, b.store.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-a"}))
		_, err = b.fast.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "released on Redis")
	})

	t.Run("TakeoverOnTruth", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.store.Acquire(ctx, c)
		require.NoError(t, err)
		_, err = b.truth.Acquire(ctx, c)
		require.NoError(t, err)

		require.NoError(t, b.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: c.OperationID, FromOwner: "owner-a", ToOwner: "owner-b", TTL: time.Minute}))
		rec, err := b.truth.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, "owner-b", rec.Owner)
		fast, err := b.fast.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, "owner-b", fast.Owner)
		require.ErrorIs(t, b.store.Takeover(ctx, idemstore.TakeoverParams{OperationID: c.OperationID, FromOwner: "owner-a", ToOwner: "owner-c", TTL: time.Minute}), idemstore.ErrNotOwner)
	})

	t.Run("GetPrefersTruth", func(t *testing.T) {
		t.Parallel()
		b := setup(t, combined.Options{})
		c := storetest.NewClaim(t, "owner-a")
		_, err := b.fast.Acquire(ctx, c) // a claim only Redis knows
		require.NoError(t, err)
		rec, err := b.store.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateInFlight, rec.State, "from Redis before the truth claim")
		assert.True(t, rec.CreatedAt.IsZero())

		_, err = b.truth.Acquire(ctx, c)
		require.NoError(t, err)
		rec, err = b.store.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.False(t, rec.CreatedAt.IsZero(), "from the truth")
	})
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		m := f.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
