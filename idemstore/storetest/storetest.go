// Package storetest is the one test suite every idemstore backend passes:
// Exercise checks an idemstore.Store (the PostgreSQL truth and the combined
// degrading store), ExerciseFastPath an idemstore.FastPath (the Redis fast
// path); both share the state machine's tests. Each backend's test file
// calls them with a constructor that gives every subtest a store on isolated
// state, or on shared state: the parallel subtests use fresh random keys,
// and the few that need the whole store (Reap, List) run first, one at a
// time.
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
	"github.com/oncegate/oncegate/operation"
)

// NewKey returns a random operation id shaped like a nonce (32 hex chars).
func NewKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// NewClaim returns a claim on a fresh operation id with sane TTLs, owned by owner.
func NewClaim(t testing.TB, owner string) idemstore.Claim {
	t.Helper()
	return idemstore.Claim{
		OperationID:    NewKey(t),
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
		OperationID: c.OperationID, Owner: owner, TerminalTTL: time.Hour, Final: operation.Final{
			State:     operation.StateDone,
			Result:    json.RawMessage(`{"transfer_id":"tr_123","amount":"12.5","currency":"USD"}`),
			ResultRef: "tr_123",
		},
	}
}

// Failed returns a FAILED finalization of c by owner.
func Failed(c idemstore.Claim, owner string) idemstore.Finalization {
	return idemstore.Finalization{
		OperationID: c.OperationID, Owner: owner, TerminalTTL: time.Hour, Final: operation.Final{
			State: operation.StateFailed, Reason: "insufficient_funds", FailureKind: operation.FailureRefused,
		},
	}
}

// machine is the state machine Store and FastPath share.
type machine interface {
	Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error)
	Get(ctx context.Context, opID string) (idemstore.Record, error)
	Finalize(ctx context.Context, f idemstore.Finalization) error
	Takeover(ctx context.Context, p idemstore.TakeoverParams) error
	Release(ctx context.Context, p idemstore.ReleaseParams) error
}

var (
	_ machine = idemstore.Store(nil)
	_ machine = fastMachine{}
)

// fastMachine is a FastPath as a machine: its Acquire answers the claim's
// decision (FastPath.Acquire also reports the recent-intent index's write,
// which exerciseFastPath checks).
type fastMachine struct{ idemstore.FastPath }

// Acquire is the fast path's Acquire without its index report.
func (f fastMachine) Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	fc, err := f.FastPath.Acquire(ctx, c)
	return fc.ClaimDecision, err
}

// takeover is the TakeoverParams of operation opID from one owner to another with a minute's TTL.
func takeover(opID, from, to string) idemstore.TakeoverParams {
	return idemstore.TakeoverParams{OperationID: opID, FromOwner: from, ToOwner: to, TTL: time.Minute}
}

// ExerciseFastPath runs the state machine's tests and the fast path's own
// against the fast paths newFast returns.
func ExerciseFastPath(t *testing.T, newFast func(t *testing.T) idemstore.FastPath) {
	t.Helper()
	exerciseMachine(t, func(t *testing.T) fastMachine { return fastMachine{newFast(t)} })
	exerciseFastPath(t, newFast)
}

// Exercise runs the state machine's tests and those of the rest of
// idemstore.Store against the stores newStore returns.
func Exercise(t *testing.T, newStore func(t *testing.T) idemstore.Store) {
	t.Helper()
	exerciseStore(t, newStore) // first: its whole-store subtests are not parallel
	exerciseMachine(t, newStore)
}

// exerciseMachine runs the tests every backend passes.
func exerciseMachine[S machine](t *testing.T, newStore func(t *testing.T) S) {
	t.Helper()
	t.Run("AcquireFirstTime", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
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
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		c.ActingClient = "agent-app-1"
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		for _, owner := range []string{"owner-a", "owner-b"} {
			retry := c
			retry.Owner = owner
			retry.ActingClient = "agent-app-2"
			d, err := s.Acquire(ctx, retry)
			require.NoError(t, err)
			assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
			assert.Equal(t, "owner-a", d.Owner, "the first claim's owner")
			assert.False(t, d.ClaimedAt.IsZero(), "ClaimedAt")
			assert.Equal(t, "agent-app-1", d.Record.ActingClient, "the holder's client: what an attached confirm's receipt names")
		}

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateInFlight, rec.State)
		assert.Equal(t, "owner-a", rec.Owner)
		assert.Equal(t, c.ParamHash, rec.ParamHash)
	})

	t.Run("AcquireOtherParamHashIsMismatch", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
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
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		f := Done(c, "owner-a")
		require.NoError(t, s.Finalize(ctx, f))

		// A retry by another client of the same subject replays; the first
		// confirm's client stays the one that acted.
		retry := c
		retry.Owner = "owner-b"
		retry.ActingClient = "agent-app-2"
		d, err := s.Acquire(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, operation.StateDone, d.Record.State)
		assert.JSONEq(t, string(f.Result), string(d.Record.Result))
		assert.Equal(t, "tr_123", d.Record.ResultRef)

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "tr_123", rec.ResultRef)
		assert.JSONEq(t, string(f.Result), string(rec.Result))
		assert.Equal(t, "owner-a", rec.Owner)
	})

	t.Run("AcquireAfterFailedReplaysReason", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, Failed(c, "owner-a")))

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeFailed, d.Outcome)
		assert.Equal(t, operation.StateFailed, d.Record.State)
		assert.Equal(t, "insufficient_funds", d.Record.Reason)
		assert.Equal(t, operation.FailureRefused, d.Record.FailureKind, "how the failure is known is replayed with it")
		assert.Empty(t, d.Record.Result)
	})

	t.Run("ReplayNamesWhatTheReceiptStates", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		c.ApprovalSHA256 = "5d41402abc4b2a76b9719d911017c592b5d41402abc4b2a76b9719d911017c59"
		c.ActingClient = "agent-app-1"
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, c.ApprovalSHA256, rec.ApprovalSHA256, "kept with the claim")
		assert.Equal(t, c.ActingClient, rec.ActingClient, "kept with the claim")
		assert.True(t, rec.CompletedAt.IsZero(), "not terminal yet")

		f := Done(c, "owner-a")
		f.CompletedAt = time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		require.NoError(t, s.Finalize(ctx, f))
		again := Done(c, "owner-a") // an activity retry: the first time stands
		again.CompletedAt = f.CompletedAt.Add(time.Second)
		require.NoError(t, s.Finalize(ctx, again))

		// The replay of a claim and a read name the same facts, whichever
		// backend answers: a receipt built from either is the same.
		retry := c
		retry.Owner = "owner-b"
		d, err := s.Acquire(ctx, retry)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeDone, d.Outcome)
		got, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		for name, rec := range map[string]idemstore.Record{"acquire": d.Record, "get": got} {
			assert.Equal(t, c.Subject, rec.Subject, name)
			assert.Equal(t, c.Scope, rec.Scope, name)
			assert.Equal(t, c.ParamHash, rec.ParamHash, name)
			assert.Equal(t, c.ApprovalSHA256, rec.ApprovalSHA256, name)
			assert.Equal(t, c.ActingClient, rec.ActingClient, name+": the first confirm's client")
			assert.Equal(t, f.CompletedAt.UnixMilli(), rec.CompletedAt.UnixMilli(), name+": the decided time, to the millisecond")
		}

		// Without a decided time the store's clock is the completed time.
		plain := NewClaim(t, "owner-a")
		_, err = s.Acquire(ctx, plain)
		require.NoError(t, err)
		require.NoError(t, s.Finalize(ctx, Failed(plain, "owner-a")))
		rec, err = s.Get(ctx, plain.OperationID)
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), rec.CompletedAt, time.Minute)
		assert.Empty(t, rec.ApprovalSHA256)
		assert.Empty(t, rec.ActingClient, "no client named, none stored")
	})

	t.Run("FinalizeIsIdempotentAndNeverOverwrites", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
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

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "tr_123", rec.ResultRef)
	})

	t.Run("FinalizeByNonOwner", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-x")), idemstore.ErrNotOwner)
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, "owner-x")), idemstore.ErrNotOwner)

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateInFlight, rec.State)
		assert.Equal(t, "owner-a", rec.Owner)
		assert.Empty(t, rec.ResultRef)
	})

	t.Run("FinalizeMissingKey", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-a")), idemstore.ErrNotOwner)
		_, err := s.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound)
	})

	t.Run("OutOfOrderFinalizeAfterTakeover", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)

		require.NoError(t, s.Takeover(ctx, takeover(c.OperationID, "owner-a", "owner-b")))
		// A second takeover from the old owner fails.
		require.ErrorIs(t, s.Takeover(ctx, takeover(c.OperationID, "owner-a", "owner-c")), idemstore.ErrNotOwner)

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.Equal(t, "owner-b", d.Owner)

		require.NoError(t, s.Finalize(ctx, Done(c, "owner-b")))
		// A's late finalize must not overwrite B's.
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, "owner-a")), idemstore.ErrNotOwner)

		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "owner-b", rec.Owner)
		assert.Equal(t, "tr_123", rec.ResultRef)
		assert.Empty(t, rec.Reason)

		// Terminal records cannot be taken over.
		require.ErrorIs(t, s.Takeover(ctx, takeover(c.OperationID, "owner-b", "owner-c")), idemstore.ErrNotOwner)
	})

	t.Run("LateFinalizeBeforeNewOwnerFinishes", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Takeover(ctx, takeover(c.OperationID, "owner-a", "owner-b")))

		require.ErrorIs(t, s.Finalize(ctx, Done(c, "owner-a")), idemstore.ErrNotOwner)
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateInFlight, rec.State)
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
		s := newStore(t)
		require.ErrorIs(t, s.Takeover(ctx, takeover(NewKey(t), "owner-a", "owner-b")), idemstore.ErrNotOwner)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.ErrorIs(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-b"}), idemstore.ErrNotOwner,
			"another owner's claim stays")
		require.NoError(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-a"}))
		_, err = s.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound)

		// Released: claimable again. A record that left IN_FLIGHT is never released.
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
		require.ErrorIs(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-a"}), idemstore.ErrNotOwner)
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
	})

	t.Run("GetNotFound", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		_, err := s.Get(ctx, NewKey(t))
		require.ErrorIs(t, err, idemstore.ErrNotFound)
	})

	t.Run("ConcurrentAcquireExactlyOneWins", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		c := NewClaim(t, "")

		const n = 200
		decisions := make([]idemstore.ClaimDecision, n)
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
			case idemstore.OutcomeDone, idemstore.OutcomeFailed, idemstore.OutcomeParamMismatch, idemstore.OutcomeLimitExceeded,
				idemstore.OutcomeMandateRefused:
				t.Errorf("acquire %d: unexpected outcome %s", i, decisions[i].Outcome)
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

// Exists reports whether s still holds c's record; false when it answers
// ErrNotFound (reaped), and t fails on any other error.
func Exists(t testing.TB, s idemstore.Store, c idemstore.Claim) bool {
	t.Helper()
	_, err := s.Get(context.Background(), c.OperationID)
	if err != nil {
		require.ErrorIs(t, err, idemstore.ErrNotFound)
		return false
	}
	return true
}
