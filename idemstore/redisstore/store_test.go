package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newClient starts one Redis server for the whole test and returns a client.
func newClient(t *testing.T) (*testenv.Redis, *redis.Client) {
	t.Helper()
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	return srv, rdb
}

func TestStore(t *testing.T) {
	t.Parallel()
	_, rdb := newClient(t)
	// Every subtest uses fresh random keys, so one server serves them all.
	storetest.ExerciseFastPath(t, func(*testing.T) idemstore.FastPath { return redisstore.New(rdb) })
}

func TestRedisSpecifics(t *testing.T) {
	t.Parallel()
	_, rdb := newClient(t)
	ctx := context.Background()

	t.Run("KeyHasHashTag", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		assert.Equal(t, "idem:{"+c.OperationID+"}", redisstore.Key(c.OperationID))
		n, err := rdb.Exists(ctx, "idem:{"+c.OperationID+"}").Result()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)

		h, err := rdb.HGetAll(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.Equal(t, "IN_FLIGHT", h["state"])
		assert.Equal(t, c.ParamHash, h["param_hash"])
		assert.Equal(t, "owner-a", h["owner"])
		assert.Equal(t, "alice", h["subject"])
		assert.Equal(t, "payments.transfer", h["scope"])
		assert.NotEmpty(t, h["claimed_at"])
		assert.Equal(t, c.FingerprintExp.Unix(), mustInt(t, h["exp"]))
	})

	t.Run("InFlightTTL", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		c.InFlightTTL = time.Second
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		ttl, err := rdb.PTTL(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0))
		assert.LessOrEqual(t, ttl, time.Second)
		secs, err := rdb.TTL(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.Equal(t, time.Second, secs)

		// Expiry itself is Redis's job; check it happens without a long sleep.
		require.NoError(t, testenv.WaitFor(ctx, 3*time.Second, func(ctx context.Context) error {
			_, err := s.Get(ctx, c.OperationID)
			if err == nil {
				return assert.AnError
			}
			return nil
		}))
		_, err = s.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound)
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	})

	t.Run("TerminalTTL", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		f := storetest.Done(c, "owner-a")
		f.TerminalTTL = 48 * time.Hour
		require.NoError(t, s.Finalize(ctx, f))
		ttl, err := rdb.TTL(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.InDelta(t, (48 * time.Hour).Seconds(), ttl.Seconds(), 5)
	})

	t.Run("TakeoverRefreshesTTL", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		c.InFlightTTL = time.Second
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Takeover(ctx, idemstore.TakeoverParams{OperationID: c.OperationID, FromOwner: "owner-a", ToOwner: "owner-b", TTL: time.Hour}))
		ttl, err := rdb.TTL(ctx, redisstore.Key(c.OperationID)).Result()
		require.NoError(t, err)
		assert.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 5)
	})

	t.Run("Refill", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		rec := idemstore.Record{
			OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateDone, Owner: "owner-a",
			Subject: "alice", Scope: "payments.transfer", Result: []byte(`{"id":"tr_9"}`), ResultRef: "tr_9",
			FingerprintExp: c.FingerprintExp,
		}
		require.NoError(t, s.Refill(ctx, idemstore.RefillParams{Record: rec, TTL: time.Hour}))
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, "tr_9", d.Record.ResultRef)
		assert.JSONEq(t, `{"id":"tr_9"}`, string(d.Record.Result))
		got, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, c.FingerprintExp, got.FingerprintExp)
		assert.Equal(t, "alice", got.Subject)
	})

	t.Run("InvalidTTL", func(t *testing.T) {
		t.Parallel()
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		c.InFlightTTL = 0
		_, err := s.Acquire(ctx, c)
		require.Error(t, err)
	})
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	srv, rdb := newClient(t)
	s := redisstore.New(rdb)
	ctx := context.Background()
	srv.Stop()

	_, err := s.Acquire(ctx, storetest.NewClaim(t, "owner-a"))
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, idemstore.ErrUnavailable)

	// A closed client is told by its sentinel.
	require.NoError(t, rdb.Close())
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, idemstore.ErrUnavailable, "a closed client")
	require.ErrorIs(t, err, redis.ErrClosed)
	_, err = s.Acquire(ctx, storetest.NewClaim(t, "owner-a"))
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
	require.ErrorIs(t, s.Ping(ctx), idemstore.ErrUnavailable)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// TestRecentIntentIndex checks what the fast path's recent-intent index
// does beyond the shared suite: its one key per subject, a warm-up that a
// flush cancels, the scripts loaded again after a flushed script cache,
// the pruning of ended entries, and a malformed entry.
func TestRecentIntentIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OneKeyPerSubject", func(t *testing.T) {
		t.Parallel()
		_, rdb := newClient(t)
		s := redisstore.New(rdb)
		c := storetest.NewClaim(t, "owner-a")
		c.Subject = "bob"
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, "recent:{bob}", redisstore.RecentKey("bob"))
		h, err := rdb.HGetAll(ctx, "recent:{bob}").Result()
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Contains(t, h[c.Scope+"|"+c.ParamHash], c.OperationID+"|")
		ttl, err := rdb.PTTL(ctx, "recent:{bob}").Result()
		require.NoError(t, err)
		assert.InDelta(t, operation.DefaultIntentWindow.Seconds(), ttl.Seconds(), 60, "it lives as long as its entry counts")
	})

	t.Run("AFlushCancelsTheWarmUp", func(t *testing.T) {
		t.Parallel()
		_, rdb := newClient(t)
		s := redisstore.New(rdb)
		token, err := s.BeginWarm(ctx, "alice", time.Hour)
		require.NoError(t, err)
		// A claim between the truth's read and the commit may be in
		// Redis only: a flush loses it, and the warm-up must not then
		// call the index complete.
		require.NoError(t, rdb.FlushAll(ctx).Err())
		ok, err := s.CommitWarm(ctx, idemstore.WarmParams{Subject: "alice", Token: token,
			Marker: idemstore.IndexMarker{Epoch: 1, Horizon: time.Now().Add(-time.Hour)}, TTL: time.Hour})
		require.NoError(t, err)
		assert.False(t, ok)
		r, err := s.RecentIntent(ctx, "alice", "payments.transfer", "ph")
		require.NoError(t, err)
		assert.Nil(t, r.Marker)
	})

	t.Run("ScriptsLoadedAgainAfterAScriptFlush", func(t *testing.T) {
		t.Parallel()
		_, rdb := newClient(t)
		s := redisstore.New(rdb)
		_, err := s.Acquire(ctx, storetest.NewClaim(t, "owner-a"))
		require.NoError(t, err)
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		fc, err := s.Acquire(ctx, storetest.NewClaim(t, "owner-a"))
		require.NoError(t, err, "NOSCRIPT in the pipeline: sent again with the script")
		assert.Equal(t, idemstore.OutcomeAcquired, fc.Outcome)
		assert.True(t, fc.Indexed)
	})

	t.Run("AClaimPrunesEndedEntries", func(t *testing.T) {
		t.Parallel()
		_, rdb := newClient(t)
		s := redisstore.New(rdb)
		token, err := s.BeginWarm(ctx, "alice", time.Hour)
		require.NoError(t, err)
		var ended []idemstore.IntentEntry
		for i := range 300 {
			ended = append(ended, idemstore.IntentEntry{Scope: "payments.transfer", ParamHash: strconv.Itoa(i),
				OperationID: storetest.NewKey(t), CreatedAt: time.Now().Add(-2 * time.Hour)})
		}
		ok, err := s.CommitWarm(ctx, idemstore.WarmParams{Subject: "alice", Token: token,
			Marker: idemstore.IndexMarker{Epoch: 1, Horizon: time.Now().Add(-3 * time.Hour)}, Entries: ended, TTL: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		n, err := rdb.HLen(ctx, redisstore.RecentKey("alice")).Result()
		require.NoError(t, err)
		require.EqualValues(t, 301, n, "300 entries and the marker")
		c := storetest.NewClaim(t, "owner-a")
		_, err = s.Acquire(ctx, c)
		require.NoError(t, err)
		h, err := rdb.HGetAll(ctx, redisstore.RecentKey("alice")).Result()
		require.NoError(t, err)
		assert.Len(t, h, 3, "the claim's entry, the marker and the next pruning size: the ended entries are gone")
		assert.Contains(t, h, c.Scope+"|"+c.ParamHash)
		assert.Equal(t, "4", h["!prune"], "twice the two fields left")
	})

	t.Run("AMalformedEntryIsAnError", func(t *testing.T) {
		t.Parallel()
		_, rdb := newClient(t)
		s := redisstore.New(rdb)
		require.NoError(t, rdb.HSet(ctx, redisstore.RecentKey("alice"), "!warm", "1|0", "payments.transfer|ph", "garbage").Err())
		_, err := s.RecentIntent(ctx, "alice", "payments.transfer", "ph")
		require.Error(t, err, "never read as no recent operation")
		require.NoError(t, rdb.HSet(ctx, redisstore.RecentKey("alice"), "!warm", "x").Err())
		_, err = s.RecentIntent(ctx, "alice", "payments.transfer", "other")
		require.Error(t, err)
	})
}
