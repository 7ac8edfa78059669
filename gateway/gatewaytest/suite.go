package gatewaytest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/operation"
)

// The scripts of the suite's workflows: what an operation's workflow does,
// read from its input's params ({"script": ...}). The Temporal engine's
// test registers a workflow that follows them; Scripted follows them in
// Engine.
const (
	// ScriptDone completes DONE at once (ScriptOutcome).
	ScriptDone = "done"
	// ScriptFail completes FAILED at once, refused downstream.
	ScriptFail = "fail"
	// ScriptReview waits for an operator's decision and completes as it
	// says.
	ScriptReview = "review"
	// ScriptRun runs without awaiting review for RunFor, then completes
	// DONE.
	ScriptRun = "run"
)

// RunFor is how long a ScriptRun workflow runs: longer than any wait of
// the suite.
const RunFor = 20 * time.Second

// ScriptInput is the input of an operation whose workflow follows script.
func ScriptInput(opID, script string) operation.Input {
	return operation.Input{OperationID: opID, Subject: "alice", Scope: "payments.transfer",
		Params: json.RawMessage(`{"script":"` + script + `"}`)}
}

// ScriptOf is the script in's workflow follows.
func ScriptOf(in operation.Input) string {
	var p struct {
		Script string `json:"script"`
	}
	_ = json.Unmarshal(in.Params, &p)
	return p.Script
}

// ScriptOutcome is the outcome of in's workflow, given the operator's
// decision res (ScriptReview; nil for the others).
func ScriptOutcome(in operation.Input, res *operation.Resolution) operation.Final {
	switch {
	case res != nil && res.Outcome == operation.ResolutionCompleted:
		return operation.Final{State: operation.StateDone, Result: res.Result, ResultRef: "manual", ResolvedBy: res.Operator}
	case res != nil:
		return operation.Final{State: operation.StateFailed, Reason: res.Reason, ResolvedBy: res.Operator}
	case ScriptOf(in) == ScriptFail:
		return operation.Final{State: operation.StateFailed, Reason: "refused", FailureKind: operation.FailureRefused}
	}
	return operation.Final{State: operation.StateDone, ResultRef: "ref-" + in.OperationID[:8]}
}

// Scripted is the Workflow of Engine that follows the suite's scripts.
func Scripted(_ context.Context, in operation.Input, review *Review) operation.Final {
	switch ScriptOf(in) {
	case ScriptReview:
		res := review.Wait()
		return ScriptOutcome(in, &res)
	case ScriptRun:
		time.Sleep(RunFor)
	}
	return ScriptOutcome(in, nil)
}

// ExerciseEngine checks e against the port's promises, with workflows that
// follow the suite's scripts: a start names its run and a second start of
// the same operation is refused; Describe tells whether a workflow exists;
// Await answers the outcome, or says it had none by the deadline; Resolve
// gives the first decision to a workflow awaiting review and refuses every
// other; Deliver reaches a running workflow only; Timeline shows a start.
func ExerciseEngine(t *testing.T, e gateway.Engine) {
	t.Helper()
	ctx := context.Background()
	soon := func() time.Time { return time.Now().Add(15 * time.Second) }

	t.Run("an unknown operation has no workflow", func(t *testing.T) {
		t.Parallel()
		opID := fingerprint.NewNonce()
		require.ErrorIs(t, e.Describe(ctx, opID), gateway.ErrNoWorkflow)
		_, err := e.Await(ctx, opID, "", soon())
		require.ErrorIs(t, err, gateway.ErrNoWorkflow)
		require.ErrorIs(t, e.Deliver(ctx, opID, operation.DownstreamEvent{Record: json.RawMessage(`{}`)}), gateway.ErrNoWorkflow)
	})

	t.Run("started once, its outcome awaited", func(t *testing.T) {
		t.Parallel()
		for _, script := range []string{ScriptDone, ScriptFail} {
			in := ScriptInput(fingerprint.NewNonce(), script)
			run, err := e.Start(ctx, in, gateway.StartOptions{TraceID: "trace-1"})
			require.NoError(t, err)
			assert.NotEmpty(t, run, "a start names its run")
			require.NoError(t, e.Describe(ctx, in.OperationID))
			got, err := e.Await(ctx, in.OperationID, run, soon())
			require.NoError(t, err)
			want := ScriptOutcome(in, nil)
			assert.Equal(t, want.State, got.State, script)
			assert.Equal(t, want.ResultRef, got.ResultRef, script)
			assert.Equal(t, want.Reason, got.Reason, script)
			assert.Equal(t, want.FailureKind, got.FailureKind, script)
			again, err := e.Await(ctx, in.OperationID, "", soon())
			require.NoError(t, err, "the current run is awaited without its id")
			assert.Equal(t, got.State, again.State)
			_, err = e.Start(ctx, in, gateway.StartOptions{})
			require.ErrorIs(t, err, gateway.ErrAlreadyStarted, "a closed workflow is never started again")
			require.ErrorIs(t, e.Deliver(ctx, in.OperationID, operation.DownstreamEvent{Record: json.RawMessage(`{}`)}),
				gateway.ErrNoWorkflow, "a closed workflow takes no event")
			timeline, err := e.Timeline(ctx, in.OperationID)
			require.NoError(t, err)
			require.NotEmpty(t, timeline)
			assert.Equal(t, "workflow_started", timeline[0].Event)
		}
	})

	t.Run("a running workflow", func(t *testing.T) {
		t.Parallel()
		in := ScriptInput(fingerprint.NewNonce(), ScriptRun)
		run, err := e.Start(ctx, in, gateway.StartOptions{})
		require.NoError(t, err)
		_, err = e.Start(ctx, in, gateway.StartOptions{})
		require.ErrorIs(t, err, gateway.ErrAlreadyStarted, "a second start of a running workflow")
		began := time.Now()
		_, err = e.Await(ctx, in.OperationID, run, time.Now().Add(300*time.Millisecond))
		require.ErrorIs(t, err, gateway.ErrNoOutcome)
		assert.Less(t, time.Since(began), 5*time.Second, "the wait ends at its deadline")
		require.NoError(t, e.Deliver(ctx, in.OperationID, operation.DownstreamEvent{Record: json.RawMessage(`{"status":"paid"}`),
			EventType: "payout.paid"}))
		_, err = e.Resolve(ctx, in.OperationID, operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "x", Operator: "ops"},
			5*time.Second)
		var notAwaiting *gateway.NotAwaitingReviewError
		require.ErrorAs(t, err, &notAwaiting, "a workflow that does not await review refuses a decision")
		assert.Equal(t, operation.StateInFlight, notAwaiting.State)
	})

	t.Run("the first decision counts", func(t *testing.T) {
		t.Parallel()
		in := ScriptInput(fingerprint.NewNonce(), ScriptReview)
		_, err := e.Start(ctx, in, gateway.StartOptions{})
		require.NoError(t, err)
		first := operation.Resolution{Outcome: operation.ResolutionCompleted, Result: json.RawMessage(`{"id":"tr_9"}`),
			Operator: "carol", Note: "checked the statement"}
		var ans operation.ResolveAnswer
		require.Eventually(t, func() bool {
			ans, err = e.Resolve(ctx, in.OperationID, first, 10*time.Second)
			var notAwaiting *gateway.NotAwaitingReviewError
			return !errors.As(err, &notAwaiting) // until the workflow awaits review
		}, 10*time.Second, 20*time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, ans.Result.State)
		assert.Equal(t, "manual", ans.Result.ResultRef)
		assert.Equal(t, "carol", ans.Decision.Operator)
		assert.Equal(t, operation.ResolutionCompleted, ans.Decision.Outcome)
		assert.Equal(t, "checked the statement", ans.Decision.Note)
		_, err = e.Resolve(ctx, in.OperationID, operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "no",
			Operator: "dave"}, 5*time.Second)
		var already *gateway.AlreadyResolvedError
		require.ErrorAs(t, err, &already, "a second decision is refused")
		assert.Equal(t, "carol", already.Decision.Operator, "naming the first")
		got, err := e.Await(ctx, in.OperationID, "", soon())
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, got.State)
	})
}
