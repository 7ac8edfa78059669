package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

// outcomeWait bounds a wait for a published outcome (one local round trip).
const outcomeWait = 10 * time.Second

// readyFeed returns s's outcome feed once its subscription is confirmed.
func readyFeed(t *testing.T, s *redisstore.Store) *redisstore.Outcomes {
	t.Helper()
	o := s.WatchOutcomes(nil)
	t.Cleanup(func() { _ = o.Close() })
	require.Eventually(t, o.Ready, outcomeWait, 5*time.Millisecond, "the feed subscribes")
	return o
}

// claimed acquires a fresh claim of owner on s.
func claimed(t *testing.T, s *redisstore.Store, owner string) idemstore.Claim {
	t.Helper()
	c := storetest.NewClaim(t, owner)
	_, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
	return c
}

// watch starts watching opID and stops the watch at the test's end.
func watch(t *testing.T, o *redisstore.Outcomes, opID string) idemstore.OutcomeWatch {
	t.Helper()
	w, ok := o.Watch(opID)
	require.True(t, ok, "a ready feed watches")
	t.Cleanup(w.Stop)
	return w
}

// told waits for w's outcome.
func told(t *testing.T, w idemstore.OutcomeWatch) operation.Final {
	t.Helper()
	select {
	case f := <-w.Outcome:
		return f
	case <-w.Lost:
		require.FailNow(t, "the watch was lost")
	case <-time.After(outcomeWait):
		require.FailNow(t, "no outcome was told")
	}
	return operation.Final{}
}

// untold asserts that w holds no outcome. Messages on one channel arrive in
// publish order, so after a later outcome was told, an earlier publish
// would already be there.
func untold(t *testing.T, w idemstore.OutcomeWatch) {
	t.Helper()
	select {
	case f := <-w.Outcome:
		assert.Fail(t, "an outcome was told", "%+v", f)
	default:
	}
}

// TestOutcomes: the finalize script announces the outcome it writes (once,
// not an idempotent repeat, not a refused one) and the feed tells exactly
// the watches of that operation; the refill announces too; a watch stopped
// is not told; a broken subscription loses every watch and is made again.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	_, rdb := newClient(t)
	ctx := context.Background()
	s := redisstore.New(rdb)
	o := readyFeed(t, s)

	t.Run("FinalizeTellsItsWatches", func(t *testing.T) {
		c, other := claimed(t, s, "owner-a"), claimed(t, s, "owner-a")
		w1, w2, wOther := watch(t, o, c.OperationID), watch(t, o, c.OperationID), watch(t, o, other.OperationID)
		f := storetest.Done(c, "owner-a")
		f.CompletedAt = time.UnixMilli(time.Now().UnixMilli())
		require.NoError(t, s.Finalize(ctx, f))
		for _, w := range []idemstore.OutcomeWatch{w1, w2} {
			got := told(t, w)
			assert.Equal(t, operation.StateDone, got.State)
			assert.JSONEq(t, string(f.Result), string(got.Result))
			assert.Equal(t, f.ResultRef, got.ResultRef)
			assert.True(t, f.CompletedAt.Equal(got.CompletedAt), "completed_at %s, told %s", f.CompletedAt, got.CompletedAt)
		}
		// The same outcome again writes nothing and announces nothing; a
		// refused one neither.
		w3 := watch(t, o, c.OperationID)
		require.NoError(t, s.Finalize(ctx, f))
		require.ErrorIs(t, s.Finalize(ctx, storetest.Failed(c, "owner-a")), idemstore.ErrAlreadyTerminal)
		require.ErrorIs(t, s.Finalize(ctx, storetest.Failed(other, "owner-b")), idemstore.ErrNotOwner)
		untold(t, wOther)
		failed := storetest.Failed(other, "owner-a")
		require.NoError(t, s.Finalize(ctx, failed))
		got := told(t, wOther)
		assert.Equal(t, operation.StateFailed, got.State)
		assert.Equal(t, failed.Reason, got.Reason)
		assert.Equal(t, failed.FailureKind, got.FailureKind)
		untold(t, w3)
	})

	t.Run("StoppedWatchIsNotTold", func(t *testing.T) {
		c, later := claimed(t, s, "owner-a"), claimed(t, s, "owner-a")
		stopped := watch(t, o, c.OperationID)
		stopped.Stop()
		stopped.Stop() // twice is fine
		wLater := watch(t, o, later.OperationID)
		require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
		require.NoError(t, s.Finalize(ctx, storetest.Done(later, "owner-a")))
		told(t, wLater)
		untold(t, stopped)
	})

	t.Run("UndecodableResultLosesItsWatches", func(t *testing.T) {
		c := claimed(t, s, "owner-a")
		w := watch(t, o, c.OperationID)
		// What no finalize writes: a blob that is not JSON.
		require.NoError(t, rdb.Publish(ctx, redisstore.OutcomesChannel,
			redisstore.Key(c.OperationID)+"\nDONE\n{not json").Err())
		select {
		case <-w.Lost:
		case f := <-w.Outcome:
			assert.Fail(t, "told an undecodable outcome", "%+v", f)
		case <-time.After(outcomeWait):
			require.FailNow(t, "the watch was neither told nor lost")
		}
	})

	t.Run("RefillTells", func(t *testing.T) {
		c := claimed(t, s, "owner-a")
		w := watch(t, o, c.OperationID)
		rec := idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateDone,
			Subject: c.Subject, Scope: c.Scope, Result: []byte(`{"transfer_id":"tr_9"}`), ResultRef: "tr_9"}
		require.NoError(t, s.Refill(ctx, idemstore.RefillParams{Record: rec, TTL: time.Hour}))
		got := told(t, w)
		assert.Equal(t, operation.StateDone, got.State)
		assert.Equal(t, "tr_9", got.ResultRef)
	})
}

// TestOutcomesSubscriptionBroken: killing the feed's connection loses every
// watch (an outcome published meanwhile would be missed), the feed
// subscribes again by itself, and tells outcomes again.
func TestOutcomesSubscriptionBroken(t *testing.T) {
	t.Parallel()
	_, rdb := newClient(t)
	ctx := context.Background()
	s := redisstore.New(rdb)
	o := readyFeed(t, s)
	c := claimed(t, s, "owner-a")
	w := watch(t, o, c.OperationID)

	require.NoError(t, rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	select {
	case <-w.Lost:
	case f := <-w.Outcome:
		require.FailNow(t, "told an outcome nobody wrote", "%+v", f)
	case <-time.After(outcomeWait):
		require.FailNow(t, "the watch was not lost")
	}
	require.Eventually(t, func() bool { return o.Subscriptions() == 2 && o.Ready() }, outcomeWait, 5*time.Millisecond,
		"the feed subscribes again")
	w = watch(t, o, c.OperationID)
	require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
	assert.Equal(t, operation.StateDone, told(t, w).State)
}

// TestOutcomesRedisDown: a Redis that stops loses every watch and the feed
// watches nothing until Redis is back and the subscription made again.
func TestOutcomesRedisDown(t *testing.T) {
	t.Parallel()
	srv, rdb := newClient(t)
	s := redisstore.New(rdb)
	o := readyFeed(t, s)
	w := watch(t, o, "op-down")
	srv.Stop()
	select {
	case <-w.Lost:
	case <-time.After(outcomeWait):
		require.FailNow(t, "the watch was not lost")
	}
	_, ok := o.Watch("op-down")
	assert.False(t, ok, "no watch while the subscription is broken")
	require.NoError(t, srv.Restart())
	require.Eventually(t, o.Ready, outcomeWait, 5*time.Millisecond, "the feed subscribes again")
	assert.EqualValues(t, 2, o.Subscriptions())
}

// TestOutcomesNotReady: a feed whose subscription is not confirmed watches
// nothing, and says so.
func TestOutcomesNotReady(t *testing.T) {
	t.Parallel()
	// Nothing listens on this address: the subscription never holds.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	o := redisstore.New(rdb).WatchOutcomes(nil)
	t.Cleanup(func() { _ = o.Close() })
	_, ok := o.Watch("op")
	assert.False(t, ok)
	assert.False(t, o.Ready())
}
