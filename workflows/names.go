// Package workflows holds the one Temporal workflow every operation runs as:
// its ID is the operation_id (the fingerprint's nonce), so Temporal itself
// refuses a second execution of the same operation. Its input, its
// activities' inputs and answers are in package operation; its activities
// are the methods of activities.Activities, called by method value.
package workflows

import (
	"github.com/oncegate/oncegate/operation"
)

const (
	// OperationWorkflowName is the registered name of the operation workflow.
	OperationWorkflowName = "Operation"
	// SignalResolve is the signal an operator sends to resolve NEEDS_REVIEW
	// (Web UI, temporal workflow signal): the first decision wins, a later
	// one is refused and shown in the state query and details.
	SignalResolve = operation.SignalResolve
	// SignalDownstreamState is the signal the gateway sends when a verified
	// webhook reports the downstream's state of a pending operation.
	SignalDownstreamState = "downstream_state"
	// UpdateResolve is the Update the ops API sends to resolve NEEDS_REVIEW:
	// its validator refuses a second decision, and it answers the final state.
	UpdateResolve = "resolve-once"
	// QueryState is the query that answers the workflow's current state.
	QueryState = "state"
	// MetricResolutionsRefused counts the decisions the workflow refused
	// (the resolve Update's validator, the resolve signal's handler), by
	// via (update, signal) and why (the refusal's error type), exported by
	// the worker's metrics (WORKER_METRICS_URL) under this name.
	MetricResolutionsRefused = "oncegate_resolutions_refused_total"
)

// Activity type names as histories record them. The workflow calls its
// activities by method value (workflow.ExecuteActivity(ctx, a.Execute, in))
// and the worker registers activities.Activities as a struct, so each name
// is its method's name; they are spelled out only where a recorded history
// is read by name (HistoryTimeline, the payload test), and
// TestActivityNamesAreTheMethodNames keeps them equal to the methods.
const (
	// ActivityClaimTruth inserts-or-reads the PostgreSQL truth record.
	ActivityClaimTruth = "ClaimTruth"
	// ActivityExecute calls the downstream's execute endpoint.
	ActivityExecute = "Execute"
	// ActivityReconcile asks the downstream's status endpoint by client_reference.
	ActivityReconcile = "Reconcile"
	// ActivityMarkNeedsReview moves the truth record to NEEDS_REVIEW.
	ActivityMarkNeedsReview = "MarkNeedsReview"
	// ActivityFinalize records the terminal outcome: PostgreSQL, then Redis.
	ActivityFinalize = "Finalize"
	// ActivityRecordDownstreamState keeps the downstream's reported business
	// state (such as "pending") on the truth record.
	ActivityRecordDownstreamState = "RecordDownstreamState"
)

// Application error types of the resolve Update's refusals.
const (
	// ErrTypeAlreadyResolved refuses a resolution after the first decision;
	// its details are the operation.OperatorDecision.
	ErrTypeAlreadyResolved = "AlreadyResolved"
	// ErrTypeNotAwaitingReview refuses a resolution of an operation that is
	// not NEEDS_REVIEW; its details are a NotAwaitingReview.
	ErrTypeNotAwaitingReview = "NotAwaitingReview"
	// ErrTypeInvalidResolution refuses a malformed resolution.
	ErrTypeInvalidResolution = "InvalidResolution"
)

// Search attribute names (Keyword), registered by the dev stack at start.
const (
	// SearchAttrState holds IN_FLIGHT, DONE, FAILED or NEEDS_REVIEW.
	SearchAttrState = "IdemState"
	// SearchAttrScope holds the action.
	SearchAttrScope = "IdemScope"
	// SearchAttrSubject holds the subject.
	SearchAttrSubject = "IdemSubject"
)

// StateView is the answer of the state query.
type StateView struct {
	// State is the current state.
	State operation.State `json:"state"`
	// Reason explains NEEDS_REVIEW or FAILED.
	Reason string `json:"reason,omitempty"`
	// ResultRef is set once DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// DownstreamState is the business state the downstream last reported
	// while the operation is in flight (such as a payout's "pending").
	DownstreamState string `json:"downstream_state,omitempty"`
	// Decision is the operator's decision, once one was accepted.
	Decision *operation.OperatorDecision `json:"decision,omitempty"`
	// Refused lists the decisions refused (the latest few).
	Refused []RefusedResolution `json:"refused,omitempty"`
	// ResolveSignals counts the resolve signals the workflow has handled,
	// each either the decision or refused (SignalVerdicts).
	ResolveSignals int `json:"resolve_signals,omitempty"`
}
