package plan_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/internal/plan"
)

func TestRetrySums(t *testing.T) {
	t.Parallel()
	r := plan.Retry{Timeout: 5 * time.Second, Attempts: 5, Initial: 500 * time.Millisecond, Max: 1500 * time.Millisecond}
	// Waits between 5 attempts: 0.5 + 1 + 1.5 (capped) + 1.5 (capped).
	assert.Equal(t, 4500*time.Millisecond, r.Waits())
	assert.Equal(t, 25*time.Second+4500*time.Millisecond, r.Worst())
	one := plan.Retry{Timeout: 5 * time.Second, Attempts: 1, Initial: time.Second, Max: time.Second}
	assert.Zero(t, one.Waits(), "one attempt waits for nothing")
	huge := plan.Retry{Timeout: math.MaxInt64 / 2, Attempts: 3, Initial: math.MaxInt64 / 2, Max: math.MaxInt64}
	assert.Equal(t, time.Duration(math.MaxInt64), huge.Worst(), "the sums saturate instead of wrapping")
}

func TestDownstreamWorst(t *testing.T) {
	t.Parallel()
	query := plan.Retry{Timeout: 5 * time.Second, Attempts: 2, Initial: time.Second, Max: time.Second}
	d := plan.Downstream{
		Execute:     plan.Retry{Timeout: 5 * time.Second, Attempts: 1, Initial: time.Second, Max: time.Second},
		StatusQuery: query,
		Window:      plan.Window{ReconcileDelay: 2 * time.Second},
	}
	assert.False(t, d.Reconciles())
	assert.Equal(t, 5*time.Second+3*time.Second, d.Worst(3*time.Second), "without a status endpoint: the execute call and the gateway's wait")

	d.Endpoint.Status = "http://downstream/status"
	assert.True(t, d.Reconciles())
	assert.False(t, d.ProvesNotExecuted(), "no processing window declared: not found proves nothing")
	assert.Equal(t, 2*time.Second+11*time.Second, d.ReconcileWorst(), "settle delay + one query (2 × 5s + 1s)")

	d.MaxProcessingTime, d.StatusLag = 30*time.Second, 5*time.Second
	assert.True(t, d.ProvesNotExecuted())
	sent := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, sent.Add(35*time.Second), d.NotFoundProvesAfter(sent))
	assert.Equal(t, 13*time.Second+35*time.Second+11*time.Second, d.ReconcileWorst(), "+ the window, the lag and one more query")

	assert.False(t, d.Pends())
	assert.Zero(t, d.PendingWorst())
	d.Business = &plan.Business{State: plan.BusinessState{Field: "status", Pending: []string{"pending"}}, CompletionDeadline: time.Hour}
	assert.True(t, d.Pends())
	assert.Equal(t, time.Hour+11*time.Second, d.PendingWorst())
	assert.Equal(t, 5*time.Second+59*time.Second+time.Hour+11*time.Second, d.Worst(0))
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := plan.BusinessState{Field: "payout.status", Succeeded: []string{"paid"}, Failed: []string{"failed"},
		Pending: []string{"pending"}, ReasonField: "payout.failure_reason"}
	for _, c := range []struct {
		answer, state string
		phase         plan.Phase
		reason        string
	}{
		{`{"payout":{"status":"paid"}}`, "paid", plan.PhaseSucceeded, ""},
		{`{"payout":{"status":"failed","failure_reason":"account_closed"}}`, "failed", plan.PhaseFailed, "account_closed"},
		{`{"payout":{"status":"failed"}}`, "failed", plan.PhaseFailed, "failed"},
		{`{"payout":{"status":"pending"}}`, "pending", plan.PhasePending, ""},
		{`{"payout":{"status":"in_transit"}}`, "in_transit", plan.PhaseUnknown, ""},
		{`{"payout":{"status":7}}`, "", plan.PhaseUnknown, ""},
		{`not json`, "", plan.PhaseUnknown, ""},
	} {
		state, phase, reason := b.Classify([]byte(c.answer))
		assert.Equal(t, c.state, state, c.answer)
		assert.Equal(t, c.phase, phase, c.answer)
		assert.Equal(t, c.reason, reason, c.answer)
	}
}
