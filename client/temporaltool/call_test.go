package temporaltool

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/client"

	"github.com/oncegate/oncegate/status"
)

// callReport is what the test workflow returns about one Call.
type callReport struct {
	Result   Result
	Error    string
	Status   client.Status
	Declined bool
	Expired  bool
	Review   bool
	Security bool
}

// callWorkflow runs one Call with AwaitApproval and reports it.
func callWorkflow(ctx workflow.Context, scope string, params map[string]any) (callReport, error) {
	res, err := Call(ctx, scope, params, AwaitApproval)
	rep := callReport{Result: res, Status: StatusOf(err)}
	if err != nil {
		rep.Error = err.Error()
		rep.Declined = errors.Is(err, ErrDeclined)
		rep.Expired = errors.Is(err, ErrApprovalExpired)
		rep.Review = errors.Is(err, client.ErrNeedsManualReview)
		rep.Security = errors.Is(err, client.ErrSecurity)
	}
	return rep, nil
}

// fakeGateway stands for the three activities and records their inputs.
type fakeGateway struct {
	mu       sync.Mutex
	confirms []ConfirmRequest
	statuses int
	// confirmErrs are returned by the first confirms, in order.
	confirmErrs []error
	// confirmAnswer and statusAnswers are the outcomes.
	confirmAnswer Outcome
	statusAnswers []Outcome
}

func (f *fakeGateway) preview(_ context.Context, req PreviewRequest) (Preview, error) {
	return Preview{Scope: req.Scope, Params: req.Params, OperationID: "op1", Fingerprint: "fp-op1",
		ExpiresAt: time.Now().Add(15 * time.Minute)}, nil
}

func (f *fakeGateway) confirm(_ context.Context, req ConfirmRequest) (Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirms = append(f.confirms, req)
	if len(f.confirmErrs) > 0 {
		err := f.confirmErrs[0]
		f.confirmErrs = f.confirmErrs[1:]
		return Outcome{}, err
	}
	return f.confirmAnswer, nil
}

func (f *fakeGateway) status(_ context.Context, id string) (Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.statusAnswers[min(f.statuses, len(f.statusAnswers)-1)]
	f.statuses++
	return out, nil
}

// setup returns a workflow test environment with f's activities.
func setup(t *testing.T, f *fakeGateway) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(callWorkflow)
	env.RegisterActivityWithOptions(f.preview, activity.RegisterOptions{Name: ActivityPreview})
	env.RegisterActivityWithOptions(f.confirm, activity.RegisterOptions{Name: ActivityConfirm})
	env.RegisterActivityWithOptions(f.status, activity.RegisterOptions{Name: ActivityStatus})
	return env
}

// approveAfter signals an approval of op after d, checking first that the
// query shows the pending preview.
func approveAfter(t *testing.T, env *testsuite.TestWorkflowEnvironment, d time.Duration, a Approval) {
	env.RegisterDelayedCallback(func() {
		q, err := env.QueryWorkflow(QueryPendingApproval)
		require.NoError(t, err)
		var p *Preview
		require.NoError(t, q.Get(&p))
		require.NotNil(t, p, "the preview waits for approval")
		assert.Equal(t, "fp-op1", p.Fingerprint)
		env.SignalWorkflow(SignalApproval, a)
	}, d)
}

func run(t *testing.T, env *testsuite.TestWorkflowEnvironment) callReport {
	t.Helper()
	env.ExecuteWorkflow(callWorkflow, "payments.transfer", map[string]any{"amount": "12.50"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var rep callReport
	require.NoError(t, env.GetWorkflowResult(&rep))
	return rep
}

func TestCallConfirmsTheRecordedFingerprintAndWaits(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{
		// The first confirm is lost (the gateway unreachable); the retry sends the same fingerprint.
		confirmErrs:   []error{errors.New("confirm: oncegate: gateway unreachable")},
		confirmAnswer: Outcome{OperationID: "op1", Status: status.InProgress, PollAfterMS: 2000},
		statusAnswers: []Outcome{
			{OperationID: "op1", Status: status.InProgress, PollAfterMS: 3000},
			{OperationID: "op1", Status: status.Completed, ResultRef: "tr_1", Result: json.RawMessage(`{"amount":"12.5"}`)},
		},
	}
	env := setup(t, f)
	approveAfter(t, env, 10*time.Minute, Approval{OperationID: "op1", Approved: true, By: "alice"})
	start := env.Now()
	rep := run(t, env)
	assert.Empty(t, rep.Error)
	assert.Equal(t, status.Completed, rep.Result.Outcome.Status)
	assert.Equal(t, "tr_1", rep.Result.Outcome.ResultRef)
	assert.Equal(t, "alice", rep.Result.Approval.By)
	require.Len(t, f.confirms, 2)
	for _, c := range f.confirms {
		assert.Equal(t, "fp-op1", c.Fingerprint)
		assert.JSONEq(t, `{"amount":"12.50"}`, string(c.Params))
	}
	assert.Equal(t, 2, f.statuses)
	assert.GreaterOrEqual(t, env.Now().Sub(start), 10*time.Minute+5*time.Second, "poll_after_ms waited between polls")
}

func TestCallIgnoresApprovalsOfOtherOperations(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{confirmAnswer: Outcome{OperationID: "op1", Status: status.Completed}}
	env := setup(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalApproval, Approval{OperationID: "op0", Approved: true}) }, time.Minute)
	approveAfter(t, env, 10*time.Minute, Approval{OperationID: "op1", Approved: false})
	rep := run(t, env)
	assert.True(t, rep.Declined, rep.Error)
	assert.Empty(t, f.confirms, "a declined call is never confirmed")
}

func TestCallApprovalExpires(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{}
	env := setup(t, f)
	rep := run(t, env)
	assert.True(t, rep.Expired, rep.Error)
	assert.Empty(t, f.confirms)
}

func TestCallStopsAtManualReview(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{
		confirmAnswer: Outcome{OperationID: "op1", Status: status.InProgress},
		statusAnswers: []Outcome{{OperationID: "op1", Status: status.NeedsManualReview}},
	}
	env := setup(t, f)
	approveAfter(t, env, time.Second, Approval{OperationID: "op1", Approved: true})
	rep := run(t, env)
	assert.True(t, rep.Review, rep.Error)
	assert.Equal(t, status.NeedsManualReview, rep.Result.Outcome.Status)
}

func TestCallRefusalKeepsItsClass(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{confirmErrs: []error{
		temporal.NewNonRetryableApplicationError("confirm: param_mismatch", string(status.ParamMismatch), nil),
	}}
	env := setup(t, f)
	approveAfter(t, env, time.Second, Approval{OperationID: "op1", Approved: true})
	rep := run(t, env)
	assert.Equal(t, status.ParamMismatch, rep.Status)
	assert.True(t, rep.Security, rep.Error)
	assert.Len(t, f.confirms, 1, "a refusal is not retried")
}

func TestCallApprovalCanceled(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{}
	env := setup(t, f)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	rep := run(t, env)
	assert.False(t, rep.Expired, "a canceled wait is not an expiry")
	assert.Contains(t, rep.Error, "canceled")
	assert.Empty(t, f.confirms)
}

// waitWorkflow waits for op with Wait, as an agent workflow does after a
// Call that stopped at manual review.
func waitWorkflow(ctx workflow.Context, op string) (Outcome, error) {
	return Wait(ctx, op, Options{MaxPollAfter: time.Second})
}

func TestWaitPollsUntilTheOutcome(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{statusAnswers: []Outcome{
		{OperationID: "op1", Status: status.InProgress, PollAfterMS: 60000},
		{OperationID: "op1", Status: status.Completed, ResultRef: "tr_1"},
	}}
	env := setup(t, f)
	env.RegisterWorkflow(waitWorkflow)
	start := env.Now()
	env.ExecuteWorkflow(waitWorkflow, "op1")
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out Outcome
	require.NoError(t, env.GetWorkflowResult(&out))
	assert.Equal(t, status.Completed, out.Status)
	assert.Equal(t, "tr_1", out.ResultRef)
	assert.Equal(t, 2, f.statuses, "one poll per answer until a terminal one")
	assert.Equal(t, 2*time.Second, env.Now().Sub(start), "each pause capped by MaxPollAfter")
}
