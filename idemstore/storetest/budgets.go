package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// BudgetStore is a backend whose claims reserve what their Charge spends
// (the PostgreSQL truth, the in-memory store), and which reads and resets
// the budgets' windows.
type BudgetStore interface {
	idemstore.Store
	// Usage is what each window of c holds of subject's reservations in
	// c.Currency, and when c.Amount would fit it; it writes nothing.
	Usage(ctx context.Context, subject string, c operation.Charge) ([]operation.WindowUsage, error)
	// Currencies lists the currencies subject holds reservations in since since.
	Currencies(ctx context.Context, subject string, since time.Time) ([]string, error)
	// ResetBudget starts r.Subject's windows afresh, now, and returns the reset as recorded.
	ResetBudget(ctx context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error)
	// LastReset is subject's last reset, or idemstore.ErrNotFound.
	LastReset(ctx context.Context, subject string) (idemstore.BudgetReset, error)
}

// ExerciseBudgets runs the tests of the budgets against the stores newStore
// returns: a claim with a Charge reserves its amount in the claim itself or
// is refused (OutcomeLimitExceeded) over one of its windows, writing
// nothing; only a finalization that ReleasesBudget, or the release of an
// unstarted claim, gives a reservation back; Usage, Currencies,
// ResetBudget and LastReset read and reset the windows. Every subtest
// uses its own subjects, so the stores may be shared among them, but not
// with another suite running at the same time: the first subtest reaps
// (idemstore.ReservationRetention ahead), one at a time.
func ExerciseBudgets(t *testing.T, newStore func(t *testing.T) BudgetStore) {
	t.Helper()
	ctx := context.Background()
	// setup gives a subtest its store and a subject of its own.
	setup := func(t *testing.T) (BudgetStore, string) {
		t.Helper()
		return newStore(t), newSubject(t)
	}

	// Not parallel: it reaps a month ahead.
	t.Run("ReapForgetsReservationsPastTheirRetention", func(t *testing.T) {
		s, subject := setup(t)
		c := charged(t, subject, "10", "10")
		acquired(t, s, c)
		_, err := s.Reap(ctx, time.Now().Add(idemstore.ReservationRetention-time.Minute))
		require.NoError(t, err)
		assertDec(t, "10", usedOf(t, s, subject), "kept within the retention")
		_, err = s.Reap(ctx, time.Now().Add(idemstore.ReservationRetention+time.Minute))
		require.NoError(t, err)
		assertDec(t, "0", usedOf(t, s, subject), "reaped after it")
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateInFlight, rec.State, "the operation itself is never reaped in flight")
	})

	t.Run("FreesAtIsWhenEnoughHasLeft", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		// 10, 10 and 30 reserved, in this order, of a max of 60: 21 more
		// fits once 11 have left, so when the second reservation leaves,
		// not the first (10 is not enough) nor the last.
		acquired(t, s, charged(t, subject, "10", "60"))
		second := acquired(t, s, charged(t, subject, "10", "60"))
		acquired(t, s, charged(t, subject, "30", "60"))
		over := charged(t, subject, "21", "60")
		d, err := s.Acquire(ctx, over)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		require.Len(t, d.Usage, 1)
		assertDec(t, "50", d.Usage[0].Used, "what the window holds")
		assert.WithinDuration(t, second.ClaimedAt.Add(24*time.Hour), d.Usage[0].FreesAt, time.Millisecond,
			"the second reservation leaving makes room for 21")
		read, err := s.Usage(ctx, subject, *over.Charge)
		require.NoError(t, err)
		require.Len(t, read, 1)
		assert.True(t, d.Usage[0].FreesAt.Equal(read[0].FreesAt), "Usage reads what the claim saw: %s, want %s", read[0].FreesAt, d.Usage[0].FreesAt)
	})

	t.Run("ConcurrentClaimsNeverOverspend", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		var mu sync.Mutex
		outcomes := map[idemstore.ClaimOutcome]int{}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				d, err := s.Acquire(ctx, charged(t, subject, "100.00", "1000.00"))
				assert.NoError(t, err)
				mu.Lock()
				outcomes[d.Outcome]++
				mu.Unlock()
			})
		}
		wg.Wait()
		assert.Equal(t, map[idemstore.ClaimOutcome]int{idemstore.OutcomeAcquired: 10, idemstore.OutcomeLimitExceeded: 10}, outcomes)
		assertDec(t, "1000", usedOf(t, s, subject), "reserved")
	})

	t.Run("RefusalSaysWhatIsUsedAndWhenItFrees", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		first := acquired(t, s, charged(t, subject, "600", "1000"))
		require.Len(t, first.Usage, 1, "the usage before the claim, one per window")
		assertDec(t, "0", first.Usage[0].Used, "nothing before the first")

		over := charged(t, subject, "500", "1000")
		d, err := s.Acquire(ctx, over)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		require.Len(t, d.Usage, 1)
		assertDec(t, "600", d.Usage[0].Used, "what the window holds")
		assert.WithinDuration(t, first.ClaimedAt.Add(24*time.Hour), d.Usage[0].FreesAt, time.Millisecond,
			"the first reservation leaving the window makes room")
		_, err = s.Get(ctx, over.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "a refused claim writes nothing")
		assertDec(t, "600", usedOf(t, s, subject), "and reserves nothing")

		read, err := s.Usage(ctx, subject, *over.Charge)
		require.NoError(t, err)
		require.Len(t, read, 1)
		assertDec(t, "600", read[0].Used, "Usage reads what the claim saw")
		assert.True(t, d.Usage[0].FreesAt.Equal(read[0].FreesAt), "%s, want %s", read[0].FreesAt, d.Usage[0].FreesAt)

		d, err = s.Acquire(ctx, charged(t, subject, "1000.01", "1000"))
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		assert.True(t, d.Usage[0].FreesAt.IsZero(), "more than the window's max never fits")
		d = acquired(t, s, charged(t, subject, "400", "1000"))
		assertDec(t, "600", d.Usage[0].Used, "exactly up to the max fits")
	})

	t.Run("ReplayIsNotCheckedAgain", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		c := charged(t, subject, "1000", "1000")
		acquired(t, s, c)
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome, "the same operation again is the same claim, whatever its budget")
		require.NoError(t, s.Finalize(ctx, Done(c, c.Owner)))
		d, err = s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome, "and its replay once done")
		assertDec(t, "1000", usedOf(t, s, subject), "reserved once")
	})

	t.Run("PerOperationWindow", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		perOp := operation.Window{Name: "per-op", Kind: "per_operation", Max: dec(t, "500")}
		c := charged(t, subject, "500.01", "1000")
		c.Charge.Windows = append(c.Charge.Windows, perOp)
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		require.Len(t, d.Usage, 2)
		assertDec(t, "0", d.Usage[1].Used, "a per-operation window holds nothing")
		assert.True(t, d.Usage[1].FreesAt.IsZero(), "and never frees")
		_, err = s.Get(ctx, c.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "nothing claimed")

		for range 2 {
			fits := charged(t, subject, "500", "1000")
			fits.Charge.Windows = append(fits.Charge.Windows, perOp)
			d = acquired(t, s, fits)
			assertDec(t, "0", d.Usage[1].Used, "the operations before do not count in it")
		}
	})

	t.Run("ReleasedOnlyByAProofThatNothingRan", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, tc := range []struct {
			review   bool
			state    operation.State
			kind     operation.FailureKind
			released bool
		}{
			{false, operation.StateDone, "", false},
			{false, operation.StateFailed, operation.FailureRefused, true},
			{false, operation.StateFailed, operation.FailureNotExecuted, true},
			{false, operation.StateFailed, operation.FailureNotSent, true},
			{false, operation.StateFailed, "", false},
			{true, operation.StateFailed, operation.FailureOperator, true},
			{true, operation.StateDone, "", false},
		} {
			name := fmt.Sprintf("review=%t %s %q", tc.review, tc.state, tc.kind)
			subject := newSubject(t)
			c := charged(t, subject, "10", "10")
			acquired(t, s, c)
			if tc.review {
				require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "unknown"}))
			}
			f := Done(c, c.Owner)
			if tc.state == operation.StateFailed {
				f = idemstore.Finalization{OperationID: c.OperationID, Owner: c.Owner,
					Final: operation.Final{State: tc.state, Reason: "no", FailureKind: tc.kind}}
			}
			require.NoError(t, s.Finalize(ctx, f), name)
			require.NoError(t, s.Finalize(ctx, f), "%s: a retried finalize", name)
			want, outcome := "10", idemstore.OutcomeLimitExceeded
			if tc.released {
				want, outcome = "0", idemstore.OutcomeAcquired
			}
			assertDec(t, want, usedOf(t, s, subject), name)
			next, err := s.Acquire(ctx, charged(t, subject, "10", "10"))
			require.NoError(t, err)
			assert.Equal(t, outcome, next.Outcome, "%s: a new operation fits only after a release", name)
		}
	})

	t.Run("AFinalizationRefusedReleasesNothing", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		c := charged(t, subject, "10", "10")
		acquired(t, s, c)
		refused := Failed(c, "owner-x")
		require.ErrorIs(t, s.Finalize(ctx, refused), idemstore.ErrNotOwner)
		assertDec(t, "10", usedOf(t, s, subject), "another owner's failure releases nothing")
		require.NoError(t, s.Finalize(ctx, Done(c, c.Owner)))
		require.ErrorIs(t, s.Finalize(ctx, Failed(c, c.Owner)), idemstore.ErrAlreadyTerminal)
		assertDec(t, "10", usedOf(t, s, subject), "a failure after the outcome releases nothing")
	})

	t.Run("ReleaseOfAnUnstartedClaimGivesItBack", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		c := charged(t, subject, "10", "20")
		acquired(t, s, c)
		require.ErrorIs(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: "owner-x"}), idemstore.ErrNotOwner)
		assertDec(t, "10", usedOf(t, s, subject), "another owner's release gives nothing back")
		require.NoError(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: c.OperationID, Owner: c.Owner}))
		assertDec(t, "0", usedOf(t, s, subject), "released with its claim")
		acquired(t, s, charged(t, subject, "10", "20"))
		acquired(t, s, c) // the released operation, claimed again, reserves again
		assertDec(t, "20", usedOf(t, s, subject), "reserved again")
		d, err := s.Acquire(ctx, charged(t, subject, "10", "20"))
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome, "the window is full again")
	})

	t.Run("ResetStartsTheWindowsAfresh", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		_, err := s.LastReset(ctx, subject)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "never reset")
		acquired(t, s, charged(t, subject, "10", "10"))
		c := charged(t, subject, "10", "10")
		assertDec(t, "10", usedOf(t, s, subject), "before the reset")

		before := time.Now().Add(-time.Second)
		r, err := s.ResetBudget(ctx, idemstore.BudgetReset{Subject: subject, By: "ops", TraceID: "t-reset"})
		require.NoError(t, err)
		assert.WithinRange(t, r.At, before, time.Now().Add(time.Second), "reset now")
		assert.Equal(t, subject, r.Subject)
		assert.Equal(t, "ops", r.By)
		last, err := s.LastReset(ctx, subject)
		require.NoError(t, err)
		sameTime(t, r.At, last.At, "the last reset")
		assert.Equal(t, "ops", last.By)
		assert.Equal(t, "t-reset", last.TraceID)
		assert.Equal(t, subject, last.Subject)
		_, err = s.LastReset(ctx, newSubject(t))
		require.ErrorIs(t, err, idemstore.ErrNotFound, "another subject's windows are not reset")

		assertDec(t, "0", usedOf(t, s, subject), "after the reset")
		acquired(t, s, c)
		assertDec(t, "10", usedOf(t, s, subject), "what is claimed after it counts")

		again, err := s.ResetBudget(ctx, idemstore.BudgetReset{Subject: subject, By: "ops-2"})
		require.NoError(t, err)
		assert.False(t, again.At.Before(r.At))
		last, err = s.LastReset(ctx, subject)
		require.NoError(t, err)
		assert.Equal(t, "ops-2", last.By, "the latest reset is the last")
		assertDec(t, "0", usedOf(t, s, subject), "after the second reset")
	})

	t.Run("AWindowCountsItsSubjectCurrencyAndScope", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		payout := charged(t, subject, "10", "100")
		payout.Scope = "payments.payout"
		acquired(t, s, payout)
		dollars := charged(t, subject, "20", "100")
		dollars.Charge.Currency = "USD"
		acquired(t, s, dollars)
		acquired(t, s, charged(t, newSubject(t), "40", "100"))
		acquired(t, s, charged(t, subject, "1", "100"))

		scoped := charged(t, subject, "1", "100")
		scoped.Charge.Windows = append(scoped.Charge.Windows, scoped.Charge.Windows[0])
		scoped.Charge.Windows[1].Scope = "payments.transfer"
		u, err := s.Usage(ctx, subject, *scoped.Charge)
		require.NoError(t, err)
		require.Len(t, u, 2)
		assertDec(t, "11", u[0].Used, "every action's euros of the subject")
		assertDec(t, "1", u[1].Used, "payments.transfer's only")

		only := charged(t, subject, "99", "100")
		only.Charge.Windows[0].Scope = "payments.transfer"
		acquired(t, s, only) // 1 + 99 of payments.transfer fit its scoped window
	})

	t.Run("Currencies", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		before := time.Now().Add(-time.Minute)
		list := func(since time.Time) []string {
			t.Helper()
			cs, err := s.Currencies(ctx, subject, since)
			require.NoError(t, err)
			return cs
		}
		assert.Empty(t, list(before))
		for _, cur := range []string{"USD", "EUR", "USD"} {
			c := charged(t, subject, "1", "100")
			c.Charge.Currency = cur
			acquired(t, s, c)
		}
		chf := charged(t, subject, "1", "100")
		chf.Charge.Currency = "CHF"
		acquired(t, s, chf)
		require.NoError(t, s.Finalize(ctx, Failed(chf, chf.Owner)))
		assert.Equal(t, []string{"EUR", "USD"}, list(before), "sorted, once each, released ones left out")
		assert.Empty(t, list(time.Now().Add(time.Minute)), "none reserved since")
	})

	t.Run("RollingWindowForgets", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		short := func(amount string) idemstore.Claim {
			c := charged(t, subject, amount, "10")
			c.Charge.Windows[0].Period = 700 * time.Millisecond
			return c
		}
		first := acquired(t, s, short("10"))
		d, err := s.Acquire(ctx, short("10"))
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
		frees := d.Usage[0].FreesAt
		assert.WithinDuration(t, first.ClaimedAt.Add(700*time.Millisecond), frees, time.Millisecond)
		time.Sleep(time.Until(frees) + 50*time.Millisecond)
		d = acquired(t, s, short("10"))
		assertDec(t, "0", d.Usage[0].Used, "the first reservation left the window")
	})

	t.Run("AChargeWithoutWindowsIsReservedUnchecked", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		c := charged(t, subject, "5000", "10")
		c.Charge.Windows = nil
		d := acquired(t, s, c)
		assert.Empty(t, d.Usage, "no window to report")
		assertDec(t, "5000", usedOf(t, s, subject), "what it spent counts in windows declared later")
		u, err := s.Usage(ctx, subject, operation.Charge{Amount: dec(t, "1"), Currency: "EUR"})
		require.NoError(t, err)
		assert.Empty(t, u, "no window, no usage")
	})
}

// charged is a fresh claim of subject spending amount EUR against a daily
// window of max.
func charged(t *testing.T, subject, amount, max string) idemstore.Claim {
	t.Helper()
	c := NewClaim(t, "owner-"+NewKey(t)[:8])
	c.Subject = subject
	c.Charge = &operation.Charge{Amount: dec(t, amount), Currency: "EUR", Windows: []operation.Window{
		{Name: "daily-eur", Kind: "daily", Period: 24 * time.Hour, Max: dec(t, max)},
	}}
	return c
}

// acquired claims c, which must be acquired, and returns the decision.
func acquired(t *testing.T, s idemstore.Store, c idemstore.Claim) idemstore.ClaimDecision {
	t.Helper()
	d, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	return d
}

// usedOf is what subject's daily EUR window (every action) holds.
func usedOf(t *testing.T, s BudgetStore, subject string) apd.Decimal {
	t.Helper()
	u, err := s.Usage(context.Background(), subject, *charged(t, subject, "1", "1000000").Charge)
	require.NoError(t, err)
	require.Len(t, u, 1)
	return u[0].Used
}

// dec parses a decimal.
func dec(t *testing.T, s string) apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return *d
}

// assertDec asserts that got is the number want (whatever its scale).
func assertDec(t *testing.T, want string, got apd.Decimal, what string) {
	t.Helper()
	w := dec(t, want)
	assert.Zero(t, w.Cmp(&got), "%s: %s, want %s", what, got.Text('f'), want)
}
