package client

import "net/http"

// Status is the status of a gateway answer (CONTRACT §4).
type Status string

// The statuses an agent-facing answer can carry. They mirror the gateway's
// own (api.Status*); a test keeps the two in step.
const (
	// StatusPreviewReady means preview succeeded: fingerprint, expires_at, preview.
	StatusPreviewReady Status = "preview_ready"
	// StatusCompleted means this call executed the operation and it finished.
	StatusCompleted Status = "completed"
	// StatusAlreadyCompleted means a replay of a finished operation: the first result itself.
	StatusAlreadyCompleted Status = "already_completed"
	// StatusFailed means a definite failure; nothing was executed downstream.
	StatusFailed Status = "failed"
	// StatusAlreadyFailed means a replay of a definite failure.
	StatusAlreadyFailed Status = "already_failed"
	// StatusInProgress means started; the outcome is not known yet.
	StatusInProgress Status = "in_progress"
	// StatusNeedsManualReview means the outcome cannot be determined automatically; a person decides.
	StatusNeedsManualReview Status = "needs_manual_review"
	// StatusParamMismatch means the bound params differ from the fingerprint's (a security event).
	StatusParamMismatch Status = "param_mismatch"
	// StatusSubjectMismatch means the fingerprint was issued to another subject (a security event).
	StatusSubjectMismatch Status = "subject_mismatch"
	// StatusScopeMismatch means the fingerprint was issued for another action.
	StatusScopeMismatch Status = "scope_mismatch"
	// StatusFingerprintExpired means first consumption at or after exp: preview again.
	StatusFingerprintExpired Status = "fingerprint_expired"
	// StatusFingerprintInvalid means not a fingerprint, or a bad signature.
	StatusFingerprintInvalid Status = "fingerprint_invalid"
	// StatusInvalidParams means params fail the catalog's rules (Error.Problems lists them).
	StatusInvalidParams Status = "invalid_params"
	// StatusUnauthenticated means no or unknown bearer token.
	StatusUnauthenticated Status = "unauthenticated"
	// StatusUnknownAction means no such scope.
	StatusUnknownAction Status = "unknown_action"
	// StatusRepeatUnacknowledged means the confirm did not acknowledge the
	// identical recent operation the preview named (Error.RecentOperation).
	StatusRepeatUnacknowledged Status = "repeat_unacknowledged"
	// StatusTemporarilyUnavailable means a store, the workflow engine or the
	// quote could not be reached; nothing was consumed; the same request may be sent again.
	StatusTemporarilyUnavailable Status = "temporarily_unavailable"
	// StatusDownstreamRefused means the downstream refused the preview definitively: change the params.
	StatusDownstreamRefused Status = "downstream_refused"
	// StatusUnknownOperation means no such operation for the caller.
	StatusUnknownOperation Status = "unknown_operation"
	// StatusForbidden means the token may not use the route.
	StatusForbidden Status = "forbidden"
	// StatusNotFound means no such route.
	StatusNotFound Status = "not_found"
	// StatusMethodNotAllowed means the route does not accept the method.
	StatusMethodNotAllowed Status = "method_not_allowed"
	// StatusMalformedRequest means the body is not the endpoint's JSON.
	StatusMalformedRequest Status = "malformed_request"
	// StatusRequestTooLarge means the body exceeds the gateway's limit.
	StatusRequestTooLarge Status = "request_too_large"
	// StatusInternalError means an unexpected error in the gateway; report the trace_id.
	StatusInternalError Status = "internal_error"
	// StatusApprovalRequired means the user must approve the operation with
	// their passkey first (Answer.Approval has the link); nothing consumed.
	StatusApprovalRequired Status = "approval_required"
	// StatusApprovalDeclined means the user declined the operation with their passkey.
	StatusApprovalDeclined Status = "approval_declined"
)

// statusInfo is what the client knows of a status: its HTTP code and the
// class of error it is when it is a refusal (nil for an operation state).
type statusInfo struct {
	code  int
	class error
}

// statuses is the client's one table of statuses.
var statuses = map[Status]statusInfo{
	StatusPreviewReady:           {http.StatusOK, nil},
	StatusCompleted:              {http.StatusOK, nil},
	StatusAlreadyCompleted:       {http.StatusOK, nil},
	StatusFailed:                 {http.StatusOK, nil},
	StatusAlreadyFailed:          {http.StatusOK, nil},
	StatusInProgress:             {http.StatusAccepted, nil},
	StatusNeedsManualReview:      {http.StatusAccepted, nil},
	StatusParamMismatch:          {http.StatusUnprocessableEntity, ErrSecurity},
	StatusSubjectMismatch:        {http.StatusForbidden, ErrSecurity},
	StatusScopeMismatch:          {http.StatusForbidden, ErrSecurity},
	StatusFingerprintExpired:     {http.StatusGone, ErrFingerprintExpired},
	StatusFingerprintInvalid:     {http.StatusBadRequest, ErrSecurity},
	StatusInvalidParams:          {http.StatusBadRequest, ErrInvalidParams},
	StatusUnauthenticated:        {http.StatusUnauthorized, ErrUnauthenticated},
	StatusUnknownAction:          {http.StatusNotFound, ErrUnknownAction},
	StatusRepeatUnacknowledged:   {http.StatusConflict, ErrRepeatUnacknowledged},
	StatusTemporarilyUnavailable: {http.StatusServiceUnavailable, ErrTemporarilyUnavailable},
	StatusDownstreamRefused:      {http.StatusUnprocessableEntity, ErrDownstreamRefused},
	StatusUnknownOperation:       {http.StatusNotFound, ErrUnknownOperation},
	StatusForbidden:              {http.StatusForbidden, ErrBadRequest},
	StatusNotFound:               {http.StatusNotFound, ErrBadRequest},
	StatusMethodNotAllowed:       {http.StatusMethodNotAllowed, ErrBadRequest},
	StatusMalformedRequest:       {http.StatusBadRequest, ErrBadRequest},
	StatusRequestTooLarge:        {http.StatusRequestEntityTooLarge, ErrBadRequest},
	StatusInternalError:          {http.StatusInternalServerError, ErrInternal},
	StatusApprovalRequired:       {http.StatusPreconditionRequired, ErrApprovalRequired},
	StatusApprovalDeclined:       {http.StatusForbidden, ErrApprovalDeclined},
}

// Statuses returns every status the client knows, each with the HTTP code
// the gateway answers it with.
func Statuses() map[Status]int {
	out := make(map[Status]int, len(statuses))
	for s, info := range statuses {
		out[s] = info.code
	}
	return out
}

// Known reports whether s is a status of the gateway's agent-facing API.
func (s Status) Known() bool {
	_, ok := statuses[s]
	return ok
}

// Terminal reports whether s is a final state of an operation: completed or
// failed, first or replayed.
func (s Status) Terminal() bool {
	return s.Succeeded() || s.Failed()
}

// Succeeded reports whether s is completed or already_completed.
func (s Status) Succeeded() bool {
	return s == StatusCompleted || s == StatusAlreadyCompleted
}

// Failed reports whether s is failed or already_failed: nothing was executed.
func (s Status) Failed() bool {
	return s == StatusFailed || s == StatusAlreadyFailed
}

// Replayed reports whether s replays an earlier outcome (already_completed,
// already_failed).
func (s Status) Replayed() bool {
	return s == StatusAlreadyCompleted || s == StatusAlreadyFailed
}

// Class returns the sentinel error a refusal with status s matches
// (ErrSecurity for param_mismatch, ...), ErrNeedsManualReview for
// needs_manual_review, ErrUnexpectedAnswer for an unknown status, and nil
// for the other operation states.
func (s Status) Class() error {
	if s == StatusNeedsManualReview {
		return ErrNeedsManualReview
	}
	info, ok := statuses[s]
	if !ok {
		return ErrUnexpectedAnswer
	}
	return info.class
}
