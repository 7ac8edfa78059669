package memstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/memstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
)

var (
	_ storetest.ApprovalStore = (*memstore.Store)(nil)
	_ storetest.BudgetStore   = (*memstore.Store)(nil)
	_ storetest.MandateStore  = (*memstore.Store)(nil)
)

// The in-memory store passes the suites the PostgreSQL truth passes: it
// behaves as the truth does, so tests on it mean what they say.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(*testing.T) idemstore.Store { return memstore.New() })
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	storetest.ExerciseApprovals(t, func(*testing.T) storetest.ApprovalStore { return memstore.New() })
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	storetest.ExerciseBudgets(t, func(*testing.T) storetest.BudgetStore { return memstore.New() })
}

func TestMandates(t *testing.T) {
	t.Parallel()
	storetest.ExerciseMandates(t, func(*testing.T) storetest.MandateStore { return memstore.New() })
}

// TestSharedStore runs the suites on one store each, as a backend whose
// subtests share their database does.
func TestSharedStore(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.Exercise(t, func(*testing.T) idemstore.Store { return s })
	a := memstore.New()
	storetest.ExerciseApprovals(t, func(*testing.T) storetest.ApprovalStore { return a })
	b := memstore.New()
	storetest.ExerciseBudgets(t, func(*testing.T) storetest.BudgetStore { return b })
	m := memstore.New()
	storetest.ExerciseMandates(t, func(*testing.T) storetest.MandateStore { return m })
}

// claim is a claim of operation opID by owner.
func claim(opID, owner string) idemstore.Claim {
	return idemstore.Claim{OperationID: opID, ParamHash: "h", Owner: owner, Subject: "alice", Scope: "payments.transfer",
		TerminalTTL: time.Hour}
}

// claimed is a new store holding the claim of op-1 by owner "o", and that claim.
func claimed(t *testing.T) (*memstore.Store, idemstore.Claim) {
	t.Helper()
	s, c := memstore.New(), claim("op-1", "o")
	_, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
	return s, c
}

// While switched off every call fails as an unreachable truth does and
// changes nothing; switched on again, the store answers as before.
func TestSetUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := claimed(t)
	before := s.Counts()

	s.SetUnavailable(true)
	calls := map[string]func() error{
		"Acquire": func() error { _, err := s.Acquire(ctx, claim("op-2", "o")); return err },
		"Get":     func() error { _, err := s.Get(ctx, "op-1"); return err },
		"Outcome": func() error { _, err := s.Outcome(ctx, "op-1"); return err },
		"Takeover": func() error {
			return s.Takeover(ctx, idemstore.TakeoverParams{OperationID: "op-1", FromOwner: "o", ToOwner: "p"})
		},
		"Release": func() error { return s.Release(ctx, idemstore.ReleaseParams{OperationID: "op-1", Owner: "o"}) },
		"Finalize": func() error {
			return s.Finalize(ctx, idemstore.Finalization{OperationID: "op-1", Owner: "o", Final: operation.Final{State: operation.StateDone}})
		},
		"FinalizeFast": func() error { return s.FinalizeFast(ctx, idemstore.Finalization{OperationID: "op-1"}) },
		"MarkNeedsReview": func() error {
			return s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: "op-1", Reason: "r"})
		},
		"RecordDownstreamState": func() error {
			return s.RecordDownstreamState(ctx, idemstore.DownstreamStateParams{OperationID: "op-1", State: "pending"})
		},
		"FindRecent":    func() error { _, err := s.FindRecent(ctx, idemstore.FindRecentParams{Subject: "alice"}); return err },
		"List":          func() error { _, err := s.List(ctx, idemstore.ListFilter{}); return err },
		"Reap":          func() error { _, err := s.Reap(ctx, time.Now()); return err },
		"RecordWebhook": func() error { _, err := s.RecordWebhook(ctx, idemstore.WebhookParams{Signature: "sig"}); return err },
		"Ready":         func() error { return s.Ready(ctx) },
		"RequestApproval": func() error {
			_, err := s.RequestApproval(ctx, approval.Request{OperationID: "op-1"})
			return err
		},
		"Approval":       func() error { _, err := s.Approval(ctx, "op-1"); return err },
		"Decide":         func() error { _, err := s.Decide(ctx, approval.Decided{}); return err },
		"Approvals":      func() error { _, err := s.Approvals(ctx, "", 0); return err },
		"PayeeKnown":     func() error { _, err := s.PayeeKnown(ctx, "alice", "payments.transfer", "p"); return err },
		"CreateInvite":   func() error { return s.CreateInvite(ctx, approval.Invite{TokenSHA256: "t"}) },
		"Invite":         func() error { _, err := s.Invite(ctx, "t", time.Now()); return err },
		"BeginEnrolment": func() error { return s.BeginEnrolment(ctx, "t", nil, time.Now()) },
		"Enrol":          func() error { return s.Enrol(ctx, "t", approval.Passkey{ID: "k"}, time.Now()) },
		"Passkeys":       func() error { _, err := s.Passkeys(ctx, "", true); return err },
		"Revoke":         func() error { _, err := s.Revoke(ctx, approval.Revocation{ID: "k"}); return err },
		"Usage": func() error {
			_, err := s.Usage(ctx, "alice", operation.Charge{Windows: []operation.Window{{Period: time.Hour}}})
			return err
		},
		"Currencies":  func() error { _, err := s.Currencies(ctx, "alice", time.Time{}); return err },
		"ResetBudget": func() error { _, err := s.ResetBudget(ctx, idemstore.BudgetReset{Subject: "alice"}); return err },
		"LastReset":   func() error { _, err := s.LastReset(ctx, "alice"); return err },
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(), idemstore.ErrUnavailable, name)
	}
	assert.Equal(t, before, s.Counts(), "a refused call is not counted")
	assert.Empty(t, s.Refills())

	s.SetUnavailable(false)
	require.NoError(t, s.Ready(ctx))
	rec, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	assert.Equal(t, operation.StateInFlight, rec.State, "nothing changed while off")
	assert.Equal(t, "o", rec.Owner)
	_, err = s.Get(ctx, "op-2")
	require.ErrorIs(t, err, idemstore.ErrNotFound)
}

func TestSetDegraded(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	assert.False(t, s.Degraded())
	s.SetDegraded(true)
	assert.True(t, s.Degraded())
	require.NoError(t, s.Ready(context.Background()), "degraded is not down")
	s.SetDegraded(false)
	assert.False(t, s.Degraded())
}

// Counts counts the calls about operation records by kind; Refills keeps
// what FinalizeFast was asked.
func TestCountsAndRefills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c := claimed(t)
	_, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	_, err = s.Outcome(ctx, "op-1")
	require.NoError(t, err)
	_, err = s.FindRecent(ctx, idemstore.FindRecentParams{Subject: "alice", Scope: c.Scope, ParamHash: c.ParamHash})
	require.NoError(t, err)
	_, err = s.List(ctx, idemstore.ListFilter{})
	require.NoError(t, err)
	assert.Equal(t, memstore.Counts{Reads: 4, Writes: 1, Outcomes: 1}, s.Counts())

	f := storetest.Done(c, "o")
	require.NoError(t, s.Finalize(ctx, f))
	require.NoError(t, s.FinalizeFast(ctx, f))
	_, err = s.RecordWebhook(ctx, idemstore.WebhookParams{Signature: "sig"})
	require.NoError(t, err)
	require.NoError(t, s.Ready(ctx))
	assert.Equal(t, memstore.Counts{Reads: 4, Writes: 3, Outcomes: 1}, s.Counts(), "webhooks and readiness are not about records")
	require.Len(t, s.Refills(), 1)
	assert.Equal(t, f, s.Refills()[0])
	rec, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	assert.Equal(t, "tr_123", rec.ResultRef, "the refill wrote nothing over the truth")
}

// The store's clock stamps what it writes and ends the budgets' windows.
func TestWithClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := memstore.New(memstore.WithClock(func() time.Time { return now }))
	c := claim("op-1", "o")
	c.Charge = &operation.Charge{Amount: *apdInt(10), Currency: "EUR", Windows: []operation.Window{{Name: "d", Kind: "daily",
		Period: 24 * time.Hour, Max: *apdInt(10)}}}
	d, err := s.Acquire(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, now, d.ClaimedAt)
	assert.Equal(t, now, d.Record.CreatedAt)
	assert.Equal(t, now, d.Record.FingerprintExp, "a claim without exp is stamped now, as the truth's")

	next := claim("op-2", "o")
	next.Charge = c.Charge
	d, err = s.Acquire(ctx, next)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeLimitExceeded, d.Outcome)
	assert.Equal(t, now.Add(24*time.Hour), d.Usage[0].FreesAt)

	now = now.Add(24 * time.Hour)
	d, err = s.Acquire(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, idemstore.OutcomeAcquired, d.Outcome, "a day later the first left the window")
	r, err := s.ResetBudget(ctx, idemstore.BudgetReset{Subject: "alice", By: "ops"})
	require.NoError(t, err)
	assert.Equal(t, now, r.At)
}

// Put stores a record as given, bypassing the rules: what a test needs
// when no sequence of calls produces the record.
func TestPut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c := claimed(t)
	require.NoError(t, s.Finalize(ctx, storetest.Done(c, "o")))

	rec, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	rec.State, rec.Reason, rec.ResultRef, rec.Result = operation.StateFailed, "gateway_timeout", "", nil
	s.Put(rec)
	got, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	assert.Equal(t, rec, got)

	other := idemstore.Record{OperationID: "op-2", Scope: "payments.payout", State: operation.StateDone,
		Result: json.RawMessage(`{}`), CompletedAt: time.Now().Add(-48 * time.Hour)}
	s.Put(other)
	finished := claim("op-3", "o")
	_, err = s.Acquire(ctx, finished)
	require.NoError(t, err)
	require.NoError(t, s.Finalize(ctx, storetest.Done(finished, "o")))
	n, err := s.Reap(ctx, time.Now().Add(1000*time.Hour))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the finished claim is reaped, the records put are not")
	for _, id := range []string{"op-1", "op-2"} {
		_, err = s.Get(ctx, id)
		require.NoError(t, err, id)
	}
}

// apdInt is n as a decimal.
func apdInt(n int64) *apd.Decimal { return apd.New(n, 0) }

// What a caller gets is its own: changing it changes nothing stored.
func TestAnswersAreCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	c := claim("op-1", "o")
	c.BoundParams = json.RawMessage(`{"payee_id":"p-1"}`)
	d, err := s.Acquire(ctx, c)
	require.NoError(t, err)
	d.Record.BoundParams[2] = 'X'
	c.BoundParams[3] = 'Y'
	rec, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"payee_id":"p-1"}`, string(rec.BoundParams))
}
