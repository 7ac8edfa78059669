package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/engine"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/gateway/gatewaytest"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// scripted is the operation workflow of the engine's suite on a real
// Temporal server: it follows gatewaytest's scripts, and answers the
// resolve Update and the downstream_state signal as the operation
// workflow does (its validator refuses a second decision, naming the
// first, and one made while it does not await review).
func scripted(ctx workflow.Context, in operation.Input) (operation.Final, error) {
	state := operation.StateInFlight
	var decision *operation.OperatorDecision
	var res *operation.Resolution
	var final *operation.Final
	err := workflow.SetUpdateHandlerWithOptions(ctx, workflows.UpdateResolve,
		func(ctx workflow.Context, r operation.Resolution) (operation.ResolveAnswer, error) {
			res = &r
			decision = &operation.OperatorDecision{Outcome: r.Outcome, Operator: r.Operator, DecidedAt: workflow.Now(ctx),
				Via: operation.ViaUpdate, Note: r.Note, EvidenceURL: r.EvidenceURL}
			if err := workflow.Await(ctx, func() bool { return final != nil }); err != nil {
				return operation.ResolveAnswer{}, err
			}
			return operation.ResolveAnswer{Result: *final, Decision: *decision}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, _ operation.Resolution) error {
			switch {
			case decision != nil:
				return temporal.NewApplicationError("already resolved", workflows.ErrTypeAlreadyResolved, *decision)
			case state != operation.StateNeedsReview:
				return temporal.NewApplicationError("not awaiting review", workflows.ErrTypeNotAwaitingReview,
					workflows.NotAwaitingReview{State: state})
			}
			return nil
		}})
	if err != nil {
		return operation.Final{}, err
	}
	events := workflow.GetSignalChannel(ctx, workflows.SignalDownstreamState)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var ev operation.DownstreamEvent
			events.Receive(ctx, &ev)
		}
	})
	out := gatewaytest.ScriptOutcome(in, nil)
	switch gatewaytest.ScriptOf(in) {
	case gatewaytest.ScriptReview:
		state = operation.StateNeedsReview
		if err := workflow.Await(ctx, func() bool { return res != nil }); err != nil {
			return operation.Final{}, err
		}
		out = gatewaytest.ScriptOutcome(in, res)
	case gatewaytest.ScriptRun:
		if err := workflow.Sleep(ctx, gatewaytest.RunFor); err != nil {
			return operation.Final{}, err
		}
	}
	out.CompletedAt = workflow.Now(ctx)
	final = &out
	if decision != nil {
		// Kept open a moment, as the operation workflow is, to refuse a
		// late decision visibly.
		if err := workflow.Sleep(ctx, 3*time.Second); err != nil {
			return operation.Final{}, err
		}
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return operation.Final{}, err
	}
	return out, nil
}

// TestTemporalEngine: the engine keeps the port's promises on a real
// Temporal server (the suite the fake engine passes too).
func TestTemporalEngine(t *testing.T) {
	t.Parallel()
	tp := testenv.SharedTemporal(t)
	tc := tp.Client(t)
	queue := "engine-" + fingerprint.NewNonce()
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(scripted, workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	gatewaytest.ExerciseEngine(t, engine.New(tc, queue, slog.New(slog.DiscardHandler)))
}

// fakeClient is the Temporal client an engine unit test drives: it
// records the start's options and refuses the first starts with refusals.
type fakeClient struct {
	engine.Client
	refusals []error
	starts   []client.StartWorkflowOptions
}

func (f *fakeClient) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.starts = append(f.starts, o)
	if len(f.refusals) > 0 {
		err := f.refusals[0]
		f.refusals = f.refusals[1:]
		return nil, err
	}
	return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "run-1")
}

// TestStartRetriesOnlyWhatTheSDKDoesNot: a frontend that does not know the
// namespace for a moment (seen on an overloaded dev server) is asked
// again; what the SDK retries itself, or what is no transient refusal, is
// answered at once.
func TestStartRetriesOnlyWhatTheSDKDoesNot(t *testing.T) {
	t.Parallel()
	in := operation.Input{OperationID: fingerprint.NewNonce(), Subject: "alice", Scope: "payments.transfer",
		Summary: "payments.transfer 12.5 USD to p-1", ActingClient: "agent-app"}
	fc := &fakeClient{refusals: []error{serviceerror.NewNamespaceNotFound("default"), serviceerror.NewNamespaceNotFound("default")}}
	_, err := engine.New(fc, "oncegate", nil).Start(context.Background(), in, gateway.StartOptions{TraceID: "t-1", Eager: true})
	require.ErrorIs(t, err, gateway.ErrAlreadyStarted, "retried past two transient refusals, to the server's answer")
	require.Len(t, fc.starts, 3)
	o := fc.starts[0]
	assert.Equal(t, in.OperationID, o.ID, "the workflow ID is the operation id")
	assert.Equal(t, "oncegate", o.TaskQueue)
	assert.Equal(t, in.Summary, o.StaticSummary)
	assert.Equal(t, "t-1", o.Memo["trace_id"])
	assert.Equal(t, "agent-app", o.Memo["acting_client"], "who acted for the subject is in the memo")
	assert.True(t, o.EnableEagerStart)
	assert.Equal(t, 3, o.TypedSearchAttributes.Size(), "IdemState, IdemScope, IdemSubject")

	for _, refusal := range []error{serviceerror.NewUnavailable("down"), errors.New("other")} {
		fc := &fakeClient{refusals: []error{refusal}}
		_, err := engine.New(fc, "q", nil).Start(context.Background(), in, gateway.StartOptions{})
		require.ErrorIs(t, err, refusal)
		assert.Len(t, fc.starts, 1, fmt.Sprintf("%v is not asked again here", refusal))
	}
}
