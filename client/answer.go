package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Answer is one decoded gateway answer. Which fields are set depends on
// Status (docs/contract.md §4): Fingerprint, ExpiresAt and Preview for
// preview_ready; Result and ResultRef when completed; Reason when failed;
// PollAfter while in progress or under review; Problems for invalid_params.
type Answer struct {
	// Status is the answer's status.
	Status Status `json:"status"`
	// HTTPCode is the HTTP status code of the answer.
	HTTPCode int `json:"-"`
	// Meaning says what happened, for a person or a model.
	Meaning string `json:"meaning"`
	// Instruction says what to do next, for a person or a model.
	Instruction string `json:"instruction"`
	// Retryable is true when sending exactly the same request again can succeed.
	Retryable bool `json:"retryable"`
	// TraceID identifies the request in the gateway's logs.
	TraceID string `json:"trace_id"`
	// OperationID is the operation the answer is about, once one exists.
	OperationID string `json:"operation_id,omitempty"`
	// Replayed is true when the gateway marked the answer Idempotent-Replayed.
	Replayed bool `json:"-"`

	// Fingerprint is what Confirm needs (preview_ready).
	Fingerprint string `json:"fingerprint,omitempty"`
	// ExpiresAt is when the fingerprint stops being confirmable (preview_ready).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Preview is what will be executed, to show the user (preview_ready); see DecodePreview.
	Preview json.RawMessage `json:"preview,omitempty"`
	// RecentOperation is the identical recent operation of the amnesia guard
	// (preview_ready, repeat_unacknowledged).
	RecentOperation *RecentOperation `json:"recent_operation,omitempty"`
	// Approval says that, why and where the user must approve the operation
	// with their passkey (preview_ready of an action whose policy asks,
	// approval_required, approval_declined).
	Approval *Approval `json:"approval,omitempty"`
	// Limit names the spend budget an amount does not fit, what it holds,
	// what is left and when enough frees (limit_exceeded; a preview_ready
	// that warns).
	Limit *Limit `json:"limit,omitempty"`

	// Result is the downstream's result (completed, already_completed); see DecodeResult.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference of the result.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason is why the operation failed (failed, already_failed, downstream_refused).
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a failure is known (such as downstream_refused, not_executed).
	FailureKind string `json:"failure_kind,omitempty"`
	// ResolvedBy names the operator who decided the outcome, if one did.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// ActingClient names the OAuth client whose confirm claimed the
	// operation (who acted for the subject), when its token named one.
	ActingClient string `json:"acting_client,omitempty"`
	// State is an operation's state as the truth names it (IN_FLIGHT,
	// DONE, FAILED, NEEDS_REVIEW) in an operator's answer about it (ops:
	// resolved, not_awaiting_review).
	State string `json:"state,omitempty"`
	// Decision is an operator's decision about the operation (ops:
	// resolved: this one; already_resolved: the first one, which stands).
	Decision *Decision `json:"decision,omitempty"`
	// Receipt is the gateway's signed receipt of the outcome (completed,
	// failed, their replays, a terminal Status): a compact JWS; see
	// Answer.VerifyReceipt.
	Receipt string `json:"receipt,omitempty"`

	// PollWith names the status tool (in_progress, needs_manual_review).
	PollWith string `json:"poll_with,omitempty"`
	// DownstreamState is, while in_progress, the business state the
	// downstream reports (such as a payout's "pending"): accepted, not done.
	DownstreamState string `json:"downstream_state,omitempty"`
	// PollAfterMS is how long to wait before asking the status again.
	PollAfterMS int64 `json:"poll_after_ms,omitempty"`
	// RetryAfterMS is how long to wait before sending the same request again
	// (temporarily_unavailable, rate_limited).
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// Problems are the fields that failed (invalid_params, downstream_refused).
	Problems []Problem `json:"errors,omitempty"`

	// Raw is the answer's body as received.
	Raw json.RawMessage `json:"-"`
}

// Limit is an answer's spend budget that an amount does not fit. Money is
// a decimal string in the currency's scale.
type Limit struct {
	// Name is the budget's name in the gateway's limits file.
	Name string `json:"name"`
	// Window is per_operation, daily or monthly.
	Window string `json:"window"`
	// Currency is the amount's currency.
	Currency string `json:"currency"`
	// Max is the window's maximum.
	Max string `json:"max"`
	// Used is what the window holds.
	Used string `json:"used"`
	// Left is what still fits.
	Left string `json:"left"`
	// ResetsAt is when enough frees for the amount to fit; nil when it
	// never can.
	ResetsAt *time.Time `json:"resets_at"`
}

// Approval is an answer's approval: the link the user opens themselves
// (an agent never opens it) and why.
type Approval struct {
	// Required is true when a person must approve.
	Required bool `json:"required"`
	// Reasons are the policy's reason codes (amount_above_threshold, new_payee, ...).
	Reasons []string `json:"reasons"`
	// URL is the approval page for the user.
	URL string `json:"url,omitempty"`
	// ExpiresAt is when the approval and the confirm must happen by.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// State is PENDING, APPROVED or DECLINED once something is recorded.
	State string `json:"state,omitempty"`
	// Needed is how many distinct people must approve (1: the subject).
	Needed int `json:"needed"`
	// Given is how many have approved so far.
	Given int `json:"given"`
	// ApprovedBy names who has approved so far.
	ApprovedBy []string `json:"approved_by,omitempty"`
	// Role is the role the approvers hold (empty: the subject approves).
	Role string `json:"role,omitempty"`
}

// PollAfter is PollAfterMS as a duration.
func (a *Answer) PollAfter() time.Duration { return time.Duration(a.PollAfterMS) * time.Millisecond }

// RetryAfter is RetryAfterMS as a duration.
func (a *Answer) RetryAfter() time.Duration { return time.Duration(a.RetryAfterMS) * time.Millisecond }

// DecodeResult decodes Result into v (use Decimal for money fields).
func (a *Answer) DecodeResult(v any) error {
	if len(a.Result) == 0 {
		return fmt.Errorf("decode result: %s answer has no result", a.Status)
	}
	if err := json.Unmarshal(a.Result, v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// PreviewDetail is the preview of what a confirm will execute.
type PreviewDetail struct {
	// Scope is the action.
	Scope string `json:"scope"`
	// Params are the bound params after the catalog's normalizers.
	Params Fields `json:"params"`
	// Free are the params passed on but not bound by the fingerprint.
	Free Fields `json:"free"`
	// Quote is the downstream's quote, when the action asks for one.
	Quote Fields `json:"quote,omitempty"`
}

// DecodePreview decodes Preview.
func (a *Answer) DecodePreview() (PreviewDetail, error) {
	var d PreviewDetail
	if len(a.Preview) == 0 {
		return d, fmt.Errorf("decode preview: %s answer has no preview", a.Status)
	}
	if err := json.Unmarshal(a.Preview, &d); err != nil {
		return d, fmt.Errorf("decode preview: %w", err)
	}
	return d, nil
}

// Fields is a JSON object whose members are decoded on demand.
type Fields map[string]json.RawMessage

// String returns the string member name ("" and false when absent or not a string).
func (f Fields) String(name string) (string, bool) {
	var s string
	if raw, ok := f[name]; !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Decimal returns the decimal member name, given as a JSON string or number
// ("" and false when absent or not a decimal).
func (f Fields) Decimal(name string) (Decimal, bool) {
	var d Decimal
	if raw, ok := f[name]; !ok || json.Unmarshal(raw, &d) != nil {
		return "", false
	}
	return d, true
}

// Decimal is an exact decimal number kept as its text, such as "12.5". It
// decodes from a JSON string or a JSON number (never through float64) and
// encodes as a JSON string, as the gateway does.
type Decimal string

// decimalPattern is a plain or exponent decimal literal.
var decimalPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// UnmarshalJSON accepts "12.50" and 12.50 alike.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	text := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return fmt.Errorf("decode decimal: %w", err)
		}
	}
	if !decimalPattern.MatchString(text) {
		return fmt.Errorf("decode decimal: %q is not a decimal number", text)
	}
	*d = Decimal(text)
	return nil
}

// MarshalJSON writes the decimal as a JSON string.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if !decimalPattern.MatchString(string(d)) {
		return nil, fmt.Errorf("encode decimal: %q is not a decimal number", string(d))
	}
	return json.Marshal(string(d))
}

// String returns the decimal's text.
func (d Decimal) String() string { return string(d) }
