package api

import (
	"maps"
	"net/http"
	"slices"
)

// Statuses of the gateway's answers (CONTRACT §4 and the extra ones).
const (
	// StatusPreviewReady means preview succeeded: fingerprint, expires_at, preview.
	StatusPreviewReady = "preview_ready"
	// StatusCompleted means this call executed the operation and it finished.
	StatusCompleted = "completed"
	// StatusAlreadyCompleted means a replay of a finished operation: the first result itself.
	StatusAlreadyCompleted = "already_completed"
	// StatusFailed means a definite failure; nothing was executed downstream.
	StatusFailed = "failed"
	// StatusAlreadyFailed means a replay of a definite failure.
	StatusAlreadyFailed = "already_failed"
	// StatusInProgress means started; the outcome is not known yet.
	StatusInProgress = "in_progress"
	// StatusNeedsManualReview means the outcome cannot be determined automatically; a person decides.
	StatusNeedsManualReview = "needs_manual_review"
	// StatusParamMismatch means the bound params differ from the fingerprint's (a security event).
	StatusParamMismatch = "param_mismatch"
	// StatusSubjectMismatch means the fingerprint was issued to another subject (a security event).
	StatusSubjectMismatch = "subject_mismatch"
	// StatusScopeMismatch means the fingerprint was issued for another action (a security event).
	StatusScopeMismatch = "scope_mismatch"
	// StatusFingerprintExpired means first consumption at or after exp.
	StatusFingerprintExpired = "fingerprint_expired"
	// StatusFingerprintInvalid means not a fingerprint, or a bad signature.
	StatusFingerprintInvalid = "fingerprint_invalid"
	// StatusInvalidParams means params fail the catalog's rules (errors lists them).
	StatusInvalidParams = "invalid_params"
	// StatusUnauthenticated means no or unknown bearer token.
	StatusUnauthenticated = "unauthenticated"
	// StatusUnknownAction means no such scope.
	StatusUnknownAction = "unknown_action"
	// StatusRepeatUnacknowledged means the amnesia guard's recent operation was not acknowledged.
	StatusRepeatUnacknowledged = "repeat_unacknowledged"
	// StatusTemporarilyUnavailable means a store or service cannot be reached; nothing was consumed.
	StatusTemporarilyUnavailable = "temporarily_unavailable"
	// StatusDownstreamRefused means the downstream's quote endpoint refused the params definitively.
	StatusDownstreamRefused = "downstream_refused"
	// StatusUnknownOperation means no such operation for the caller.
	StatusUnknownOperation = "unknown_operation"
	// StatusForbidden means an ops route called without the operator role.
	StatusForbidden = "forbidden"
	// StatusNotFound means no such route.
	StatusNotFound = "not_found"
	// StatusMethodNotAllowed means the route does not accept the method.
	StatusMethodNotAllowed = "method_not_allowed"
	// StatusMalformedRequest means the body is not the endpoint's JSON.
	StatusMalformedRequest = "malformed_request"
	// StatusRequestTooLarge means the body exceeds BodyLimit.
	StatusRequestTooLarge = "request_too_large"
	// StatusInternalError means an unexpected error; the trace_id is to be reported.
	StatusInternalError = "internal_error"
	// StatusNotAwaitingReview means a resolve for an operation that is not NEEDS_REVIEW.
	StatusNotAwaitingReview = "not_awaiting_review"
	// StatusInvalidResolution means a resolve body or an ops list filter that is incomplete or inconsistent.
	StatusInvalidResolution = "invalid_resolution"
	// StatusResolutionSent means the decision was accepted but its outcome
	// was not recorded within the wait.
	StatusResolutionSent = "resolution_sent"
	// StatusResolved means the decision was the first and the operation is
	// now in its final state.
	StatusResolved = "resolved"
	// StatusAlreadyResolved means another decision was made first; it is named.
	StatusAlreadyResolved = "already_resolved"
	// StatusOperationsListed means the ops list.
	StatusOperationsListed = "operations_listed"
	// StatusOperationFound means the ops view of one operation.
	StatusOperationFound = "operation_found"
	// StatusInvalidRequest means GET /v1/tools with an unknown format (answered by package tools).
	StatusInvalidRequest = "invalid_request"
	// StatusWebhookAccepted means a downstream's signed webhook event was verified and delivered.
	StatusWebhookAccepted = "webhook_accepted"
	// StatusWebhookRefused means a webhook event was refused (unsigned, bad signature, stale, unknown operation, replayed).
	StatusWebhookRefused = "webhook_refused"
	// StatusAlive means liveness.
	StatusAlive = "alive"
	// StatusReady means readiness: the truth database answers.
	StatusReady = "ready"
	// StatusNotReady means the truth database cannot be reached.
	StatusNotReady = "not_ready"
)

// StatusInfo is what the registry knows about a status.
type StatusInfo struct {
	// Code is the HTTP status code.
	Code int
	// Retryable tells the model whether sending exactly the same request
	// again can succeed. CONTRACT §4: true only for temporarily_unavailable.
	Retryable bool
	// Carries lists the body members beyond the common ones, for the README.
	Carries string
	// When says when the gateway answers it, for the README.
	When string
}

// Statuses maps every status the gateway answers to its code, retryability
// and documentation. The README's status table is generated from it
// (TestREADMEStatusTable) and every status has texts in every language.
var Statuses = map[string]StatusInfo{
	StatusPreviewReady:           {http.StatusOK, false, "`fingerprint`, `expires_at`, `preview`, `recent_operation` (amnesia guard)", "preview succeeded; nothing was executed or written"},
	StatusCompleted:              {http.StatusOK, false, "`result`, `result_ref`", "this call executed the operation and it finished"},
	StatusAlreadyCompleted:       {http.StatusOK, false, "`result`, `result_ref`; header `Idempotent-Replayed: true`", "a replay of a finished operation: the first result itself"},
	StatusFailed:                 {http.StatusOK, false, "`reason`", "a definite failure; nothing was executed downstream"},
	StatusAlreadyFailed:          {http.StatusOK, false, "`reason`; header `Idempotent-Replayed: true`", "a replay of a definite failure"},
	StatusInProgress:             {http.StatusAccepted, false, "`poll_with`, `poll_after_ms`", "started, the outcome is not known yet: poll `get_operation_status`"},
	StatusNeedsManualReview:      {http.StatusAccepted, false, "`poll_with`, `poll_after_ms`", "the outcome cannot be determined automatically; a person decides"},
	StatusParamMismatch:          {http.StatusUnprocessableEntity, false, "", "the bound params differ from the fingerprint's (a security event)"},
	StatusSubjectMismatch:        {http.StatusForbidden, false, "", "the fingerprint was issued to another subject (a security event)"},
	StatusScopeMismatch:          {http.StatusForbidden, false, "", "the fingerprint was issued for another action (a security event)"},
	StatusFingerprintExpired:     {http.StatusGone, false, "", "first consumption at or after the fingerprint's `exp`: preview again"},
	StatusFingerprintInvalid:     {http.StatusBadRequest, false, "", "not a fingerprint, or a bad signature (a security event)"},
	StatusInvalidParams:          {http.StatusBadRequest, false, "`errors`", "the params fail the catalog's rules: fix them, then preview again"},
	StatusUnauthenticated:        {http.StatusUnauthorized, false, "header `WWW-Authenticate`", "no or unknown bearer token: do not retry with the same credentials"},
	StatusUnknownAction:          {http.StatusNotFound, false, "", "no such action (scope)"},
	StatusRepeatUnacknowledged:   {http.StatusConflict, false, "`recent_operation`", "an identical operation ran recently and the confirm did not acknowledge it: ask the user"},
	StatusTemporarilyUnavailable: {http.StatusServiceUnavailable, true, "`retry_after_ms`", "the truth store, the workflow engine or (at preview) the quote endpoint cannot answer now; nothing was consumed: the same request may be sent again a bounded number of times"},
	StatusDownstreamRefused:      {http.StatusUnprocessableEntity, false, "`reason`, `errors` when the downstream names fields", "at preview, the downstream's quote endpoint refused the params definitively (a 4xx other than 408/429): change the params, do not resend"},
	StatusUnknownOperation:       {http.StatusNotFound, false, "", "no such operation for the caller"},
	StatusForbidden:              {http.StatusForbidden, false, "", "an ops endpoint called without the operator role"},
	StatusNotFound:               {http.StatusNotFound, false, "", "no such endpoint"},
	StatusMethodNotAllowed:       {http.StatusMethodNotAllowed, false, "header `Allow`", "the endpoint does not accept the method"},
	StatusMalformedRequest:       {http.StatusBadRequest, false, "", "the body is not the endpoint's JSON (syntax, unknown member, missing `params`)"},
	StatusRequestTooLarge:        {http.StatusRequestEntityTooLarge, false, "", "the body exceeds 64 KiB"},
	StatusInternalError:          {http.StatusInternalServerError, false, "", "an unexpected error; report the `trace_id`"},
	StatusNotAwaitingReview:      {http.StatusConflict, false, "`state`", "ops: a resolve for an operation that is not waiting for review"},
	StatusInvalidResolution:      {http.StatusBadRequest, false, "`errors`", "ops: a resolve body, or a list filter, that is incomplete or inconsistent"},
	StatusResolutionSent:         {http.StatusAccepted, false, "`outcome`", "ops: the decision was accepted by the operation's workflow but its outcome was not recorded within the wait"},
	StatusResolved:               {http.StatusOK, false, "`state`, `decision`, `result`/`reason`", "ops: this decision was the first; the operation is now in its final state"},
	StatusAlreadyResolved:        {http.StatusConflict, false, "`decision` (who decided what and when)", "ops: another decision was made first; this one is refused"},
	StatusOperationsListed:       {http.StatusOK, false, "`operations`, `count`", "ops: the list of operations"},
	StatusOperationFound:         {http.StatusOK, false, "`operation`", "ops: one operation's full record"},
	StatusInvalidRequest:         {http.StatusBadRequest, false, "", "`GET /v1/tools` with an unknown `format`"},
	StatusWebhookAccepted:        {http.StatusOK, false, "", "`POST /v1/webhooks/{scope}`: a downstream's signed event was verified and delivered to the operation's workflow"},
	StatusWebhookRefused:         {http.StatusBadRequest, false, "`reason`", "`POST /v1/webhooks/{scope}`: an unsigned, wrongly signed, stale, unknown or replayed event; nothing changed"},
	StatusAlive:                  {http.StatusOK, false, "", "`GET /healthz`: the process runs"},
	StatusReady:                  {http.StatusOK, false, "`postgres`, `redis`", "`GET /readyz`: the truth database answers"},
	StatusNotReady:               {http.StatusServiceUnavailable, false, "`postgres`, `redis`", "`GET /readyz`: the truth database cannot be reached; probes check again on their own schedule"},
}

// Message keys that render a status other than under its own name.
const (
	keyPreviewReadyRepeat = "preview_ready_repeat"
	keyInvalidFilter      = "invalid_filter"
	keyInProgressPending  = "in_progress_pending"
)

// altKeys lists, by status, the message keys other than its name that
// render it (reply.key).
var altKeys = map[string][]string{
	StatusPreviewReady:           {keyPreviewReadyRepeat},
	StatusTemporarilyUnavailable: {keyQuoteUnavailable},
	StatusInvalidResolution:      {keyInvalidFilter},
	StatusInProgress:             {keyInProgressPending},
}

// messageKeys returns every message key that renders status.
func messageKeys(status string) []string {
	return append([]string{status}, altKeys[status]...)
}

// StatusNames returns every status of the registry, sorted.
func StatusNames() []string {
	return slices.Sorted(maps.Keys(Statuses))
}

// HeaderReplayed marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"
