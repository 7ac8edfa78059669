package api

import (
	"maps"
	"net/http"
	"slices"

	"github.com/oncegate/oncegate/api/mcpserver"
)

// Status is the status of one of the gateway's answers: the first word an
// agent reads. Every Status is a key of Statuses.
type Status string

// Statuses of the gateway's answers (CONTRACT §4 and the extra ones).
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
	// StatusScopeMismatch means the fingerprint was issued for another action (a security event).
	StatusScopeMismatch Status = "scope_mismatch"
	// StatusFingerprintExpired means first consumption at or after exp.
	StatusFingerprintExpired Status = "fingerprint_expired"
	// StatusFingerprintInvalid means not a fingerprint, or a bad signature.
	StatusFingerprintInvalid Status = "fingerprint_invalid"
	// StatusInvalidParams means params fail the catalog's rules (errors lists them).
	StatusInvalidParams Status = "invalid_params"
	// StatusUnauthenticated means no or unknown bearer token.
	StatusUnauthenticated Status = "unauthenticated"
	// StatusUnknownAction means no such scope.
	StatusUnknownAction Status = "unknown_action"
	// StatusRepeatUnacknowledged means the amnesia guard's recent operation was not acknowledged.
	StatusRepeatUnacknowledged Status = "repeat_unacknowledged"
	// StatusTemporarilyUnavailable means a store or service cannot be reached; nothing was consumed.
	StatusTemporarilyUnavailable Status = "temporarily_unavailable"
	// StatusDownstreamRefused means the downstream's quote endpoint refused the params definitively.
	StatusDownstreamRefused Status = "downstream_refused"
	// StatusUnknownOperation means no such operation for the caller.
	StatusUnknownOperation Status = "unknown_operation"
	// StatusForbidden means an ops route called without the operator role.
	StatusForbidden Status = "forbidden"
	// StatusNotFound means no such route.
	StatusNotFound Status = "not_found"
	// StatusMethodNotAllowed means the route does not accept the method.
	StatusMethodNotAllowed Status = "method_not_allowed"
	// StatusMalformedRequest means the body is not the endpoint's JSON.
	StatusMalformedRequest Status = "malformed_request"
	// StatusRequestTooLarge means the body exceeds BodyLimit.
	StatusRequestTooLarge Status = "request_too_large"
	// StatusInternalError means an unexpected error; the trace_id is to be reported.
	StatusInternalError Status = "internal_error"
	// StatusNotAwaitingReview means a resolve for an operation that is not NEEDS_REVIEW.
	StatusNotAwaitingReview Status = "not_awaiting_review"
	// StatusInvalidResolution means a resolve body or an ops list filter that is incomplete or inconsistent.
	StatusInvalidResolution Status = "invalid_resolution"
	// StatusResolutionSent means the decision was accepted but its outcome
	// was not recorded within the wait.
	StatusResolutionSent Status = "resolution_sent"
	// StatusResolved means the decision was the first and the operation is
	// now in its final state.
	StatusResolved Status = "resolved"
	// StatusAlreadyResolved means another decision was made first; it is named.
	StatusAlreadyResolved Status = "already_resolved"
	// StatusOperationsListed means the ops list.
	StatusOperationsListed Status = "operations_listed"
	// StatusOperationFound means the ops view of one operation.
	StatusOperationFound Status = "operation_found"
	// StatusInvalidRequest means GET /v1/tools with an unknown format (answered by package tools).
	StatusInvalidRequest Status = "invalid_request"
	// StatusWebhookAccepted means a downstream's signed webhook event was verified and delivered.
	StatusWebhookAccepted Status = "webhook_accepted"
	// StatusWebhookRefused means a webhook event was refused (unsigned, bad signature, stale, unknown operation, replayed).
	StatusWebhookRefused Status = "webhook_refused"
	// StatusAlive means liveness.
	StatusAlive Status = "alive"
	// StatusReady means readiness: the truth database answers.
	StatusReady Status = "ready"
	// StatusNotReady means the truth database cannot be reached.
	StatusNotReady Status = "not_ready"
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
	// Polls marks an answer that tells the agent to poll: it carries
	// poll_with and poll_after_ms.
	Polls bool
	// RetryAfter marks an answer that tells the agent when it may send the
	// same request again: it carries retry_after_ms.
	RetryAfter bool
}

// Statuses maps every status the gateway answers to its code, retryability
// and documentation. The README's status table is generated from it
// (TestREADMEStatusTable) and every status has texts in every language.
var Statuses = map[Status]StatusInfo{
	StatusPreviewReady:           {http.StatusOK, false, "`fingerprint`, `expires_at`, `preview`, `recent_operation` (amnesia guard)", "preview succeeded; nothing was executed or written", false, false},
	StatusCompleted:              {http.StatusOK, false, "`result`, `result_ref`", "this call executed the operation and it finished", false, false},
	StatusAlreadyCompleted:       {http.StatusOK, false, "`result`, `result_ref`; header `Idempotent-Replayed: true`", "a replay of a finished operation: the first result itself", false, false},
	StatusFailed:                 {http.StatusOK, false, "`reason`", "a definite failure; nothing was executed downstream", false, false},
	StatusAlreadyFailed:          {http.StatusOK, false, "`reason`; header `Idempotent-Replayed: true`", "a replay of a definite failure", false, false},
	StatusInProgress:             {http.StatusAccepted, false, "`poll_with`, `poll_after_ms`", "started, the outcome is not known yet: poll `get_operation_status`", true, false},
	StatusNeedsManualReview:      {http.StatusAccepted, false, "`poll_with`, `poll_after_ms`", "the outcome cannot be determined automatically; a person decides", true, false},
	StatusParamMismatch:          {http.StatusUnprocessableEntity, false, "", "the bound params differ from the fingerprint's (a security event)", false, false},
	StatusSubjectMismatch:        {http.StatusForbidden, false, "", "the fingerprint was issued to another subject (a security event)", false, false},
	StatusScopeMismatch:          {http.StatusForbidden, false, "", "the fingerprint was issued for another action (a security event)", false, false},
	StatusFingerprintExpired:     {http.StatusGone, false, "", "first consumption at or after the fingerprint's `exp`: preview again", false, false},
	StatusFingerprintInvalid:     {http.StatusBadRequest, false, "", "not a fingerprint, or a bad signature (a security event)", false, false},
	StatusInvalidParams:          {http.StatusBadRequest, false, "`errors`", "the params fail the catalog's rules: fix them, then preview again", false, false},
	StatusUnauthenticated:        {http.StatusUnauthorized, false, "header `WWW-Authenticate`", "no or unknown bearer token: do not retry with the same credentials", false, false},
	StatusUnknownAction:          {http.StatusNotFound, false, "", "no such action (scope)", false, false},
	StatusRepeatUnacknowledged:   {http.StatusConflict, false, "`recent_operation`", "an identical operation ran recently and the confirm did not acknowledge it: ask the user", false, false},
	StatusTemporarilyUnavailable: {http.StatusServiceUnavailable, true, "`retry_after_ms`", "the truth store, the workflow engine or (at preview) the quote endpoint cannot answer now; nothing was consumed: the same request may be sent again a bounded number of times", false, true},
	StatusDownstreamRefused:      {http.StatusUnprocessableEntity, false, "`reason`, `errors` when the downstream names fields", "at preview, the downstream's quote endpoint refused the params definitively (a 4xx other than 408/429): change the params, do not resend", false, false},
	StatusUnknownOperation:       {http.StatusNotFound, false, "", "no such operation for the caller", false, false},
	StatusForbidden:              {http.StatusForbidden, false, "", "an ops endpoint called without the operator role", false, false},
	StatusNotFound:               {http.StatusNotFound, false, "", "no such endpoint", false, false},
	StatusMethodNotAllowed:       {http.StatusMethodNotAllowed, false, "header `Allow`", "the endpoint does not accept the method", false, false},
	StatusMalformedRequest:       {http.StatusBadRequest, false, "", "the body is not the endpoint's JSON (syntax, unknown member, missing `params`)", false, false},
	StatusRequestTooLarge:        {http.StatusRequestEntityTooLarge, false, "", "the body exceeds 64 KiB", false, false},
	StatusInternalError:          {http.StatusInternalServerError, false, "", "an unexpected error; report the `trace_id`", false, false},
	StatusNotAwaitingReview:      {http.StatusConflict, false, "`state`", "ops: a resolve for an operation that is not waiting for review", false, false},
	StatusInvalidResolution:      {http.StatusBadRequest, false, "`errors`", "ops: a resolve body, or a list filter, that is incomplete or inconsistent", false, false},
	StatusResolutionSent:         {http.StatusAccepted, false, "`outcome`", "ops: the decision was accepted by the operation's workflow but its outcome was not recorded within the wait", false, false},
	StatusResolved:               {http.StatusOK, false, "`state`, `decision`, `result`/`reason`", "ops: this decision was the first; the operation is now in its final state", false, false},
	StatusAlreadyResolved:        {http.StatusConflict, false, "`decision` (who decided what and when)", "ops: another decision was made first; this one is refused", false, false},
	StatusOperationsListed:       {http.StatusOK, false, "`operations`, `count`", "ops: the list of operations", false, false},
	StatusOperationFound:         {http.StatusOK, false, "`operation`", "ops: one operation's full record", false, false},
	StatusInvalidRequest:         {http.StatusBadRequest, false, "", "`GET /v1/tools` with an unknown `format`", false, false},
	StatusWebhookAccepted:        {http.StatusOK, false, "", "`POST /v1/webhooks/{scope}`: a downstream's signed event was verified and delivered to the operation's workflow", false, false},
	StatusWebhookRefused:         {http.StatusBadRequest, false, "`reason`", "`POST /v1/webhooks/{scope}`: an unsigned, wrongly signed, stale, unknown or replayed event; nothing changed", false, false},
	StatusAlive:                  {http.StatusOK, false, "", "`GET /healthz`: the process runs", false, false},
	StatusReady:                  {http.StatusOK, false, "`postgres`, `redis`", "`GET /readyz`: the truth database answers", false, false},
	StatusNotReady:               {http.StatusServiceUnavailable, false, "`postgres`, `redis`", "`GET /readyz`: the truth database cannot be reached; probes check again on their own schedule", false, true},
}

// Message keys that render a status other than under its own name.
const (
	keyPreviewReadyRepeat = "preview_ready_repeat"
	keyInvalidFilter      = "invalid_filter"
	keyInProgressPending  = "in_progress_pending"
)

// altKeys lists, by status, the message keys other than its name that
// render it (reply.key).
var altKeys = map[Status][]string{
	StatusPreviewReady:           {keyPreviewReadyRepeat},
	StatusTemporarilyUnavailable: {keyQuoteUnavailable},
	StatusInvalidResolution:      {keyInvalidFilter},
	StatusInProgress:             {keyInProgressPending},
	StatusMalformedRequest:       {mcpserver.TransportMessageKey},
}

// messageKeys returns every message key that renders status.
func messageKeys(status Status) []string {
	return append([]string{string(status)}, altKeys[status]...)
}

// StatusNames returns every status of the registry, sorted.
func StatusNames() []Status {
	return slices.Sorted(maps.Keys(Statuses))
}

// HeaderReplayed marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"
