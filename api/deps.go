package api

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/idemstore"
)

// OperationStore is what the gateway needs of the combined idempotency store
// (idemstore/combined.Store satisfies it).
type OperationStore interface {
	// Acquire claims an operation or reports who holds it or how it ended.
	Acquire(ctx context.Context, c idemstore.Claim) (idemstore.Decision, error)
	// Get reads an operation's record, or idemstore.ErrNotFound.
	Get(ctx context.Context, key string) (idemstore.Record, error)
	// Takeover moves an orphaned IN_FLIGHT claim to a new owner.
	Takeover(ctx context.Context, key, fromOwner, toOwner string, ttl time.Duration) error
	// Release gives back a claim owner holds whose workflow does not exist.
	Release(ctx context.Context, key, owner string) error
	// FinalizeFast refills the fast path with a terminal outcome, owner-checked.
	FinalizeFast(ctx context.Context, f idemstore.Finalization) error
	// List returns the operations f selects.
	List(ctx context.Context, f idemstore.ListFilter) ([]idemstore.Record, error)
	// FindRecent finds the subject's latest identical operation since a time
	// (the amnesia guard); a read only. idemstore.ErrNotFound when none.
	FindRecent(ctx context.Context, subject, scope, paramHash string, since time.Time) (idemstore.Record, error)
	// RecordWebhook remembers a downstream's webhook event by its signature
	// and reports whether it is new (false: a replay).
	RecordWebhook(ctx context.Context, scope, signature string) (bool, error)
	// Degraded reports whether the Redis fast path is bypassed.
	Degraded() bool
	// Ready returns an error when the PostgreSQL truth cannot be reached.
	Ready(ctx context.Context) error
}

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
	// GetWorkflowHistory iterates over a workflow's history.
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool,
		filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator
}

var _ Temporal = client.Client(nil)
