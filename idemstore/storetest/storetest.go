// Package storetest is the one test suite every idemstore backend passes:
// the Redis fast path, the PostgreSQL truth and the combined degrading
// store. Each backend's test file calls Exercise with a constructor that
// gives every subtest a store on isolated state (or on shared state: the
// suite uses fresh random keys).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
)

// NewKey returns a random operation id shaped like a nonce (32 hex chars).
func NewKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// NewClaim returns a claim on a fresh key with sane TTLs, owned by owner.
func NewClaim(t testing.TB, owner string) idemstore.Claim {
	t.Helper()
	return idemstore.Claim{
		Key:            NewKey(t),
		ParamHash:      "a3f1c2d4e5b6a7980a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071",
		Owner:          owner,
		Subject:        "alice",
		Scope:          "payments.transfer",
		InFlightTTL:    time.Minute,
		TerminalTTL:    time.Hour,
		FingerprintExp: time.Now().Add(15 * time.Minute).Truncate(time.Second),
	}
}

// Done returns a DONE finalization of c by owner.
func Done(c idemstore.Claim, owner string) idemstore.Finalization {
	return idemstore.Finalization{
		Key: c.Key, Owner: owner, State: idemstore.StateDone,
		Result:    json.RawMessage(`{"transfer_id":"tr_123","amount":"12.5","currency":"USD"}`),
		ResultRef: "tr_123", TerminalTTL: time.Hour,
	}
}

// Failed returns a FAILED finalization of c by owner.
func Failed(c idemstore.Claim, owner string) idemstore.Finalization {
	return idemstore.Finalization{
		Key: c.Key, Owner: owner, State: idemstore.StateFailed,
		Reason: "insufficient_funds", FailureKind: idemstore.FailureRefused, TerminalTTL: time.Hour,
	}
}

// testBundle is what one subtest works with.
type testBundle struct {
	store idemstore.Store
}

// Exercise runs the shared suite against the stores newStore returns.
func Exercise(t *testing.T, newStore func(t *testing.T) idemstore.Store) {
	t.Helper()

	setup := func(_ context.Context, t *testing.T) (idemstore.Store, *testBundle) {
		t.Helper()
		s := newStore(t)
		return s, &testBundle{store: s}
	}

	t.Run("AcquireFirstTime", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		assert.Equal(t, "owner-a", d.Owner)
		assert.False(t, d.ClaimedAt.IsZero(), "ClaimedAt")
		assert.WithinDuration(t, time.Now(), d.ClaimedAt, 10*time.Second)
	})

	t.Run("AcquireSameClaimAgainIsInFlight", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		for _, owner := range []string{"owner-a", "owner-b"} {
			retry := c
			retry.Owner = owner
			d, err := s.Acquire(ctx, retry)
			require.NoError(t, err)
			assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
			assert.Equal(t, "owner-a", d.Owner, "the first claim's owner")
			assert.False(t, d.ClaimedAt.IsZero(), "ClaimedAt")
		}

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateInFlight, rec.State)
		assert.Equal(t, "owner-a", rec.Owner)
		assert.Equal(t, c.ParamHash, rec.ParamHash)
	})

	t.Run("AcquireOtherParamHashIsMismatch", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		swapped := c
		swapped.ParamHash = "ffff" + c.ParamHash[4:]
		swapped.Owner = "owner-b"
		d, err := s.Acquire(ctx, swapped)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeParamMismatch, d.Outcome)

		// Mismatch also after the operation finished, and it changes nothing.
		require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
		d, err = s.Acquire(ctx, swapped)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeParamMismatch, d.Outcome)
		d, err = s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
	})

	t.Run("AcquireAfterDoneReplaysResult", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		f := Done(c, "owner-a")
		require.NoError(t, s.Finalize(ctx, f))

		retry := c
		retry.Owner = "owner-b"
		d, err := s.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, idemstore.StateDone, d.Record.State)
		assert.JSONEq(t, string(f.Result), string(d.Record.Result))
		assert.Equal(t, "tr_123", d.Record.ResultRef)

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
		assert.Equal(t, "tr_123", rec.ResultRef)
		assert.JSONEq(t, string(f.Result), string(rec.Result))
		assert.Equal(t, "owner-a", rec.Owner)
	})

	t.Run("AcquireAfterFailedReplaysReason", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, Failed(c, "owner-a")))

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeFailed, d.Outcome)
		assert.Equal(t, idemstore.StateFailed, d.Record.State)
		assert.Equal(t, "insufficient_funds", d.Record.Reason)
		assert.Equal(t, idemstore.FailureRefused, d.Record.FailureKind, "how the failure is known is replayed with it")
		assert.Empty(t, d.Record.Result)
	})

	t.Run("FinalizeIsIdempotentAndNeverOverwrites", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))

		// The same outcome again (an activity retry) succeeds; the first result stands.
		again := Done(c, "owner-a")
		again.ResultRef = "tr_other"
		require.NoError(t, s.Finalize(ctx, again))
		// Another outcome is refused.
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, "owner-a")), idemstore.ErrAlreadyTerminal)

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
		assert.Equal(t, "tr_123", rec.ResultRef)
	})

	t.Run("FinalizeByNonOwner", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-x")), idemstore.ErrNotOwner)
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, "owner-x")), idemstore.ErrNotOwner)

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateInFlight, rec.State)
		assert.Equal(t, "owner-a", rec.Owner)
		assert.Empty(t, rec.ResultRef)
	})

	t.Run("FinalizeMissingKey", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-a")), idemstore.ErrNotOwner)
		_, err := s.Get(ctx, c.Key)
		require.ErrorIs(t, err, idemstore.ErrNotFound)
	})

	t.Run("OutOfOrderFinalizeAfterTakeover", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		require.NoError(t, s.Takeover(ctx, c.Key, "owner-a", "owner-b", time.Minute))
		// A second takeover from the old owner fails.
		require.ErrorIs(t, s.Takeover(ctx, c.Key, "owner-a", "owner-c", time.Minute), idemstore.ErrNotOwner)

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, "owner-b", d.Owner)

		require.NoError(t, s.Finalize(ctx, Done(c, "owner-b")))
		// A's late finalize must not overwrite B's.
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, "owner-a")), idemstore.ErrNotOwner)

		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateDone, rec.State)
		assert.Equal(t, "owner-b", rec.Owner)
		assert.Equal(t, "tr_123", rec.ResultRef)
		assert.Empty(t, rec.Reason)

		// Terminal records cannot be taken over.
		require.ErrorIs(t, s.Takeover(ctx, c.Key, "owner-b", "owner-c", time.Minute), idemstore.ErrNotOwner)
	})

	t.Run("LateFinalizeBeforeNewOwnerFinishes", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Takeover(ctx, c.Key, "owner-a", "owner-b", time.Minute))

		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-a")), idemstore.ErrNotOwner)
		rec, err := s.Get(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, idemstore.StateInFlight, rec.State)
		assert.Equal(t, "owner-b", rec.Owner)

		require.NoError(t, s.Finalize(ctx, Failed(c, "owner-b")))
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeFailed, d.Outcome)
		assert.Equal(t, "insufficient_funds", d.Record.Reason)
	})

	t.Run("TakeoverMissingKey", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		require.ErrorIs(t, s.Takeover(ctx, NewKey(t), "owner-a", "owner-b", time.Minute), idemstore.ErrNotOwner)
	})

	t.Run("GetNotFound", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		_, err := s.Get(ctx, NewKey(t))
		require.ErrorIs(t, err, idemstore.ErrNotFound)
	})

	t.Run("ConcurrentAcquireExactlyOneWins", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, _ := setup(ctx, t)
		c := NewClaim(t, "")

		const n = 200
		decisions := make([]idemstore.Decision, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				claim := c
				claim.Owner = "owner-" + strconv.Itoa(i)
				<-start
				decisions[i], errs[i] = s.Acquire(ctx, claim)
			})
		}
		close(start)
		wg.Wait()

		var winner string
		acquired, inFlight := 0, 0
		for i := range n {
			require.NoError(t, errs[i], "acquire %d", i)
			switch decisions[i].Outcome {
			case idemstore.OutcomeAcquired:
				acquired++
				winner = decisions[i].Owner
			case idemstore.OutcomeInFlight:
				inFlight++
			default:
				t.Errorf("acquire %d: unexpected outcome %s", i, decisions[i].Outcome)
			}
		}
		assert.Equal(t, 1, acquired, "exactly one ACQUIRED")
		assert.Equal(t, n-1, inFlight, "all others IN_FLIGHT")
		for i := range n {
			if decisions[i].Outcome == idemstore.OutcomeInFlight {
				assert.Equal(t, winner, decisions[i].Owner, "IN_FLIGHT names the winner")
			}
		}
	})
}
