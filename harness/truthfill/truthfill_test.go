package truthfill_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/harness/truthfill"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/operation"
)

// TestFillIsRealToTheStoreAndTheReaper fills 1000 operations past every
// retention and 1000 within it, in two batches each, and checks that the
// store reads them as it reads its own (Get, FindRecent, Usage, Approval)
// and that ReapBounded removes exactly the expired ones of every table.
func TestFillIsRealToTheStoreAndTheReaper(t *testing.T) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, testenv.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	now := time.Now()
	const rows = 1000
	old := truthfill.Options{Rows: rows, Prefix: "old", Subjects: 10, BatchRows: 400, TerminalTTL: time.Hour,
		CompletedBefore: now.Add(-idemstore.ReservationRetention - time.Hour)}
	live := truthfill.Options{Rows: rows, Prefix: "live", Subjects: 10, BatchRows: 400, CompletedBefore: now.Add(-time.Minute)}
	for _, o := range []truthfill.Options{old, live} {
		c, err := truthfill.Fill(ctx, s.Pool(), o)
		require.NoError(t, err)
		assert.Equal(t, truthfill.Counts{Records: rows, Reservations: rows, Approvals: rows / 10, Decisions: rows / 10,
			Webhooks: rows / 10}, c)
	}

	done, failed := live.At(0), live.At(truthfill.Defaults.FailedEvery-1)
	require.False(t, done.Failed)
	require.True(t, failed.Failed)
	rec, err := s.Get(ctx, done.ID)
	require.NoError(t, err)
	assert.Equal(t, operation.StateDone, rec.State)
	assert.JSONEq(t, `{"transfer_id":"tr_live-0","status":"succeeded"}`, string(rec.Result))
	assert.WithinDuration(t, done.CompletedAt, rec.CompletedAt, time.Millisecond)
	rec, err = s.Get(ctx, failed.ID)
	require.NoError(t, err)
	assert.Equal(t, operation.StateFailed, rec.State)
	assert.Equal(t, operation.FailureRefused, rec.FailureKind)

	// The amnesia guard finds a DONE operation by its intent.
	rec, err = s.Get(ctx, done.ID)
	require.NoError(t, err)
	found, err := s.FindRecent(ctx, idemstore.FindRecentParams{Subject: rec.Subject, Scope: rec.Scope, ParamHash: rec.ParamHash,
		Since: now.Add(-time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, done.ID, found.OperationID)

	a, err := s.Approval(ctx, done.ID)
	require.NoError(t, err)
	assert.Equal(t, approval.StateApproved, a.State)
	assert.Len(t, a.Decisions, 1)

	// A day's window of one subject holds its live, unreleased
	// reservations: 100 operations a subject, 5 of them FAILED (released).
	var max apd.Decimal
	_, _, err = max.SetString("1000000000")
	require.NoError(t, err)
	var amount apd.Decimal
	_, _, err = amount.SetString("1.00")
	require.NoError(t, err)
	usage, err := s.Usage(ctx, done.Subject, operation.Charge{Amount: amount, Currency: "EUR",
		Windows: []operation.Window{{Period: 24 * time.Hour, Max: max}}})
	require.NoError(t, err)
	require.Len(t, usage, 1)
	assert.Positive(t, usage[0].Used.Sign(), "the live reservations count")

	var total int64
	for {
		r, err := s.ReapBounded(ctx, now, pgstore.ReapLimits{BatchRows: 300, MaxRows: 600})
		require.NoError(t, err)
		total += r.Removed
		if r.Backlog == 0 {
			break
		}
	}
	assert.EqualValues(t, rows, total, "every expired record, no live one")
	for _, q := range []struct{ table, prefix string }{
		{"write_record WHERE idem_key", "old-%"}, {"budget_reservation WHERE operation_id", "old-%"},
		{"webhook_receipt WHERE signature", "sig-old-%"},
	} {
		var n int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+q.table+` LIKE $1`, q.prefix).Scan(&n))
		assert.Zero(t, n, q.table)
	}
	var kept int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM write_record WHERE idem_key LIKE 'live-%')
		+ (SELECT count(*) FROM budget_reservation WHERE operation_id LIKE 'live-%')
		+ (SELECT count(*) FROM webhook_receipt WHERE signature LIKE 'sig-live-%')`).Scan(&kept))
	assert.Equal(t, rows+rows+rows/10, kept, "the live operations' rows are all kept")
}
