package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

// The budgets' behaviour is storetest.ExerciseBudgets' (TestBudgets);
// these are the truth's own: its lock, and the audit of a reservation.
func TestBudgetSpecifics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	charged := func(subject, amount, max string) idemstore.Claim {
		c := storetest.NewClaim(t, "owner-"+storetest.NewKey(t)[:8])
		c.Subject = subject
		c.Charge = &operation.Charge{Amount: dec(t, amount), Currency: "EUR", Windows: []operation.Window{
			{Name: "daily-eur", Kind: "daily", Period: 24 * time.Hour, Max: dec(t, max)},
		}}
		return c
	}

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
			d, err := s.Acquire(ctx, charged("locked", "600", "1000"))
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
	})

	t.Run("AReservationKeepsWhatReleasedIt", func(t *testing.T) {
		t.Parallel()
		c := charged("audit", "10", "10")
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		r, err := s.GetReservation(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Zero(t, r.Amount.Cmp(&c.Charge.Amount))
		assert.Equal(t, "EUR", r.Currency)
		assert.True(t, d.ClaimedAt.Equal(r.ReservedAt), "reserved in the claim's transaction")
		assert.True(t, r.ReleasedAt.IsZero())
		require.NoError(t, s.Finalize(ctx, storetest.Failed(c, c.Owner)))
		r, err = s.GetReservation(ctx, c.OperationID)
		require.NoError(t, err)
		assert.False(t, r.ReleasedAt.IsZero())
		assert.Equal(t, string(operation.FailureRefused), r.ReleasedBy)

		unstarted := charged("audit", "10", "10")
		_, err = s.Acquire(ctx, unstarted)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: unstarted.OperationID, Owner: unstarted.Owner}))
		_, err = s.GetReservation(ctx, unstarted.OperationID)
		require.ErrorIs(t, err, idemstore.ErrNotFound, "a claim given back takes its reservation with it")
	})
}

// dec parses a decimal for the tests.
func dec(t testing.TB, s string) apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return *d
}
