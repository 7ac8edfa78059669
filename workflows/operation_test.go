package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// a is the typed nil the mocks name activities by.
var a *activities.Activities

// inFlight is ClaimTruth's answer for a truth record this workflow holds IN_FLIGHT.
var inFlight = operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}}

// mockNeverCalled mocks each activity of fns with an answer the workflow
// can go on with: the SDK records the calls of mocked activities only, so
// an AssertActivityNotCalled of an activity the test does not mock passes
// whatever runs. Mocked here, a call of one is recorded and fails it.
func mockNeverCalled(env *testsuite.TestWorkflowEnvironment, fns ...any) {
	for _, fn := range fns {
		call := env.OnActivity(fn, mock.Anything, mock.Anything).Maybe()
		typ := reflect.TypeOf(fn)
		if typ.NumOut() == 1 {
			call.Return(nil)
			continue
		}
		call.Return(reflect.Zero(typ.Out(0)).Interface(), nil)
	}
}

// input returns an operation of payments.transfer (honours=true) or
// payments.legacy_transfer (honours=false).
func input(honours bool) operation.Input {
	ds := catalog.Downstream{
		Endpoint:             plan.Endpoint{Execute: "http://downstream/v1/transfers"},
		HonorsIdempotencyKey: true,
		Timeout:              5 * time.Second,
		Attempts:             4,
		Backoff:              time.Second,
		BackoffMax:           10 * time.Second,
		ResultRef:            "id",
	}
	scope := "payments.transfer"
	if !honours {
		scope = "payments.legacy_transfer"
		ds.Execute = "http://downstream/legacy/transfers"
		ds.HonorsIdempotencyKey = false
		ds.Status = "http://downstream/legacy/transfers"
		ds.Attempts = 1
		ds.ReconcileDelay = 30 * time.Second
		ds.ReconcileAttempts = 3
		ds.MaxProcessingTime = 2 * time.Minute
		ds.StatusLag = 10 * time.Second
	} else {
		ds.IdempotencyKeyRetention = 24 * time.Hour
	}
	params := json.RawMessage(`{"amount":12.5,"currency":"USD","payee_id":"p-1","memo":"rent"}`)
	return operation.Input{
		OperationID: "0123456789abcdef0123456789abcdef",
		Subject:     "alice",
		Scope:       scope,
		ParamHash:   "ph",
		Ownership:   operation.Takeover("gw-1/req-1"),
		Params:      params,
		InFlightTTL: 10 * time.Minute,
		TerminalTTL: 24 * time.Hour,
		Downstream:  ds.Plan(),
		Summary:     operation.Summary(scope, params, "amount"),
	}
}

// newEnv returns a test environment with the workflow and the activities
// registered, and a pointer to the IdemState values upserted so far.
func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]string) {
	t.Helper()
	return newEnvOf(t, &testsuite.WorkflowTestSuite{})
}

// newEnvOf is newEnv in suite s (with its logger, metrics handler).
func newEnvOf(t *testing.T, s *testsuite.WorkflowTestSuite) (*testsuite.TestWorkflowEnvironment, *[]string) {
	t.Helper()
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Operation, workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
	env.RegisterActivity(&activities.Activities{})
	guardLoops(t, env)
	states := &[]string{}
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(workflows.StateKey); ok {
			*states = append(*states, v)
		}
	}).Return(nil)
	return env, states
}

// maxStartsAtOneInstant bounds the activities a workflow may start without
// its clock moving: a loop that asks again and again at the same instant
// (a wait of zero where the window has not passed) never ends on the
// test environment's clock.
const maxStartsAtOneInstant = 50

// guardLoops fails the test and cancels the workflow when it starts more
// than maxStartsAtOneInstant activities at one instant, so that such a loop
// fails in a second instead of hanging until go test's timeout.
func guardLoops(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	var (
		at     time.Time
		starts int
	)
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if now := env.Now(); !now.Equal(at) {
			at, starts = now, 0
		}
		if starts++; starts == maxStartsAtOneInstant+1 {
			t.Errorf("%s started more than %d times at %s: a loop that does not wait", info.ActivityType.Name,
				maxStartsAtOneInstant, at.Format(time.RFC3339))
			env.CancelWorkflow()
		}
	})
}

// finalized matches a FinalizeInput of the given state.
func finalized(state operation.State, check func(operation.FinalizeInput) bool) any {
	return mock.MatchedBy(func(f operation.FinalizeInput) bool {
		return f.State == state && f.OperationID == input(true).OperationID && f.Ownership.Owner() == "gw-1/req-1" && check(f)
	})
}

// result reads the completed workflow's result.
func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) operation.Final {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out operation.Final
	require.NoError(t, env.GetWorkflowResult(&out))
	return out
}

func TestOperation_HonouringHappyPath(t *testing.T) {
	env, states := newEnv(t)
	transfer := json.RawMessage(`{"id":"tr_1","amount":"12.5"}`)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil).Once()
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 201, Result: transfer, ResultRef: "tr_1"}, nil).Once()
	var written time.Time
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		written = f.CompletedAt
		return string(f.Result) == string(transfer) && f.ResultRef == "tr_1" && f.TerminalTTL == 24*time.Hour
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(true))

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "tr_1", out.ResultRef)
	assert.JSONEq(t, string(transfer), string(out.Result))
	// The workflow decides the outcome's time once: what it writes to the
	// stores is what it answers (the first confirm's receipt names it).
	require.False(t, written.IsZero(), "Finalize is told the completed time")
	assert.True(t, written.Equal(out.CompletedAt), "written %s, answered %s", written, out.CompletedAt)
	assert.Equal(t, written, written.Truncate(time.Millisecond), "to the millisecond every store keeps")
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states)
	env.AssertExpectations(t)
}

func TestOperation_HonouringRetriesThenSucceeds(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{},
		temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable)).Times(2)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 200, Result: json.RawMessage(`{"id":"tr_2"}`), ResultRef: "tr_2"}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(true))

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "tr_2", out.ResultRef)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 3)
}

func TestOperation_TruthAlreadyTerminal(t *testing.T) {
	env, states := newEnv(t)
	first := time.Date(2026, 5, 1, 10, 0, 0, 123_000_000, time.UTC)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(operation.ClaimResult{Final: operation.Final{
		State: operation.StateDone, Result: json.RawMessage(`{"id":"tr_0"}`), ResultRef: "tr_0", CompletedAt: first,
	}}, nil).Once()
	mockNeverCalled(env, a.Execute, a.Finalize)

	env.ExecuteWorkflow(workflows.Operation, input(true))

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "tr_0", out.ResultRef)
	assert.True(t, first.Equal(out.CompletedAt), "the truth's completed time, answered %s", out.CompletedAt)
	env.AssertActivityNotCalled(t, workflows.ActivityExecute, mock.Anything, mock.Anything)
	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states)
}

func TestOperation_BusinessRefusal(t *testing.T) {
	for _, honours := range []bool{true, false} {
		t.Run(input(honours).Scope, func(t *testing.T) {
			env, states := newEnv(t)
			env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
			env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{},
				temporal.NewNonRetryableApplicationError("refused", operation.ErrTypeBusinessRefusal, nil,
					operation.BusinessRefusal{StatusCode: 422, Code: "insufficient_funds", Message: "balance too low"}))
			env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
				return f.Reason == "insufficient_funds"
			})).Return(nil).Once()
			mockNeverCalled(env, a.Reconcile)

			env.ExecuteWorkflow(workflows.Operation, input(honours))

			out := result(t, env)
			assert.Equal(t, operation.StateFailed, out.State)
			assert.Equal(t, "insufficient_funds", out.Reason)
			assert.Equal(t, operation.FailureRefused, out.FailureKind, "a refusal is known from the downstream itself")
			env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 1)
			env.AssertActivityNotCalled(t, workflows.ActivityReconcile, mock.Anything, mock.Anything)
			assert.Equal(t, []string{"IN_FLIGHT", "FAILED"}, *states)
			env.AssertExpectations(t)
		})
	}
}

// startToCloseTimeout is what the workflow sees when the worker running
// Execute was lost (or the downstream hung) past the activity's timeout.
func startToCloseTimeout() error {
	return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
}

func TestOperation_NonHonouringTimeoutReconcileFound(t *testing.T) {
	env, states := newEnv(t)
	start := env.Now()
	var reconciledAt time.Time
	transfer := json.RawMessage(`{"id":"lt_9","client_reference":"0123456789abcdef0123456789abcdef"}`)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Run(func(mock.Arguments) { reconciledAt = env.Now() }).
		Return(operation.ReconcileResult{Found: true, Result: transfer, ResultRef: "lt_9"}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResultRef == "lt_9"
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "lt_9", out.ResultRef)
	assert.JSONEq(t, string(transfer), string(out.Result))
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 1)
	assert.GreaterOrEqual(t, reconciledAt.Sub(start), 30*time.Second, "reconciles only after the settle delay")
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states)
	env.AssertExpectations(t)
}

func TestOperation_NonHonouring5xxNotFoundProvesOnlyAfterTheWindow(t *testing.T) {
	env, _ := newEnv(t)
	var asked []time.Time
	var executeEnded time.Time
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	// The send takes 4s (inside the 5s timeout): the window counts from
	// when it ended, the last moment the downstream can have received it.
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).After(4*time.Second).Run(func(mock.Arguments) { executeEnded = env.Now() }).
		Return(operation.ExecuteResult{}, temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Run(func(mock.Arguments) { asked = append(asked, env.Now()) }).
		Return(operation.ReconcileResult{Found: false}, nil)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
		return strings.HasPrefix(f.Reason, operation.ReasonNotExecuted) && f.FailureKind == operation.FailureNotExecuted
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	assert.Equal(t, operation.FailureNotExecuted, out.FailureKind)
	assert.Contains(t, out.Reason, "max_processing_time 2m0s + status_lag 10s")
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 1)
	// Asked after the settle delay (30s), then 30s, 60s (doubling, capped at
	// plan.MaxReconcilePoll) later; only the last ask, made after
	// max_processing_time + status_lag (2m10s) since the send, proves anything.
	window := 2*time.Minute + 10*time.Second
	require.GreaterOrEqual(t, len(asked), 2)
	last := asked[len(asked)-1]
	assert.False(t, last.Before(executeEnded.Add(window)), "the proving ask comes after the window")
	for _, at := range asked[:len(asked)-1] {
		assert.True(t, at.Before(executeEnded.Add(window)), "earlier asks are inside the window")
	}
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, window},
		sinceAll(executeEnded, asked))
	env.AssertExpectations(t)
}

// sinceAll returns each time of ts minus t0.
func sinceAll(t0 time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, at := range ts {
		out[i] = at.Sub(t0)
	}
	return out
}

func TestOperation_NonHonouringLateCommitFoundInsideTheWindow(t *testing.T) {
	env, _ := newEnv(t)
	transfer := json.RawMessage(`{"id":"lt_late"}`)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: false}, nil).Twice()
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: transfer, ResultRef: "lt_late"}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResultRef == "lt_late"
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State, "a commit after the timeout is found, never reported failed")
	assert.Equal(t, "lt_late", out.ResultRef)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 1)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityReconcile, 3)
	env.AssertExpectations(t)
}

func TestOperation_NotFoundWithoutWindowNeedsReview(t *testing.T) {
	env, states := newEnv(t)
	in := input(false)
	in.Downstream.MaxProcessingTime, in.Downstream.StatusLag = 0, 0
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: false}, nil).Once()
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.MatchedBy(func(m operation.MarkNeedsReviewInput) bool {
		return strings.Contains(m.Reason, "declares no max_processing_time")
	})).Return(nil).Once()
	var waiting workflows.StateView
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&waiting))
		env.CancelWorkflow()
	}, time.Hour)
	mockNeverCalled(env, a.Finalize)

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, operation.StateNeedsReview, waiting.State, "not found without a window proves nothing")
	assert.NotContains(t, *states, string(operation.StateFailed))
	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

func TestOperation_NoRetryAfterTheKeyRetention(t *testing.T) {
	env, _ := newEnv(t)
	in := input(true)
	in.Downstream.Execute.Attempts = 100
	in.Downstream.KeyRetention = 20 * time.Second
	var attempts []time.Time
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Run(func(mock.Arguments) { attempts = append(attempts, env.Now()) }).
		Return(operation.ExecuteResult{}, temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable))
	// The test environment reports the last attempt's error when the
	// retention stops the retries (a real server also sets the retry state
	// TIMEOUT, which the reason then names): either way a person decides.
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.MatchedBy(func(m operation.MarkNeedsReviewInput) bool {
		return strings.Contains(m.Reason, "outcome unknown after execute")
	})).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	mockNeverCalled(env, a.Finalize)

	env.ExecuteWorkflow(workflows.Operation, in)

	require.NotEmpty(t, attempts)
	assert.Less(t, len(attempts), 100, "the retention stopped the retries")
	for _, at := range attempts {
		assert.Less(t, at.Sub(attempts[0]), 20*time.Second, "no attempt after the key retention")
	}
	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

func TestOperation_StatusDownNeedsReviewThenResolved(t *testing.T) {
	env, states := newEnv(t)
	operatorResult := json.RawMessage(`{"id":"lt_42","note":"seen in the bank statement"}`)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{},
		temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.MatchedBy(func(in operation.MarkNeedsReviewInput) bool {
		return in.OperationID == input(false).OperationID && in.Reason != ""
	})).Return(nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResolvedBy == "ops" && f.ResolutionNote == "checked with the bank" && f.ResultRef == "lt_42"
	})).Return(nil).Once()

	var waiting workflows.StateView
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&waiting))
		// A malformed signal is ignored; the workflow keeps waiting.
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{Outcome: "maybe", Operator: "ops"})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{
			Outcome: operation.ResolutionCompleted, Result: operatorResult, Operator: "ops", Note: "checked with the bank",
		})
	}, 2*time.Hour)

	env.ExecuteWorkflow(workflows.Operation, input(false))

	assert.Equal(t, operation.StateNeedsReview, waiting.State)
	assert.NotEmpty(t, waiting.Reason)
	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "ops", out.ResolvedBy)
	assert.Equal(t, "lt_42", out.ResultRef)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 1)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityReconcile, 3)
	assert.Equal(t, []string{"IN_FLIGHT", "NEEDS_REVIEW", "DONE"}, *states)
	env.AssertExpectations(t)
}

func TestOperation_HonouringExhaustedWithoutStatusNeedsReview(t *testing.T) {
	env, states := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{},
		temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
		return f.Reason == "bank confirmed it never arrived" && f.ResolvedBy == "ops"
	})).Return(nil).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{
			Outcome: operation.ResolutionFailed, Reason: "bank confirmed it never arrived", Operator: "ops",
		})
	}, time.Hour)
	mockNeverCalled(env, a.Reconcile)

	env.ExecuteWorkflow(workflows.Operation, input(true))

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	env.AssertActivityNumberOfCalls(t, workflows.ActivityExecute, 4)
	env.AssertActivityNotCalled(t, workflows.ActivityReconcile, mock.Anything, mock.Anything)
	assert.Equal(t, []string{"IN_FLIGHT", "NEEDS_REVIEW", "FAILED"}, *states)
	env.AssertExpectations(t)
}

func TestOperation_AlreadyNeedsReviewWaitsForSignal(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(operation.ClaimResult{Final: operation.Final{State: operation.StateNeedsReview, Reason: "status endpoint down"}}, nil)
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "never sent", Operator: "ops"})
	}, time.Minute)
	mockNeverCalled(env, a.Execute, a.MarkNeedsReview)

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	env.AssertActivityNotCalled(t, workflows.ActivityExecute, mock.Anything, mock.Anything)
	env.AssertActivityNotCalled(t, workflows.ActivityMarkNeedsReview, mock.Anything, mock.Anything)
}

func TestOperation_FinalizeFindsAnotherOutcome(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil).Once()
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 200, Result: json.RawMessage(`{"id":"tr_1"}`), ResultRef: "tr_1"}, nil)
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("already terminal", operation.ErrTypeAlreadyTerminal, nil))
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(operation.ClaimResult{Final: operation.Final{State: operation.StateFailed, Reason: "resolved by ops"}}, nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(true))

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	assert.Equal(t, "resolved by ops", out.Reason)
}

func TestOperation_FinalizesTruthAsItsOwner(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}, Owner: "gw-2/req-9"}, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 200}, nil)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.Ownership.TruthOwner() == "gw-2/req-9"
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(true))

	assert.Equal(t, operation.StateDone, result(t, env).State)
	env.AssertExpectations(t)
}

func TestOperation_QueryInFlight(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: false}, nil)
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(nil)
	var during workflows.StateView
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
	}, 10*time.Second) // inside the 30s settle delay

	env.ExecuteWorkflow(workflows.Operation, input(false))

	assert.Equal(t, operation.StateInFlight, during.State)
	v, err := env.QueryWorkflow(workflows.QueryState)
	require.NoError(t, err)
	var end workflows.StateView
	require.NoError(t, v.Get(&end))
	assert.Equal(t, operation.StateFailed, end.State)
}

func TestOperation_StartedWithSearchAttributesUpsertsOnlyTransitions(t *testing.T) {
	env, states := newEnv(t)
	in := input(true)
	env.SetStartWorkflowOptions(startOptions(in))
	require.NoError(t, env.SetTypedSearchAttributesOnStart(workflows.StartSearchAttributes(in)))
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 200}, nil)
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(nil)

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, operation.StateDone, result(t, env).State)
	assert.Equal(t, []string{"DONE"}, *states)
}

func TestExtractResultRef(t *testing.T) {
	assert.Equal(t, "tr_1", operation.ExtractResultRef(json.RawMessage(`{"id":"tr_1"}`), "id"))
	assert.Equal(t, "12345678901234567890", operation.ExtractResultRef(json.RawMessage(`{"id":12345678901234567890}`), "id"))
	assert.Empty(t, operation.ExtractResultRef(json.RawMessage(`{"id":{"x":1}}`), "id"))
	assert.Empty(t, operation.ExtractResultRef(json.RawMessage(`"x"`), "id"))
	assert.Empty(t, operation.ExtractResultRef(nil, "id"))
}

// startOptions are the options the gateway starts a workflow with.
func startOptions(in operation.Input) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    in.OperationID,
		TaskQueue:             "oncegate",
		TypedSearchAttributes: workflows.StartSearchAttributes(in),
		StaticSummary:         in.Summary,
	}
}

// payoutInput is an operation of a downstream whose answers carry a
// business state (payments.payout): pending, then paid or failed.
func payoutInput() operation.Input {
	in := input(true)
	in.Scope = "payments.payout"
	in.Downstream.Endpoint.Execute = "http://downstream/v1/payouts"
	in.Downstream.Endpoint.Status = "http://downstream/v1/payouts"
	in.Downstream.Business = &plan.Business{
		State: plan.BusinessState{Field: "status", Succeeded: []string{"paid"},
			Failed: []string{"failed"}, Pending: []string{"pending"}, ReasonField: "failure_reason"},
		CompletionDeadline: time.Hour,
		PollInterval:       time.Second,
	}
	return in
}

var (
	payoutPending = json.RawMessage(`{"id":"po_1","status":"pending"}`)
	payoutPaid    = json.RawMessage(`{"id":"po_1","status":"paid"}`)
	payoutFailed  = json.RawMessage(`{"id":"po_1","status":"failed","failure_reason":"account_closed"}`)
)

func TestOperation_PendingPolledUntilPaid(t *testing.T) {
	env, states := newEnv(t)
	var recorded []string
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 202, Result: payoutPending, ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.RecordDownstreamState, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		recorded = append(recorded, args.Get(1).(operation.RecordDownstreamStateInput).State)
	}).Return(nil)
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: payoutPending}, nil).Twice()
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: payoutPaid}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResultRef == "po_1" && string(f.Result) == string(payoutPaid)
	})).Return(nil).Once()
	var during workflows.StateView
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
	}, 1500*time.Millisecond)

	env.ExecuteWorkflow(workflows.Operation, payoutInput())

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State, "a 2xx that says pending is not done; paid is")
	assert.Equal(t, "po_1", out.ResultRef)
	assert.Equal(t, []string{"pending"}, recorded)
	assert.Equal(t, operation.StateInFlight, during.State)
	assert.Equal(t, "pending", during.DownstreamState)
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states, "IdemState stays IN_FLIGHT while pending")
	env.AssertExpectations(t)
}

func TestOperation_PendingWebhookFailsBeforeTheNextPoll(t *testing.T) {
	env, _ := newEnv(t)
	in := payoutInput()
	in.Downstream.Business.PollInterval = time.Hour
	in.Downstream.Business.CompletionDeadline = 24 * time.Hour
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 202, Result: payoutPending, ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.RecordDownstreamState, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
		return f.Reason == "account_closed" && f.FailureKind == operation.FailureRefused
	})).Return(nil).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalDownstreamState, operation.DownstreamEvent{Record: payoutFailed, EventType: "payout.failed"})
	}, time.Minute)
	mockNeverCalled(env, a.Reconcile)

	env.ExecuteWorkflow(workflows.Operation, in)

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	assert.Equal(t, "account_closed", out.Reason)
	env.AssertActivityNotCalled(t, workflows.ActivityReconcile, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

func TestOperation_PendingPastTheDeadlineNeedsReview(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 202, Result: payoutPending, ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.RecordDownstreamState, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: payoutPending}, nil)
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.MatchedBy(func(m operation.MarkNeedsReviewInput) bool {
		return strings.Contains(m.Reason, "completion_deadline")
	})).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, 3*time.Hour)
	mockNeverCalled(env, a.Finalize)

	env.ExecuteWorkflow(workflows.Operation, payoutInput())

	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

// TestOperation_UnlistedBusinessStateNeedsReview: an answer whose business
// state the catalog lists neither as succeeded, failed nor pending proves
// nothing: a person decides, never a refusal.
func TestOperation_UnlistedBusinessStateNeedsReview(t *testing.T) {
	env, states := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 202,
		Result: json.RawMessage(`{"id":"po_1","status":"on_hold"}`), ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.MatchedBy(func(m operation.MarkNeedsReviewInput) bool {
		return strings.Contains(m.Reason, `business state "on_hold" that the catalog does not list`)
	})).Return(nil).Once()
	mockNeverCalled(env, a.Finalize, a.RecordDownstreamState)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)

	env.ExecuteWorkflow(workflows.Operation, payoutInput())

	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	env.AssertActivityNotCalled(t, workflows.ActivityRecordDownstreamState, mock.Anything, mock.Anything)
	assert.Equal(t, []string{"IN_FLIGHT", "NEEDS_REVIEW"}, *states)
	env.AssertExpectations(t)
}

// TestOperation_PendingIgnoresAnUnlistedState: while pending, a status
// answer with a state the catalog does not list is ignored, never taken
// for an outcome; the next listed one decides.
func TestOperation_PendingIgnoresAnUnlistedState(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 202, Result: payoutPending, ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.RecordDownstreamState, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true,
		Result: json.RawMessage(`{"id":"po_1","status":"on_hold"}`)}, nil).Once()
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: payoutPaid}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return string(f.Result) == string(payoutPaid)
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, payoutInput())

	assert.Equal(t, operation.StateDone, result(t, env).State)
	env.AssertExpectations(t)
}

func TestOperation_ReconciledFailedStateIsFailed(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{Found: true, Result: payoutFailed, ResultRef: "po_1"}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
		return f.Reason == "account_closed"
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, payoutInput())

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State, "a record that says failed is never completed")
	env.AssertExpectations(t)
}

func TestOperation_TheGatewaysClaimIsTheClaim(t *testing.T) {
	env, states := newEnv(t)
	in := input(true)
	claimedAt := env.Now().Add(-time.Second)
	in.Ownership = operation.ConfirmClaim("gw-1/req-1", true, claimedAt)
	transfer := json.RawMessage(`{"id":"tr_1"}`)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 201, Result: transfer, ResultRef: "tr_1"}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResultRef == "tr_1" && f.Ownership.TruthOwner() == "gw-1/req-1" && f.Ownership.ClaimedAt().Equal(claimedAt)
	})).Return(nil).Once()
	mockNeverCalled(env, a.ClaimTruth)

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, operation.StateDone, result(t, env).State)
	env.AssertActivityNotCalled(t, workflows.ActivityClaimTruth, mock.Anything, mock.Anything)
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states)
	env.AssertExpectations(t)
}

// TestOperation_ATakeoverClaimsTheTruth: a workflow started after a
// takeover of an orphaned claim claims the truth itself (its input can
// only say so: operation.Takeover), and finalizes as the owner the truth
// names.
func TestOperation_ATakeoverClaimsTheTruth(t *testing.T) {
	env, _ := newEnv(t)
	in := input(true)
	in.Ownership = operation.Takeover("gw-3/req-2")
	claimedAt := env.Now().Add(-time.Minute)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.MatchedBy(func(in operation.Input) bool {
		return in.Ownership.Owner() == "gw-3/req-2"
	})).Return(operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}, Owner: "gw-3/req-2", ClaimedAt: claimedAt}, nil).Once()
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 201}, nil).Once()
	env.OnActivity(a.Finalize, mock.Anything, mock.MatchedBy(func(f operation.FinalizeInput) bool {
		return f.Ownership.Owner() == "gw-3/req-2" && f.Ownership.TruthOwner() == "gw-3/req-2" &&
			f.Ownership.ClaimedAt().Equal(claimedAt) && !f.Ownership.TruthClaimed()
	})).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, operation.StateDone, result(t, env).State)
	env.AssertExpectations(t)
}

// TestOperation_FinalizeIsALocalActivity: from ChangeLocalFinalize on, the
// outcome is recorded by a local activity in the workflow task that follows
// the execute activity: no activity task of its own to dispatch.
func TestOperation_FinalizeIsALocalActivity(t *testing.T) {
	env, _ := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil).Once()
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 201, Result: json.RawMessage(`{"id":"tr_l"}`), ResultRef: "tr_l"}, nil).Once()
	var local []bool
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		local = append(local, activity.GetInfo(args.Get(0).(context.Context)).IsLocalActivity)
	}).Return(nil).Once()

	env.ExecuteWorkflow(workflows.Operation, input(true))

	assert.Equal(t, "tr_l", result(t, env).ResultRef)
	assert.Equal(t, []bool{true}, local, "Finalize ran once, as a local activity")
}

// TestOperation_LocalFinalizeGoesOnAsAnActivity: a truth that does not
// answer within the local attempts' budget is retried by a regular
// activity, until it answers; the outcome is the same.
func TestOperation_LocalFinalizeGoesOnAsAnActivity(t *testing.T) {
	env, states := newEnv(t)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil).Once()
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{StatusCode: 201, Result: json.RawMessage(`{"id":"tr_r"}`), ResultRef: "tr_r"}, nil).Once()
	var local []bool
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ operation.FinalizeInput) error {
		isLocal := activity.GetInfo(ctx).IsLocalActivity
		local = append(local, isLocal)
		if isLocal || len(local) < 3 {
			return errors.New("finalize: truth unavailable")
		}
		return nil
	})

	env.ExecuteWorkflow(workflows.Operation, input(true))

	assert.Equal(t, "tr_r", result(t, env).ResultRef)
	require.NotEmpty(t, local)
	assert.True(t, local[0], "the first attempts are local")
	assert.False(t, local[len(local)-1], "the one that finished it is a regular activity")
	assert.Equal(t, []string{"IN_FLIGHT", "DONE"}, *states)
}

// temporalChangeVersion is the search attribute the SDK upserts with every
// version marker it records (go.temporal.io/sdk/internal.TemporalChangeVersion,
// not exported).
const temporalChangeVersion = "TemporalChangeVersion"

// firstConfirm runs a first confirm of payments.transfer (the gateway's
// claim is the claim, the start search attributes set by the starter) on
// env with opts, and returns the TemporalChangeVersion values upserted
// (one for each change the execution met first: the SDK records a version
// marker with each) and how many local activities ran (a marker each).
// Its Execute activity leaves the finalize to the workflow.
func firstConfirm(t *testing.T, env *testsuite.TestWorkflowEnvironment, opts worker.Options) (changeVersions []any, localActivities int) {
	t.Helper()
	changeVersions, localActivities, _ = firstConfirmFinalizing(t, env, opts, false)
	return changeVersions, localActivities
}

// firstConfirmFinalizing is firstConfirm whose Execute activity finalizes
// the outcome itself when asked to and executeFinalizes is set (else it
// leaves it to the workflow, as an activity of an earlier build does); it
// returns also the Execute activity's input.
func firstConfirmFinalizing(t *testing.T, env *testsuite.TestWorkflowEnvironment, opts worker.Options, executeFinalizes bool) (
	changeVersions []any, localActivities int, executeIn operation.Input) {
	t.Helper()
	in := input(true)
	in.Ownership = operation.ConfirmClaim("gw-1/req-1", true, env.Now().Add(-time.Second))
	require.NoError(t, env.SetTypedSearchAttributesOnStart(workflows.StartSearchAttributes(in)))
	env.SetWorkerOptions(opts)
	env.OnUpsertSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		changeVersions = append(changeVersions, args.Get(0).(map[string]any)[temporalChangeVersion])
	}).Return(nil)
	env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { localActivities++ })
	finalized := &operation.Final{State: operation.StateDone, Result: json.RawMessage(`{"id":"tr_f"}`), ResultRef: "tr_f",
		CompletedAt: env.Now().Add(time.Second).UTC().Truncate(time.Millisecond)}
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(func(_ context.Context, got operation.Input) (operation.ExecuteResult, error) {
		executeIn = got
		res := operation.ExecuteResult{StatusCode: 201, Result: finalized.Result, ResultRef: finalized.ResultRef}
		if executeFinalizes && got.ExecuteFinalizes {
			res.Finalized = finalized
		}
		return res, nil
	}).Once()
	if executeFinalizes {
		mockNeverCalled(env, a.ClaimTruth, a.Finalize)
	} else {
		env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Return(nil).Once()
		mockNeverCalled(env, a.ClaimTruth)
	}

	env.ExecuteWorkflow(workflows.Operation, in)

	out := result(t, env)
	assert.Equal(t, "tr_f", out.ResultRef)
	if executeIn.ExecuteFinalizes && executeFinalizes {
		assert.Equal(t, *finalized, out, "the workflow answers what Execute recorded, its time included")
		env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	}
	env.AssertActivityNotCalled(t, workflows.ActivityClaimTruth, mock.Anything, mock.Anything)
	return changeVersions, localActivities, executeIn
}

// TestOperation_AFirstConfirmRecordsOneChange: a new first confirm meets one
// change, fast-confirm, whose version 1 puts every earlier one in effect, so
// its history carries 2 markers (that version's and the local finalize's)
// and 2 search attribute updates (TemporalChangeVersion with the marker,
// IdemState=DONE; IN_FLIGHT is the starter's) against the bare
// workflow's none. One more of either fails here.
func TestOperation_AFirstConfirmRecordsOneChange(t *testing.T) {
	env, states := newEnv(t)
	changes, local := firstConfirm(t, env, worker.Options{})
	assert.Equal(t, []any{[]string{workflows.ChangeFastConfirm + "-2"}}, changes, "one version marker and its upsert")
	assert.Equal(t, 1, local, "one local activity marker: the finalize of an outcome Execute did not finalize")
	assert.Equal(t, []string{"DONE"}, *states, "one IdemState upsert: the start state is the starter's")
}

// TestOperation_ExecuteFinalizesDone: from version 2 of fast-confirm
// (ChangeExecuteFinalizes) Execute is asked to finalize a DONE outcome
// itself under the claim's owner; when it did, the workflow records the
// transition and answers that very outcome, without a finalize of its own
// (no local activity, no marker).
func TestOperation_ExecuteFinalizesDone(t *testing.T) {
	env, states := newEnv(t)
	changes, local, executeIn := firstConfirmFinalizing(t, env, worker.Options{}, true)
	assert.True(t, executeIn.ExecuteFinalizes, "Execute is asked to finalize")
	assert.Equal(t, "gw-1/req-1", executeIn.Ownership.TruthOwner(), "under the claim's owner")
	assert.Equal(t, []any{[]string{workflows.ChangeFastConfirm + "-2"}}, changes)
	assert.Zero(t, local, "no finalize of the workflow's own")
	assert.Equal(t, []string{"DONE"}, *states)
}

// TestOperation_HeldExecuteFinalizes: a worker that holds
// execute-finalizes back records version 1 of fast-confirm, and its
// Execute is not asked to finalize (an older activity worker could not).
func TestOperation_HeldExecuteFinalizes(t *testing.T) {
	env, _ := newEnv(t)
	changes, local, executeIn := firstConfirmFinalizing(t, env, worker.Options{
		PreferredVersionProvider: func(in worker.PreferredVersionProviderInput) *worker.VersionPreference {
			if in.ChangeID != workflows.ChangeFastConfirm {
				return nil
			}
			return &worker.VersionPreference{Version: 1}
		},
	}, true)
	assert.False(t, executeIn.ExecuteFinalizes)
	assert.Equal(t, []any{[]string{workflows.ChangeFastConfirm + "-1"}}, changes)
	assert.Equal(t, 1, local, "the workflow finalizes")
}

// TestOperation_ATakeoverExecuteFinalizesAsTheTruthsOwner: Execute
// finalizes as the owner the truth's claim names (ClaimTruth's), as the
// workflow's finalize would.
func TestOperation_ATakeoverExecuteFinalizesAsTheTruthsOwner(t *testing.T) {
	env, _ := newEnv(t)
	in := input(true)
	in.Ownership = operation.Takeover("gw-3/req-2")
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(operation.ClaimResult{
		Final: operation.Final{State: operation.StateInFlight}, Owner: "gw-9/req-1", ClaimedAt: env.Now()}, nil).Once()
	done := &operation.Final{State: operation.StateDone, ResultRef: "tr_t"}
	env.OnActivity(a.Execute, mock.Anything, mock.MatchedBy(func(in operation.Input) bool {
		return in.ExecuteFinalizes && in.Ownership.TruthOwner() == "gw-9/req-1"
	})).Return(operation.ExecuteResult{StatusCode: 201, ResultRef: "tr_t", Finalized: done}, nil).Once()
	mockNeverCalled(env, a.Finalize)

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, *done, result(t, env))
	env.AssertActivityNotCalled(t, workflows.ActivityFinalize, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

// TestOperation_HeldFastConfirmMeetsEachChange: a worker that holds
// fast-confirm back records its default version, and the execution meets
// each earlier change as before (their newest versions: the gateway's
// claim, the local finalize).
func TestOperation_HeldFastConfirmMeetsEachChange(t *testing.T) {
	env, states := newEnv(t)
	changes, local := firstConfirm(t, env, worker.Options{
		PreferredVersionProvider: func(in worker.PreferredVersionProviderInput) *worker.VersionPreference {
			if in.ChangeID != workflows.ChangeFastConfirm {
				return nil
			}
			return &worker.VersionPreference{Version: workflow.DefaultVersion}
		},
	})
	var met []string
	for _, c := range changes {
		met = append(met, c.([]string)[0]) // the change just met leads the value
	}
	assert.Equal(t, []string{workflows.ChangeFastConfirm + "--1", workflows.ChangeSingleClaim + "-1",
		workflows.ChangeLocalFinalize + "-1"}, met, "a marker for each change met")
	assert.Equal(t, 1, local, "the finalize is still a local activity")
	assert.Equal(t, []string{"DONE"}, *states)
}
