package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// The ports: what the gateway needs of the world, declared here, where it
// is used. Each is small; the real implementations (idemstore's stores,
// the Temporal engine in package engine, redis_rate) and the fakes of
// package gatewaytest satisfy them, and each fake passes the suite its
// real implementation passes.

// Claims is what the gateway needs of the idempotency store: claims and
// their records, the amnesia guard, the ops list, webhook receipts and
// readiness. idemstore.Store satisfies it.
type Claims interface {
	// Acquire claims an operation (see idemstore.Store).
	Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error)
	// Get reads an operation's record, or idemstore.ErrNotFound.
	Get(ctx context.Context, opID string) (idemstore.Record, error)
	// Outcome reads what an agent's status query is told.
	Outcome(ctx context.Context, opID string) (idemstore.Record, error)
	// Takeover moves an orphaned claim to a new owner (idemstore.ErrNotOwner
	// when another holds it).
	Takeover(ctx context.Context, p idemstore.TakeoverParams) error
	// Release gives back a claim whose workflow never started.
	Release(ctx context.Context, p idemstore.ReleaseParams) error
	// FinalizeFast writes a terminal outcome to the fast path only.
	FinalizeFast(ctx context.Context, f idemstore.Finalization) error
	// FindRecent finds the most recent record of the same intent (the
	// amnesia guard), or idemstore.ErrNotFound.
	FindRecent(ctx context.Context, p idemstore.FindRecentParams) (idemstore.Record, error)
	// List returns the records f selects (the ops list).
	List(ctx context.Context, f idemstore.ListFilter) ([]idemstore.Record, error)
	// RecordWebhook remembers a webhook event; false for a replay.
	RecordWebhook(ctx context.Context, p idemstore.WebhookParams) (bool, error)
	// Ready fails when the truth cannot be reached.
	Ready(ctx context.Context) error
	// Degraded reports whether the fast path is bypassed right now.
	Degraded() bool
}

var _ Claims = idemstore.Store(nil)

// Approvals is what the gateway needs of the approvals' store: a person's
// approvals of operations, their passkeys and enrolment invites.
// approval.Store satisfies it.
type Approvals interface {
	approval.Store
}

// Budgets reads the truth's budget windows without locking (the preview's
// warning, the ops view) and resets them. pgstore satisfies it.
type Budgets interface {
	// Usage is what each window of c holds of subject's reservations and
	// when c.Amount would fit it.
	Usage(ctx context.Context, subject string, c operation.Charge) ([]operation.WindowUsage, error)
	// Currencies lists the currencies subject holds reservations in since since.
	Currencies(ctx context.Context, subject string, since time.Time) ([]string, error)
	// ResetBudget starts r.Subject's windows afresh.
	ResetBudget(ctx context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error)
	// LastReset is subject's last reset, or idemstore.ErrNotFound.
	LastReset(ctx context.Context, subject string) (idemstore.BudgetReset, error)
}

// Rates is the GCRA limiter of the subjects' request rates
// (*redis_rate.Limiter on the gateway's Redis satisfies it).
type Rates interface {
	// Allow counts one request under key and says whether it is allowed
	// and, if not, how long to wait.
	Allow(ctx context.Context, key string, limit redis_rate.Limit) (*redis_rate.Result, error)
}

var _ Rates = (*redis_rate.Limiter)(nil)

// Engine runs the operations' workflows: one per operation, its ID the
// operation id. Package engine implements it on a Temporal client.
type Engine interface {
	// Start starts the workflow of in.OperationID and names its run, or
	// answers ErrAlreadyStarted when a workflow of that ID exists: a second
	// start never runs a second execution.
	Start(ctx context.Context, in operation.Input, opts StartOptions) (run string, err error)
	// Describe answers nil when a workflow of opID exists (running or
	// closed), ErrNoWorkflow when none does, or why it cannot tell.
	Describe(ctx context.Context, opID string) error
	// Await waits until deadline for the terminal outcome of opID's
	// workflow (run: the run its start named, or "" for the current one);
	// ErrNoOutcome when the wait ended without one.
	Await(ctx context.Context, opID, run string, deadline time.Time) (operation.Final, error)
	// Resolve sends an operator's decision to opID's waiting workflow and
	// waits up to wait for the outcome it records; ErrResolutionPending
	// when the workflow accepted the decision but has not recorded its
	// outcome yet; an *AlreadyResolvedError, *NotAwaitingReviewError or
	// *InvalidResolutionError when the workflow refused it.
	Resolve(ctx context.Context, opID string, res operation.Resolution, wait time.Duration) (operation.ResolveAnswer, error)
	// Deliver signals a downstream's event to opID's workflow;
	// ErrNoWorkflow when it has finished.
	Deliver(ctx context.Context, opID string, ev operation.DownstreamEvent) error
	// Timeline is opID's workflow history as an operator reads it, each
	// resolve signal marked with what the workflow made of it.
	Timeline(ctx context.Context, opID string) ([]operation.TimelineEntry, error)
}

// StartOptions are the settings of one workflow start besides its input.
type StartOptions struct {
	// TraceID is the starting request's trace, kept in the workflow's memo.
	TraceID string
	// Eager hands the first workflow task to this process's own worker in
	// the start's answer (an in-process worker).
	Eager bool
}

// The engine's sentinel errors.
var (
	// ErrAlreadyStarted: a workflow of the operation exists already; the
	// caller attaches to it.
	ErrAlreadyStarted = errors.New("gateway: workflow already started")
	// ErrNoWorkflow: no workflow of the operation exists.
	ErrNoWorkflow = errors.New("gateway: no workflow of the operation")
	// ErrNoOutcome: a wait for the workflow's outcome ended without one.
	ErrNoOutcome = errors.New("gateway: no outcome yet")
	// ErrResolutionPending: the workflow accepted a decision and has not
	// recorded its outcome yet.
	ErrResolutionPending = errors.New("gateway: resolution accepted, outcome not recorded yet")
)

// AlreadyResolvedError refuses a decision after the first one.
type AlreadyResolvedError struct {
	// Decision is the decision that counts.
	Decision operation.OperatorDecision
}

// Error implements error.
func (e *AlreadyResolvedError) Error() string {
	return fmt.Sprintf("already resolved %s by %s", e.Decision.Outcome, e.Decision.Operator)
}

// NotAwaitingReviewError refuses a decision about an operation that does
// not wait for one.
type NotAwaitingReviewError struct {
	// State is the operation's state.
	State operation.State
}

// Error implements error.
func (e *NotAwaitingReviewError) Error() string { return "not awaiting review: " + string(e.State) }

// InvalidResolutionError refuses a malformed decision.
type InvalidResolutionError struct {
	// Detail says what is wrong, in the workflow's words.
	Detail string
}

// Error implements error.
func (e *InvalidResolutionError) Error() string { return "invalid resolution: " + e.Detail }
