// Package workflows holds the one Temporal workflow every operation runs as:
// its ID is the operation_id (the fingerprint's nonce), so Temporal itself
// refuses a second execution of the same operation.
package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/plan"
)

const (
	// TaskQueue is the default task queue of the worker and the gateway.
	TaskQueue = "oncegate"
	// OperationWorkflowName is the registered name of the operation workflow.
	OperationWorkflowName = "Operation"
	// SignalResolve is the signal an operator sends to resolve NEEDS_REVIEW
	// (Web UI, temporal workflow signal): the first decision wins, a later
	// one is refused and shown in the state query and details.
	SignalResolve = "resolve"
	// SignalDownstreamState is the signal the gateway sends when a verified
	// webhook reports the downstream's state of a pending operation.
	SignalDownstreamState = "downstream_state"
	// UpdateResolve is the Update the ops API sends to resolve NEEDS_REVIEW:
	// its validator refuses a second decision, and it answers the final state.
	UpdateResolve = "resolve-once"
	// QueryState is the query that answers the workflow's current state.
	QueryState = "state"
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

// OperationInput is the workflow's input: everything it needs, copied from
// the catalog at start, so a later catalog change cannot alter a running
// operation or the replay of its history.
type OperationInput struct {
	// OperationID is the nonce; also the workflow ID, Idempotency-Key and client_reference.
	OperationID string `json:"operation_id"`
	// Subject is who the operation belongs to.
	Subject string `json:"subject"`
	// Scope is the action.
	Scope string `json:"scope"`
	// ParamHash binds the canonical params.
	ParamHash string `json:"param_hash"`
	// Owner is the gateway claim's owner in Redis, for the owner-checked finalize.
	Owner string `json:"owner"`
	// Params is the JSON body sent downstream: normalized bound params plus free params.
	Params json.RawMessage `json:"params"`
	// TruthClaimed says the starting gateway inserted the truth record
	// IN_FLIGHT under Owner itself (a fresh claim), so the workflow need
	// not claim it again; false for takeovers of orphaned claims.
	TruthClaimed bool `json:"truth_claimed,omitempty"`
	// ClaimedAt is when the gateway's claim was taken (with TruthClaimed).
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// BoundParams are the canonical bound params (param_hash is their
	// SHA-256), kept in the truth at claim for operators.
	BoundParams json.RawMessage `json:"bound_params,omitempty"`
	// FingerprintExp is the fingerprint's expiry.
	FingerprintExp time.Time `json:"fingerprint_exp"`
	// InFlightTTL is the action's in_flight_ttl.
	InFlightTTL time.Duration `json:"in_flight_ttl"`
	// TerminalTTL is the action's terminal_ttl.
	TerminalTTL time.Duration `json:"terminal_ttl"`
	// Downstream is the action's downstream, resolved by the catalog into
	// the plain values the workflow and its activities run.
	Downstream plan.Downstream `json:"downstream_plan"`
	// CatalogDownstream is the catalog's downstream configuration that
	// gateways sent before the plan existed; read only (by WithPlan) to
	// replay and continue their workflows. New inputs leave it empty.
	CatalogDownstream json.RawMessage `json:"downstream,omitempty"`
	// Summary is a short human text (action and amount) for the Web UI.
	Summary string `json:"summary"`
}

// OperationResult is the workflow's result: the terminal outcome (its JSON
// is that of every recorded history).
type OperationResult = idemstore.Final

// Resolution is the payload of the resolve signal.
type Resolution struct {
	// Outcome is "completed" or "failed".
	Outcome string `json:"outcome"`
	// Result is the operator's result for a completed outcome.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason is the operator's reason for a failed outcome.
	Reason string `json:"reason,omitempty"`
	// Operator is who resolved it.
	Operator string `json:"operator"`
	// Note is the operator's free note.
	Note string `json:"note,omitempty"`
	// EvidenceURL links the operator's evidence (a bank statement, a ticket).
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// DownstreamEvent is the payload of the downstream_state signal: the
// downstream's record of the operation, as a verified webhook carried it.
type DownstreamEvent struct {
	// Record is the downstream's record (read with the catalog's business_state).
	Record json.RawMessage `json:"record"`
	// EventType is the webhook event's type, such as payout.paid, for logs.
	EventType string `json:"event_type,omitempty"`
}

// StateView is the answer of the state query.
type StateView struct {
	// State is the current state.
	State idemstore.State `json:"state"`
	// Reason explains NEEDS_REVIEW or FAILED.
	Reason string `json:"reason,omitempty"`
	// ResultRef is set once DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// DownstreamState is the business state the downstream last reported
	// while the operation is in flight (such as a payout's "pending").
	DownstreamState string `json:"downstream_state,omitempty"`
	// Decision is the operator's decision, once one was accepted.
	Decision *OperatorDecision `json:"decision,omitempty"`
	// Refused lists the decisions refused (the latest few).
	Refused []RefusedResolution `json:"refused,omitempty"`
	// ResolveSignals counts the resolve signals the workflow has handled,
	// each either the decision or refused (SignalVerdicts).
	ResolveSignals int `json:"resolve_signals,omitempty"`
}

// WithPlan returns in with its Downstream plan, resolving the catalog
// downstream of an input recorded before the plan existed (a pure function
// of the input, so a replay resolves it the same way).
func (in OperationInput) WithPlan() (OperationInput, error) {
	if in.Downstream.Kind != "" || len(in.CatalogDownstream) == 0 {
		return in, nil
	}
	var cd plan.Source
	if err := json.Unmarshal(in.CatalogDownstream, &cd); err != nil {
		return in, fmt.Errorf("decode the downstream of %s: %w", in.OperationID, err)
	}
	in.Downstream, in.CatalogDownstream = cd.Plan(), nil
	return in, nil
}
