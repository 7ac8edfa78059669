package combined_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

// readCountingTruth is the real PostgreSQL truth, counting its Gets.
type readCountingTruth struct {
	*pgstore.Store
	gets atomic.Int64
}

func (r *readCountingTruth) Get(ctx context.Context, opID string) (idemstore.Record, error) {
	r.gets.Add(1)
	return r.Store.Get(ctx, opID)
}

// TestOutcome: a status of an operation whose terminal record Redis holds
// is answered by Redis alone, with what Get answers of it; an IN_FLIGHT
// claim on Redis and a record Redis lost are answered by the truth
// (issue 23: every status read the truth, 123 µs of PostgreSQL each on
// the production-like profile).
func TestOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, combined.Options{})
	truth := &readCountingTruth{Store: b.truth}
	s := combined.New(b.fast, truth, combined.Options{})
	t.Cleanup(s.Close)

	done := storetest.NewClaim(t, "owner-a")
	_, err := s.Acquire(ctx, done)
	require.NoError(t, err)
	f := storetest.Done(done, "owner-a")
	f.CompletedAt = time.Now().Truncate(time.Millisecond) // the workflow decides it; Redis keeps milliseconds
	require.NoError(t, s.Finalize(ctx, f))
	want, err := s.Get(ctx, done.OperationID)
	require.NoError(t, err)

	before := truth.gets.Load()
	got, err := s.Outcome(ctx, done.OperationID)
	require.NoError(t, err)
	assert.Equal(t, before, truth.gets.Load(), "Redis answered alone")
	assert.JSONEq(t, string(want.Result), string(got.Result), "the same result (jsonb orders its keys)")
	want.Result, got.Result = nil, nil
	assert.Equal(t, want.Final(), got.Final())
	assert.Equal(t, []string{want.Subject, want.Scope, want.ParamHash, want.ApprovalSHA256},
		[]string{got.Subject, got.Scope, got.ParamHash, got.ApprovalSHA256})

	review := storetest.NewClaim(t, "owner-a")
	_, err = s.Acquire(ctx, review)
	require.NoError(t, err)
	require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: review.OperationID, Reason: "unknown"}))
	before = truth.gets.Load()
	got, err = s.Outcome(ctx, review.OperationID)
	require.NoError(t, err)
	assert.Equal(t, operation.StateNeedsReview, got.State, "Redis's IN_FLIGHT claim hides the truth's NEEDS_REVIEW")
	assert.Greater(t, truth.gets.Load(), before)

	require.NoError(t, b.rdb.FlushAll(ctx).Err())
	got, err = s.Outcome(ctx, done.OperationID)
	require.NoError(t, err)
	assert.Equal(t, operation.StateDone, got.State, "the truth answers what Redis lost")

	_, err = s.Outcome(ctx, storetest.NewKey(t))
	require.ErrorIs(t, err, idemstore.ErrNotFound)
}
