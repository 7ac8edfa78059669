package api

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Temporal is the part of client.Client the gateway uses; a client.Client
// satisfies it.
type Temporal interface {
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

var _ Temporal = client.Client(nil)
