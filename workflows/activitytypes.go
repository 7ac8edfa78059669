package workflows

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/idemstore"
)

// Activity names. The workflow calls its activities by these registered
// names, because the activities package imports this one for its types (the
// opposite import would be a cycle). Each name is the method name on
// activities.Activities, which the worker registers as a struct.
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

// Application error types the activities return and the workflow tells apart.
const (
	// ErrTypeBusinessRefusal is a definite refusal by the downstream (a 4xx
	// such as 422 insufficient_funds): nothing was executed. Non-retryable;
	// its details are a BusinessRefusal.
	ErrTypeBusinessRefusal = "BusinessRefusal"
	// ErrTypeNotSent means the request could not even be built (bad params
	// JSON, bad URL): nothing was sent. Non-retryable.
	ErrTypeNotSent = "NotSent"
	// ErrTypeDownstreamUnavailable is a 5xx, 408, 429 or a transport error:
	// the outcome is unknown. Retryable.
	ErrTypeDownstreamUnavailable = "DownstreamUnavailable"
	// ErrTypeNoStatusEndpoint means the action has no status endpoint, so
	// the outcome cannot be reconciled. Non-retryable.
	ErrTypeNoStatusEndpoint = "NoStatusEndpoint"
	// ErrTypeParamMismatch means the truth holds the key with another
	// param_hash: a security event; nothing is executed. Non-retryable.
	ErrTypeParamMismatch = "ParamMismatch"
	// ErrTypeAlreadyTerminal means the truth is already DONE or FAILED with
	// another outcome; truth is never overwritten. Non-retryable.
	ErrTypeAlreadyTerminal = "AlreadyTerminal"
	// ErrTypeNotOwner means the truth record belongs to another owner.
	// Non-retryable.
	ErrTypeNotOwner = "NotOwner"
	// ErrTypeAlreadyResolved refuses a resolution after the first decision;
	// its details are the OperatorDecision.
	ErrTypeAlreadyResolved = "AlreadyResolved"
	// ErrTypeNotAwaitingReview refuses a resolution of an operation that is
	// not NEEDS_REVIEW; its details are a NotAwaitingReview.
	ErrTypeNotAwaitingReview = "NotAwaitingReview"
	// ErrTypeInvalidResolution refuses a malformed resolution.
	ErrTypeInvalidResolution = "InvalidResolution"
)

// ReasonNotExecuted is the FAILED reason (the start of it) when
// reconciliation proves that the downstream has no record of the operation.
const ReasonNotExecuted = "not executed: the downstream has no record of it"

// ClaimResult is what the ClaimTruth activity found or created in the truth.
type ClaimResult struct {
	// State is IN_FLIGHT (go on), NEEDS_REVIEW (wait for an operator), or
	// DONE/FAILED (return the first outcome without executing).
	State idemstore.State `json:"state"`
	// Result is the first result when DONE.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference when DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason explains FAILED or NEEDS_REVIEW.
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a FAILED outcome is known.
	FailureKind idemstore.FailureKind `json:"failure_kind,omitempty"`
	// ResolvedBy names the operator who resolved the operation, if one did.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// CompletedAt is when the first outcome was recorded, when DONE or
	// FAILED (zero in histories recorded before it was returned).
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// ClaimedAt is when the truth record was claimed (zero in histories
	// recorded before it was returned).
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Owner is the truth record's owner. It differs from the input's Owner
	// only when two gateway claims raced while Redis was failing (one on
	// Redis, one on PostgreSQL); the workflow then finalizes the truth as
	// its owner.
	Owner string `json:"owner,omitempty"`
}

// ExecuteResult is the downstream's successful (2xx) answer.
type ExecuteResult struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int `json:"status_code"`
	// Result is the answer's JSON body.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference extracted from Result.
	ResultRef string `json:"result_ref,omitempty"`
}

// BusinessRefusal is the details payload of an ErrTypeBusinessRefusal error.
type BusinessRefusal struct {
	// StatusCode is the downstream's HTTP status (4xx).
	StatusCode int `json:"status_code"`
	// Code is the downstream's error code, such as insufficient_funds.
	Code string `json:"code,omitempty"`
	// Message is the downstream's error message.
	Message string `json:"message,omitempty"`
}

// Reason is the FAILED reason for the refusal: the downstream's error code,
// else its message, else the HTTP status.
func (r BusinessRefusal) Reason() string {
	switch {
	case r.Code != "":
		return r.Code
	case r.Message != "":
		return r.Message
	default:
		return "refused by the downstream (HTTP " + strconv.Itoa(r.StatusCode) + ")"
	}
}

// ReconcileResult is the status endpoint's definite answer.
type ReconcileResult struct {
	// Found is true when the downstream has the operation (200), false when
	// it has none (404).
	Found bool `json:"found"`
	// Result is the downstream's record of the operation when Found.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference extracted from Result.
	ResultRef string `json:"result_ref,omitempty"`
}

// RecordDownstreamStateInput is the input of the RecordDownstreamState activity.
type RecordDownstreamStateInput struct {
	// OperationID is the truth record's key.
	OperationID string `json:"operation_id"`
	// State is the downstream's business state, such as pending.
	State string `json:"state"`
}

// MarkNeedsReviewInput is the input of the MarkNeedsReview activity.
type MarkNeedsReviewInput struct {
	// OperationID is the truth record's key.
	OperationID string `json:"operation_id"`
	// Reason says why the outcome cannot be determined automatically.
	Reason string `json:"reason"`
}

// FinalizeInput is the input of the Finalize activity.
type FinalizeInput struct {
	// OperationID is the key.
	OperationID string `json:"operation_id"`
	// Owner is the gateway claim's owner, for the owner-checked Redis finalize.
	Owner string `json:"owner"`
	// TruthOwner is the truth record's owner when it differs from Owner (see
	// ClaimResult.Owner); the truth is then finalized as TruthOwner and the
	// fast path is left to its owner's TTL and the next refill.
	TruthOwner string `json:"truth_owner,omitempty"`
	// Final is the outcome to write (its fields are inlined in the JSON,
	// after truth_owner, as in every recorded history).
	idemstore.Final
	// ResolutionNote is the operator's note.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
	// ResolvedAt is when the operator's decision was accepted.
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// Scope is the action (a metrics label).
	Scope string `json:"scope,omitempty"`
	// ClaimedAt is when the truth claimed the operation (for the time spent
	// IN_FLIGHT); zero when unknown.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// TerminalTTL is how long the fast path replays the outcome.
	TerminalTTL time.Duration `json:"terminal_ttl"`
}

// ExtractResultRef returns the top-level member field of the JSON object
// result as a string (a JSON string as is, a number in its literal form), or
// "" when result is not an object, lacks the field, or holds another type.
// It is pure, so the workflow may call it too.
func ExtractResultRef(result json.RawMessage, field string) string {
	if field == "" || len(result) == 0 {
		return ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil {
		return ""
	}
	raw, ok := obj[field]
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	var n json.Number
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String()
	}
	return ""
}
