package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
)

// dec parses a decimal for the tests.
func dec(t testing.TB, s string) apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return *d
}

// charged is a claim of subject spending amount EUR against a daily window
// of max.
func charged(t testing.TB, subject, amount, max string) idemstore.Claim {
	t.Helper()
	c := storetest.NewClaim(t, "owner-"+storetest.NewKey(t)[:8])
	c.Subject = subject
	c.Charge = &idemstore.Charge{Amount: dec(t, amount), Currency: "EUR", Windows: []idemstore.Window{
		{Name: "daily-eur", Kind: "daily", Period: 24 * time.Hour, Max: dec(t, max)},
	}}
	return c
}

// used sums subject's counting reservations in EUR.
func used(t testing.TB, s *pgstore.Store, subject string) string {
	t.Helper()
	var sum string
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT coalesce(sum(amount), 0)::text FROM budget_reservation
		WHERE subject = $1 AND released_at IS NULL`, subject).Scan(&sum))
	return sum
}

func TestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)

	t.Run("ConcurrentClaimsNeverOverspend", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		outcomes := map[idemstore.ClaimOutcome]int{}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				d, err := s.Acquire(ctx, charged(t, "concurrent", "100.00", "1000.00"))
				assert.NoError(t, err)
				mu.Lock()
				outcomes[d.Outcome]++
				mu.Unlock()
			})
		}
		wg.Wait()
		assert.Equal(t, map[idemstore.ClaimOutcome]int{idemstore.OutcomeAcquired: 10, idemstore.OutcomeLimitExceeded: 10}, outcomes)
		assert.Equal(t, "1000.00", used(t, s, "concurrent"))
	})

	t.Run("AClaimWaitsForTheSubjectsClaimInFlight", func(t *testing.T) {
		t.Parallel()
		// A claim whose transaction has not committed yet: the next claim
		// of the subject must wait for it and then see its reservation.
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		var outcome string
		require.NoError(t, tx.QueryRow(ctx, `SELECT outcome FROM claim_operation($1, 'locked', 'payments.transfer', 'h', 'o',
			NULL, NULL, NULL, '', 600, 'EUR', '[{"scope":"","period_us":86400000000,"max":"1000"}]')`, storetest.NewKey(t)).Scan(&outcome))
		require.Equal(t, "ACQUIRED", outcome)
		second := make(chan idemstore.ClaimOutcome, 1)
		go func() {
			d, err := s.Acquire(ctx, charged(t, "locked", "600", "1000"))
			assert.NoError(t, err)
			second <- d.Outcome
		}()
		select {
		case o := <-second:
			t.Fatalf("the second claim answered %s before the first committed", o)
		case <-time.After(300 * time.Millisecond):
		}
		require.NoError(t, tx.Commit(ctx))
		assert.Equal(t, idemstore.OutcomeLimitExceeded, <-second, "it saw the first one's reservation")
		assert.Equal(t, "600", used(t, s, "locked"))
	})

	t.Run("RefusalSaysWhatIsUsedAndWhenItFrees", func(t *testing.T) {
		t.Parallel()
		first := charged(t, "frees", "600", "1000")
		d, err := s.Acquire(ctx, first)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		require.Len(t, d.Usage, 1)
		assert.Equal(t, "0", d.Usage[0].Used.Text('f'))

		d, err = s.Acquire(ctx, charged(t, "frees", "500", "1000"))
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		require.Len(t, d.Usage, 1)
		assert.Equal(t, "600", d.Usage[0].Used.Text('f'))
		reserved, err := s.GetReservation(ctx, first.OperationID)
		require.NoError(t, err)
		assert.WithinDuration(t, reserved.ReservedAt.Add(24*time.Hour), d.Usage[0].FreesAt, time.Millisecond,
			"the first reservation leaving the window makes room")

		d, err = s.Acquire(ctx, charged(t, "frees", "1000.01", "1000"))
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		assert.True(t, d.Usage[0].FreesAt.IsZero(), "more than the window's max never fits")
	})

	t.Run("ReplayIsNotCheckedAgain", func(t *testing.T) {
		t.Parallel()
		c := charged(t, "replay", "1000", "1000")
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
		d, err = s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome, "the same operation again is the same claim, whatever its budget")
		assert.Equal(t, "1000", used(t, s, "replay"))
	})

	t.Run("PerOperationWindow", func(t *testing.T) {
		t.Parallel()
		c := charged(t, "perop", "500.01", "1000")
		c.Charge.Windows = append(c.Charge.Windows, idemstore.Window{Name: "per-op", Kind: "per_operation", Max: dec(t, "500")})
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		require.Len(t, d.Usage, 2)
		assert.Equal(t, "0", d.Usage[1].Used.Text('f'))
		assert.True(t, d.Usage[1].FreesAt.IsZero())
		_, err = s.Get(ctx, c.OperationID)
		assert.ErrorIs(t, err, idemstore.ErrNotFound, "nothing claimed")
	})

	t.Run("ReleasedOnlyByAProofThatNothingRan", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			state    idemstore.State
			kind     idemstore.FailureKind
			released bool
		}{
			{idemstore.StateDone, "", false},
			{idemstore.StateFailed, idemstore.FailureRefused, true},
			{idemstore.StateFailed, idemstore.FailureNotExecuted, true},
			{idemstore.StateFailed, idemstore.FailureNotSent, true},
			{idemstore.StateFailed, idemstore.FailureOperator, true},
			{idemstore.StateFailed, "", false},
		} {
			subject := fmt.Sprintf("release-%s-%s", tc.state, tc.kind)
			c := charged(t, subject, "10", "10")
			_, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			f := storetest.Done(c, c.Owner)
			if tc.state == idemstore.StateFailed {
				f = idemstore.Finalization{OperationID: c.OperationID, Owner: c.Owner,
					Final: idemstore.Final{State: tc.state, Reason: "no", FailureKind: tc.kind}}
			}
			require.NoError(t, s.Finalize(ctx, f))
			r, err := s.GetReservation(ctx, c.OperationID)
			require.NoError(t, err)
			assert.Equal(t, tc.released, !r.ReleasedAt.IsZero(), subject)
			next, err := s.Acquire(ctx, charged(t, subject, "10", "10"))
			require.NoError(t, err)
			want := idemstore.OutcomeLimitExceeded
			if tc.released {
				want = idemstore.OutcomeAcquired
			}
			assert.Equal(t, want, next.Outcome, "%s: a new operation fits only after a release", subject)
		}
	})

	t.Run("ReleaseOfAnUnstartedClaimGivesItBack", func(t *testing.T) {
		t.Parallel()
		c := charged(t, "unstarted", "10", "10")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: c.Owner}))
		_, err = s.GetReservation(ctx, c.OperationID)
		assert.True(t, errors.Is(err, idemstore.ErrNotFound))
		d, err := s.Acquire(ctx, charged(t, "unstarted", "10", "10"))
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	})

	t.Run("ResetStartsTheWindowsAfresh", func(t *testing.T) {
		t.Parallel()
		_, err := s.Acquire(ctx, charged(t, "reset", "10", "10"))
		require.NoError(t, err)
		c := charged(t, "reset", "10", "10")
		u, err := s.Usage(ctx, "reset", *c.Charge)
		require.NoError(t, err)
		require.Len(t, u, 1)
		assert.Equal(t, "10", u[0].Used.Text('f'))
		r, err := s.ResetBudget(ctx, idemstore.BudgetReset{Subject: "reset", By: "ops"})
		require.NoError(t, err)
		assert.False(t, r.At.IsZero())
		u, err = s.Usage(ctx, "reset", *c.Charge)
		require.NoError(t, err)
		assert.Equal(t, "0", u[0].Used.Text('f'))
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	})

	t.Run("ScopedWindowCountsItsActionOnly", func(t *testing.T) {
		t.Parallel()
		other := charged(t, "scoped", "10", "10")
		other.Scope = "payments.payout"
		_, err := s.Acquire(ctx, other)
		require.NoError(t, err)
		c := charged(t, "scoped", "10", "10")
		c.Charge.Windows[0].Scope = "payments.transfer"
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	})
}
