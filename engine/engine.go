// Package engine runs the gateway's operations on Temporal: it implements
// gateway.Engine on a Temporal client. Each operation is one workflow whose
// ID is its operation_id, started with a policy that refuses a second
// execution of the same ID and attaches to the first; the gateway waits
// for its result, resolves it with the resolve Update, signals it a
// downstream's event and reads its history for operators.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// Client is the part of client.Client the engine uses; a client.Client
// satisfies it.
type Client interface {
	// ExecuteWorkflow starts (or, by its ID policies, attaches to) a workflow.
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	// GetWorkflow returns a handle on an existing workflow.
	GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
	// DescribeWorkflowExecution describes a workflow, or returns *serviceerror.NotFound.
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	// SignalWorkflow sends a signal to a running workflow.
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	// UpdateWorkflow sends an Update to a running workflow.
	UpdateWorkflow(ctx context.Context, options client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error)
	// QueryWorkflow asks a workflow a query (its state view for the ops timeline).
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
	// GetWorkflowHistory iterates over a workflow's history.
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool,
		filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator
}

var _ Client = client.Client(nil)

// Temporal is gateway.Engine on a Temporal client.
type Temporal struct {
	c         Client
	taskQueue string
	log       *slog.Logger
}

var _ gateway.Engine = (*Temporal)(nil)

// New returns the engine on c, starting workflows on taskQueue (the
// configuration's ONCEGATE_TASK_QUEUE); log nil means slog.Default().
func New(c Client, taskQueue string, log *slog.Logger) *Temporal {
	if log == nil {
		log = slog.Default()
	}
	return &Temporal{c: c, taskQueue: taskQueue, log: log}
}

// startRetries bounds the starts retried after a transient refusal.
const startRetries = 3

// startMemo is the memo a workflow starts with: the confirm's trace id and,
// when its token named one, the acting client (who acted for the subject;
// shown by Temporal's describe, not part of the history's decisions).
func startMemo(in operation.Input, opts gateway.StartOptions) map[string]any {
	memo := map[string]any{"trace_id": opts.TraceID}
	if in.ActingClient != "" {
		memo["acting_client"] = in.ActingClient
	}
	return memo
}

// Start implements gateway.Engine. It retries a few times (within ctx)
// when the frontend refuses transiently (a namespace its cache does not
// know yet): a start is safe to repeat, since the workflow ID makes a
// second one attach or be refused.
func (t *Temporal) Start(ctx context.Context, in operation.Input, opts gateway.StartOptions) (string, error) {
	options := client.StartWorkflowOptions{
		ID:                       in.OperationID,
		TaskQueue:                t.taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    workflows.StartSearchAttributes(in),
		StaticSummary:            in.Summary,
		Memo:                     startMemo(in, opts),
		// The gateway's own worker takes the first workflow task from the
		// start's answer; without one on this client the SDK starts it
		// normally.
		EnableEagerStart: opts.Eager,
		// A workflow of the ID, running or closed, is answered as
		// WorkflowExecutionAlreadyStarted (ErrAlreadyStarted: the caller
		// attaches to it), never as a run this start began.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		run, err := t.c.ExecuteWorkflow(ctx, options, workflows.OperationWorkflowName, in)
		if err == nil {
			return run.GetRunID(), nil
		}
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return "", fmt.Errorf("start %s: %w", in.OperationID, gateway.ErrAlreadyStarted)
		}
		if attempt == startRetries || !transientStartError(err) {
			return "", fmt.Errorf("start %s: %w", in.OperationID, err)
		}
		t.log.WarnContext(ctx, "start workflow refused transiently; retrying", "operation_id", in.OperationID, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("start %s: %w", in.OperationID, err)
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// transientStartError reports whether a refused start is worth repeating
// here: only what the SDK does not retry itself (its gRPC interceptor
// already retries Unavailable, ResourceExhausted, Aborted and Unknown
// within the call's deadline): a namespace a frontend that just started
// does not know yet.
func transientStartError(err error) bool {
	var nsNotFound *serviceerror.NamespaceNotFound
	return errors.As(err, &nsNotFound)
}

// Describe implements gateway.Engine.
func (t *Temporal) Describe(ctx context.Context, opID string) error {
	_, err := t.c.DescribeWorkflowExecution(ctx, opID, "")
	return notFoundAs(err, opID, "describe")
}

// notFoundAs wraps err of step on opID, a NotFound as gateway.ErrNoWorkflow.
func notFoundAs(err error, opID, step string) error {
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("%s %s: %w", step, opID, gateway.ErrNoWorkflow)
	}
	return fmt.Errorf("%s %s: %w", step, opID, err)
}

// historyTailRoom is kept between the end of a wait for a workflow's result
// and its long poll's deadline. Temporal's history service answers a long
// poll empty at once when less than a second is left before the caller's
// deadline (longPollSoftTimeout in go.temporal.io/server
// service/history/api), and the SDK then polls again at once: a wait whose
// deadline is the poll's own spins hundreds of requests in its last second.
const historyTailRoom = time.Second + 250*time.Millisecond

// Await implements gateway.Engine: the SDK's long poll on the workflow's
// result. An operation's workflow has one run only (its ID is never
// reused, it never continues as new), so a known run ID names it; with an
// empty one the SDK first asks the server for the current run. The long
// poll's deadline lies historyTailRoom past the wait, and the wait ends by
// cancel: a deadline the poll reaches spins (see historyTailRoom).
func (t *Temporal) Await(ctx context.Context, opID, run string, deadline time.Time) (operation.Final, error) {
	wctx, cancel := context.WithDeadline(ctx, deadline.Add(historyTailRoom))
	defer cancel()
	stop := time.AfterFunc(time.Until(deadline), cancel)
	defer stop.Stop()
	var res operation.Final
	err := t.c.GetWorkflow(wctx, opID, run).Get(wctx, &res)
	switch {
	case err == nil && res.State.Terminal():
		return res, nil
	case err == nil:
		return operation.Final{}, fmt.Errorf("await %s: state %s: %w", opID, res.State, gateway.ErrNoOutcome)
	case wctx.Err() != nil:
		// Ended by the wait's own deadline or cancel (the SDK may say so as
		// a gRPC status rather than the context's error).
		return operation.Final{}, fmt.Errorf("await %s: %w", opID, gateway.ErrNoOutcome)
	}
	return operation.Final{}, notFoundAs(err, opID, "await")
}

// Resolve implements gateway.Engine with the resolve Update: accepted once
// its validator let it in, then its result, the outcome the workflow
// recorded, waited for up to wait.
func (t *Temporal) Resolve(ctx context.Context, opID string, res operation.Resolution, wait time.Duration) (operation.ResolveAnswer, error) {
	handle, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   opID,
		UpdateName:   workflows.UpdateResolve,
		Args:         []any{res},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return operation.ResolveAnswer{}, refusal(opID, err)
	}
	gctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var ans operation.ResolveAnswer
	if err := handle.Get(gctx, &ans); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || gctx.Err() != nil {
			return operation.ResolveAnswer{}, fmt.Errorf("resolve %s: %w", opID, gateway.ErrResolutionPending)
		}
		return operation.ResolveAnswer{}, refusal(opID, err)
	}
	return ans, nil
}

// refusal maps the workflow's refusal of a decision to the gateway's
// errors; any other error is wrapped as it is.
func refusal(opID string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case workflows.ErrTypeAlreadyResolved:
			var d operation.OperatorDecision
			_ = appErr.Details(&d) // an undecodable decision is shown empty
			return &gateway.AlreadyResolvedError{Decision: d}
		case workflows.ErrTypeNotAwaitingReview:
			var n workflows.NotAwaitingReview
			_ = appErr.Details(&n) // the state is only shown
			return &gateway.NotAwaitingReviewError{State: n.State}
		case workflows.ErrTypeInvalidResolution:
			return &gateway.InvalidResolutionError{Detail: appErr.Message()}
		}
	}
	return fmt.Errorf("update %s %s: %w", workflows.UpdateResolve, opID, err)
}

// Deliver implements gateway.Engine with the downstream_state signal.
func (t *Temporal) Deliver(ctx context.Context, opID string, ev operation.DownstreamEvent) error {
	return notFoundAs(t.c.SignalWorkflow(ctx, opID, "", workflows.SignalDownstreamState, ev), opID, "signal")
}

// Timeline implements gateway.Engine: the history's steps
// (workflows.HistoryTimeline), each resolve signal judged from the
// workflow's state query (asked only when there is a resolve signal to
// judge). What was read before a failure is returned with it.
func (t *Temporal) Timeline(ctx context.Context, opID string) ([]operation.TimelineEntry, error) {
	var events []*historypb.HistoryEvent
	iter := t.c.GetWorkflowHistory(ctx, opID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var herr error
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			herr = fmt.Errorf("read history of %s: %w", opID, err)
			break
		}
		events = append(events, ev)
	}
	return t.judgeSignals(ctx, opID, workflows.HistoryTimeline(events)), herr
}

// judgeSignals marks the resolve signals of a history's timeline accepted,
// refused or pending, from the workflow's state query.
func (t *Temporal) judgeSignals(ctx context.Context, opID string, entries []operation.TimelineEntry) []operation.TimelineEntry {
	signalled := false
	for _, e := range entries {
		signalled = signalled || e.Event == "signal"
	}
	if !signalled {
		return entries
	}
	var view workflows.StateView
	q, err := t.c.QueryWorkflow(ctx, opID, "", workflows.QueryState)
	if err == nil {
		err = q.Get(&view)
	}
	if err != nil {
		return workflows.SignalVerdicts(entries, nil, fmt.Errorf("query %s: %w", workflows.QueryState, err))
	}
	return workflows.SignalVerdicts(entries, &view, nil)
}
