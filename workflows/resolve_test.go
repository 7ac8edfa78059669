package workflows_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// updateCallback records the outcome of one Update.
type updateCallback struct {
	accepted bool
	rejected error
	result   operation.ResolveAnswer
	err      error
}

func (u *updateCallback) Accept()          { u.accepted = true }
func (u *updateCallback) Reject(err error) { u.rejected = err }
func (u *updateCallback) Complete(v any, err error) {
	u.err = err
	if v != nil {
		u.result = v.(operation.ResolveAnswer)
	}
}

// refusal is the Update's refusal by the validator, else by the handler.
func (u *updateCallback) refusal() error {
	if u.rejected != nil {
		return u.rejected
	}
	return u.err
}

// reviewEnv is a legacy operation whose status endpoint is down, so it
// waits for review after the first hour; Finalize takes a minute.
func reviewEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	return reviewEnvOf(t, &testsuite.WorkflowTestSuite{})
}

// reviewEnvOf is reviewEnv in suite s.
func reviewEnvOf(t *testing.T, s *testsuite.WorkflowTestSuite) *testsuite.TestWorkflowEnvironment {
	env, _ := newEnvOf(t, s)
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(operation.ExecuteResult{}, startToCloseTimeout())
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(operation.ReconcileResult{},
		temporal.NewApplicationError("HTTP 503", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.Anything).Return(nil).Once()
	return env
}

func TestResolve_FirstUpdateWinsSecondRefused(t *testing.T) {
	env := reviewEnv(t)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateFailed, func(f operation.FinalizeInput) bool {
		return f.ResolvedBy == "bob" && f.ResolutionNote == "bank: never arrived" &&
			f.EvidenceURL == "https://tickets.example/7" && !f.ResolvedAt.IsZero()
	})).After(time.Minute).Return(nil).Once()

	early, first, second, third := &updateCallback{}, &updateCallback{}, &updateCallback{}, &updateCallback{}
	var lateSignal workflows.StateView
	env.RegisterDelayedCallback(func() {
		// Still IN_FLIGHT: nothing to decide yet.
		env.UpdateWorkflow(workflows.UpdateResolve, "early", early, operation.Resolution{Outcome: "completed", Operator: "alice",
			Result: json.RawMessage(`{"id":"x"}`)})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateResolve, "first", first, operation.Resolution{Outcome: "failed", Reason: "never arrived",
			Operator: "bob", Note: "bank: never arrived", EvidenceURL: "https://tickets.example/7"})
		env.UpdateWorkflow(workflows.UpdateResolve, "second", second, operation.Resolution{Outcome: "completed", Operator: "carol",
			Result: json.RawMessage(`{"id":"tr_9"}`)})
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() {
		// After the outcome, inside the grace: refused and visible.
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{Outcome: "completed", Operator: "dave",
			Result: json.RawMessage(`{"id":"tr_10"}`)})
		env.UpdateWorkflow(workflows.UpdateResolve, "third", third, operation.Resolution{Outcome: "failed", Reason: "x", Operator: "erin"})
	}, 2*time.Hour+time.Minute+10*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&lateSignal))
	}, 2*time.Hour+time.Minute+20*time.Second)

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, operation.StateFailed, out.State)
	assert.Equal(t, operation.FailureOperator, out.FailureKind)
	assert.Equal(t, "bob", out.ResolvedBy)

	// Refused by the validator: rejected before anything is written to the
	// history, never accepted and refused by the handler.
	assert.False(t, early.accepted, "the validator refuses it")
	assertRefused(t, early.rejected, workflows.ErrTypeNotAwaitingReview)
	require.True(t, first.accepted)
	require.NoError(t, first.err)
	assert.Equal(t, operation.StateFailed, first.result.Result.State, "the Update answers the final state")
	assert.Equal(t, "bob", first.result.Decision.Operator)
	assert.Equal(t, operation.ViaUpdate, first.result.Decision.Via)
	// Admitted in the same workflow task as the first, the second may pass
	// the validator; its handler refuses it then.
	assertRefused(t, second.refusal(), workflows.ErrTypeAlreadyResolved)
	assert.False(t, third.accepted, "the validator refuses it")
	assertRefused(t, third.rejected, workflows.ErrTypeAlreadyResolved)

	require.NotNil(t, lateSignal.Decision)
	assert.Equal(t, "bob", lateSignal.Decision.Operator)
	assert.Equal(t, operation.StateFailed, lateSignal.State)
	var signal *workflows.RefusedResolution
	for i, r := range lateSignal.Refused {
		if r.Via == operation.ViaSignal {
			signal = &lateSignal.Refused[i]
		}
	}
	require.NotNil(t, signal, "the late signal is refused and shown: %+v", lateSignal.Refused)
	assert.Equal(t, "dave", signal.Operator)
	assert.Equal(t, workflows.ErrTypeAlreadyResolved, signal.Why)
	assert.Equal(t, 1, signal.Signal, "the first resolve signal the workflow received")
	assert.Equal(t, 1, lateSignal.ResolveSignals)
	assert.Equal(t, 0, lateSignal.Decision.Signal, "decided by an Update")
	for _, r := range lateSignal.Refused {
		assert.NotContains(t, r.Message, "retryable", "a refusal must not read as retryable")
		assert.True(t, strings.HasPrefix(r.Message, "already resolved") || strings.HasPrefix(r.Message, "not awaiting review"), r.Message)
	}
	env.AssertExpectations(t)
}

func TestResolve_SignalFirstThenUpdateRefusedNamingTheDecision(t *testing.T) {
	env := reviewEnv(t)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResolvedBy == "web-ui-op" && f.ResultRef == "tr_5"
	})).After(time.Minute).Return(nil).Once()
	late := &updateCallback{}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, operation.Resolution{Outcome: "completed", Operator: "web-ui-op",
			Result: json.RawMessage(`{"id":"tr_5"}`)})
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateResolve, "late", late, operation.Resolution{Outcome: "failed", Reason: "x", Operator: "bob"})
	}, 2*time.Hour+30*time.Second)

	env.ExecuteWorkflow(workflows.Operation, input(false))

	out := result(t, env)
	assert.Equal(t, "tr_5", out.ResultRef)
	assertRefused(t, late.refusal(), workflows.ErrTypeAlreadyResolved)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, late.refusal(), &appErr)
	var d operation.OperatorDecision
	require.NoError(t, appErr.Details(&d), "the refusal names who decided what and when")
	assert.Equal(t, "web-ui-op", d.Operator)
	assert.Equal(t, operation.ResolutionCompleted, d.Outcome)
	assert.Equal(t, operation.ViaSignal, d.Via)
	assert.Equal(t, 1, d.Signal, "carried by the first resolve signal")
	assert.False(t, d.DecidedAt.IsZero())
}

// assertRefused checks that err is an application error of type want.
func assertRefused(t *testing.T, err error, want string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want a %s refusal, got %v", want, err)
	assert.Equal(t, want, appErr.Type())
}
