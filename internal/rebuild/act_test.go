package rebuild

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

// A written-back operation names the approval it ran under, keeps the
// completed time its receipts name, and holds its amount in the subject's
// budgets again — reserved without a check, since it was claimed within
// them before the truth was lost.
func TestInsertKeepsApprovalCompletedTimeAndReservation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := pgstore.Open(ctx, testenv.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(store.Close)

	id := storetest.NewKey(t)
	var amount, max apd.Decimal
	_, _, err = amount.SetString("40.00")
	require.NoError(t, err)
	_, _, err = max.SetString("10.00") // below the amount: a check would refuse
	require.NoError(t, err)
	charge := &operation.Charge{Amount: amount, Currency: "USD", Windows: []operation.Window{
		{Name: "daily", Kind: "daily", Period: 24 * time.Hour, Max: max}}}
	completed := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.UTC)
	final := operation.Final{State: operation.StateDone, Result: json.RawMessage(`{"ok":true}`), ResultRef: "r-1", CompletedAt: completed}
	h := history{
		input: operation.Input{OperationID: id, Subject: "s-rebuild", Scope: "payments.transfer", ParamHash: "h",
			FingerprintExp: time.Now().Add(time.Hour), TerminalTTL: time.Hour, Charge: charge,
			ApprovalSHA256: strings.Repeat("ab", 32)},
		claimOwner: "owner-1", final: final, completed: true,
	}
	require.NoError(t, act(ctx, store, ActionInsert, id, Workflow{State: operation.StateDone, Final: final}, h, Truth{}))

	rec, err := store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, operation.StateDone, rec.State)
	assert.Equal(t, h.input.ApprovalSHA256, rec.ApprovalSHA256, "the approval the receipts name")
	assert.True(t, completed.Equal(rec.CompletedAt), "the completed time the receipts name: %s", rec.CompletedAt)
	used, err := store.Usage(ctx, "s-rebuild", *charge)
	require.NoError(t, err)
	require.Len(t, used, 1)
	assert.Equal(t, "40.00", used[0].Used.String(), "the amount is reserved again")
}
