package operation

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// ClaimResult is what the ClaimTruth activity found or created in the truth.
type ClaimResult struct {
	// Final is the truth record's state and outcome: IN_FLIGHT (go on),
	// NEEDS_REVIEW with its Reason (wait for an operator), or DONE/FAILED
	// with the first outcome (answered without executing). Its fields are
	// inlined in the JSON, as in every recorded history.
	Final
	// ClaimedAt is when the truth record was claimed (zero in histories
	// recorded before it was returned).
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Owner is the truth record's owner. It differs from the input's owner
	// only when two gateway claims raced while Redis was failing (one on
	// Redis, one on PostgreSQL); the workflow then finalizes the truth as
	// its owner (Ownership.ClaimedAs).
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
	// Finalized is the DONE outcome the activity recorded in the truth and
	// the fast path (Input.ExecuteFinalizes), nil when it recorded none:
	// the workflow then finalizes.
	Finalized *Final `json:"finalized,omitempty"`
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
	// OperationID is the operation id of the truth record.
	OperationID string `json:"operation_id"`
	// State is the downstream's business state, such as pending.
	State string `json:"state"`
}

// MarkNeedsReviewInput is the input of the MarkNeedsReview activity.
type MarkNeedsReviewInput struct {
	// OperationID is the operation id of the truth record.
	OperationID string `json:"operation_id"`
	// Reason says why the outcome cannot be determined automatically.
	Reason string `json:"reason"`
}

// FinalizeInput is the input of the Finalize activity.
type FinalizeInput struct {
	// OperationID is the operation id.
	OperationID string `json:"operation_id"`
	// Ownership says as whom the truth (Ownership.TruthOwner) and the fast
	// path (Ownership.Owner) are finalized, and since when the operation
	// was claimed. Inputs recorded before it carry RecordedOwner,
	// RecordedTruthOwner and RecordedClaimedAt instead; Owners reads them.
	Ownership Ownership `json:"ownership,omitzero"`
	// Final is the outcome to write (its fields are inlined in the JSON,
	// as in every recorded history).
	Final
	// Scope is the action (a metrics label).
	Scope string `json:"scope,omitempty"`
	// TerminalTTL is how long the fast path replays the outcome.
	TerminalTTL time.Duration `json:"terminal_ttl"`

	// RecordedOwner is the gateway claim's owner, in inputs recorded before
	// Ownership; read only, by Owners.
	RecordedOwner string `json:"owner,omitempty"`
	// RecordedTruthOwner is the truth record's owner when it differed from
	// RecordedOwner, in inputs recorded before Ownership; read only, by Owners.
	RecordedTruthOwner string `json:"truth_owner,omitempty"`
	// RecordedClaimedAt is when the truth claimed the operation, in inputs
	// recorded before Ownership; read only, by Owners.
	RecordedClaimedAt time.Time `json:"claimed_at,omitzero"`
}

// Owners is the input's Ownership, or the one an input recorded before it
// meant by its owner, truth_owner and claimed_at.
func (in FinalizeInput) Owners() Ownership {
	if !in.Ownership.IsZero() {
		return in.Ownership
	}
	return recordedOwnership(in.RecordedOwner, false, time.Time{}).ClaimedAs(in.RecordedTruthOwner, in.RecordedClaimedAt)
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
