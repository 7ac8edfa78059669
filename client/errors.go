package client

import (
	"errors"
	"fmt"
	"time"
)

// The classes of refusal. An *Error matches exactly one of them with
// errors.Is; a transport failure that outlived the retries matches
// ErrUnreachable.
var (
	// ErrTemporarilyUnavailable means the gateway answered
	// temporarily_unavailable on every attempt; nothing was consumed, the
	// same request may be sent again later.
	ErrTemporarilyUnavailable = errors.New("oncegate: temporarily unavailable")
	// ErrUnreachable means the gateway could not be reached, or its answer
	// was lost, on every attempt. For a confirm the operation may have
	// started: send the same confirm again or ask Status; never preview anew.
	ErrUnreachable = errors.New("oncegate: gateway unreachable")
	// ErrInvalidParams means the params fail the action's rules; Error.Problems names the fields.
	ErrInvalidParams = errors.New("oncegate: invalid params")
	// ErrFingerprintExpired means the fingerprint was first confirmed at or after its expiry: preview again.
	ErrFingerprintExpired = errors.New("oncegate: fingerprint expired")
	// ErrSecurity means the confirm does not match its fingerprint (params,
	// subject or scope), or the fingerprint is not a valid one. The gateway
	// records it as a security event; do not retry, preview again only on
	// the user's request.
	ErrSecurity = errors.New("oncegate: fingerprint does not match the request")
	// ErrUnauthenticated means the bearer token is missing or unknown.
	ErrUnauthenticated = errors.New("oncegate: unauthenticated")
	// ErrRepeatUnacknowledged means the preview found an identical recent
	// operation (Error.RecentOperation) and the confirm did not acknowledge
	// it; nothing ran. Confirm with AcknowledgeRepeatOf only if the user asked
	// to do it again.
	ErrRepeatUnacknowledged = errors.New("oncegate: repeat of a recent operation not acknowledged")
	// ErrDownstreamRefused means the downstream refused the preview
	// definitively; change the params, do not resend.
	ErrDownstreamRefused = errors.New("oncegate: downstream refused")
	// ErrUnknownAction means the gateway has no such scope.
	ErrUnknownAction = errors.New("oncegate: unknown action")
	// ErrUnknownOperation means the caller has no operation with that id.
	ErrUnknownOperation = errors.New("oncegate: unknown operation")
	// ErrNeedsManualReview means Wait stopped because the outcome cannot be
	// determined automatically: a person decides; ask Status later.
	ErrNeedsManualReview = errors.New("oncegate: operation needs manual review")
	// ErrBadRequest means the gateway refused the request itself (route,
	// method, body shape, size or permission): a bug of the caller.
	ErrBadRequest = errors.New("oncegate: request refused")
	// ErrInternal means the gateway failed unexpectedly; Error.TraceID is for its operators.
	ErrInternal = errors.New("oncegate: gateway internal error")
	// ErrApprovalRequired means the action's policy asks the user to approve
	// the operation with their passkey and no approval is recorded yet;
	// nothing was consumed. Give the user the answer's approval.url (never
	// open it yourself) and confirm with the same fingerprint once they
	// approved.
	ErrApprovalRequired = errors.New("oncegate: approval required")
	// ErrApprovalDeclined means the user declined the operation with their
	// passkey: its fingerprint can never be confirmed.
	ErrApprovalDeclined = errors.New("oncegate: approval declined")
	// ErrLimitExceeded means the amount does not fit one of the subject's
	// spend budgets (Answer.Limit names it, what is left and when it frees);
	// nothing was claimed. Sending the same confirm again does not help
	// until the window frees or an operator resets it.
	ErrLimitExceeded = errors.New("oncegate: limit exceeded")
	// ErrRateLimited means the subject sent too many previews or confirms;
	// nothing was done. The client waits the answer's Retry-After and sends
	// the same request again, a bounded number of times.
	ErrRateLimited = errors.New("oncegate: rate limited")
	// ErrAlreadyResolved means an operator's decision was refused because
	// another decision about the operation was first (Error.Decision names
	// it; it stands).
	ErrAlreadyResolved = errors.New("oncegate: already resolved")
	// ErrNotAwaitingReview means an operator's decision was refused because
	// the operation does not wait for one (Error.State is its state).
	ErrNotAwaitingReview = errors.New("oncegate: operation not awaiting review")
	// ErrInvalidResolution means an operator's decision or list filter is
	// incomplete or inconsistent; Error.Problems names each problem.
	ErrInvalidResolution = errors.New("oncegate: invalid resolution")
	// ErrUnknownPasskey means there is no passkey of that id.
	ErrUnknownPasskey = errors.New("oncegate: unknown passkey")
	// ErrUnexpectedAnswer means the answer is not an oncegate answer (no or
	// an unknown status).
	ErrUnexpectedAnswer = errors.New("oncegate: unexpected answer")
)

// Error is a gateway answer that refuses the call. It matches its class with
// errors.Is (see the Err* variables) and carries the answer's details.
type Error struct {
	// Answer is the refusal as the gateway sent it (Answer.Raw: its body).
	Answer
	// Method is the refused request's HTTP method.
	Method string
	// Path is the refused request's path, with its query.
	Path string
	// class is the sentinel it matches.
	class error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Status == "" {
		return fmt.Sprintf("%v: HTTP %d without an oncegate answer: %.200s", e.class, e.HTTPCode, e.Raw)
	}
	msg := fmt.Sprintf("%v: %s (HTTP %d", e.class, e.Status, e.HTTPCode)
	if e.TraceID != "" {
		msg += ", trace_id " + e.TraceID
	}
	msg += ")"
	if e.Meaning != "" {
		msg += ": " + e.Meaning
	}
	for _, p := range e.Problems {
		msg += "; " + p.String()
	}
	return msg
}

// Is matches the error's class.
func (e *Error) Is(target error) bool { return target == e.class }

// Unwrap returns the error's class.
func (e *Error) Unwrap() error { return e.class }

// Problem is one entry of the errors[] of invalid_params or downstream_refused.
type Problem struct {
	// Field is the param's name (or a path inside it); empty for the whole body.
	Field string `json:"field"`
	// Problem says what is wrong and how to fix it.
	Problem string `json:"problem"`
}

// String formats the problem as "field: problem".
func (p Problem) String() string {
	if p.Field == "" {
		return p.Problem
	}
	return p.Field + ": " + p.Problem
}

// RecentOperation is the identical recent operation the amnesia guard found.
type RecentOperation struct {
	// OperationID is that operation's id; confirm with AcknowledgeRepeatOf(OperationID) to do it again.
	OperationID string `json:"operation_id"`
	// State is its agent-facing state (completed, failed, in_progress, needs_manual_review).
	State Status `json:"state"`
	// ResultRef is its business reference, when it completed.
	ResultRef string `json:"result_ref,omitempty"`
	// CompletedAt is when it finished, when it did.
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Reason is why it failed, when it did.
	Reason string `json:"reason,omitempty"`
}

// errorOf turns a decoded refusal of method path into an *Error.
func errorOf(a Answer, method, path string) error {
	class := ClassOf(a.Status)
	if class == nil {
		class = ErrUnexpectedAnswer
	}
	return &Error{Answer: a, Method: method, Path: path, class: class}
}
