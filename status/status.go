// Package status is the registry of the statuses the gateway answers: for
// each one its HTTP code, whether the same request may be sent again, who
// receives it, whether it is an outcome or a refusal, the body members it
// adds and when it is answered. The gateway (package api) renders every
// answer from it, the MCP server marks tool errors by it, the public client
// knows its statuses from it, and docs/reference.md's table and the OpenAPI enum
// are generated from it or checked against it; the texts an agent reads
// (api/messages) are keyed by its names. It imports nothing, so that any
// client may import it.
//
// Adding a status is one entry here (its name and its row, with its Class
// when an agent receives it as a refusal) and its texts in api/messages
// (en.yaml, zh.yaml); the public client derives its error from the Class,
// and the tests then ask for its row in docs/reference.md (go test ./api
// -run TestDocs -update) and the OpenAPI enum.
package status

import (
	"maps"
	"net/http"
	"slices"
)

// Status is the status of one of the gateway's answers: the first word an
// agent reads. Each is described once, by its entry in the registry.
type Status string

// The statuses. What each one means is its registry entry's When (the
// status table of docs/reference.md).
const (
	PreviewReady           Status = "preview_ready"
	Completed              Status = "completed"
	AlreadyCompleted       Status = "already_completed"
	Failed                 Status = "failed"
	AlreadyFailed          Status = "already_failed"
	InProgress             Status = "in_progress"
	NeedsManualReview      Status = "needs_manual_review"
	ParamMismatch          Status = "param_mismatch"
	SubjectMismatch        Status = "subject_mismatch"
	ScopeMismatch          Status = "scope_mismatch"
	FingerprintExpired     Status = "fingerprint_expired"
	FingerprintInvalid     Status = "fingerprint_invalid"
	InvalidParams          Status = "invalid_params"
	Unauthenticated        Status = "unauthenticated"
	UnknownAction          Status = "unknown_action"
	RepeatUnacknowledged   Status = "repeat_unacknowledged"
	TemporarilyUnavailable Status = "temporarily_unavailable"
	DownstreamRefused      Status = "downstream_refused"
	UnknownOperation       Status = "unknown_operation"
	Forbidden              Status = "forbidden"
	NotFound               Status = "not_found"
	MethodNotAllowed       Status = "method_not_allowed"
	MalformedRequest       Status = "malformed_request"
	RequestTooLarge        Status = "request_too_large"
	InternalError          Status = "internal_error"
	NotAwaitingReview      Status = "not_awaiting_review"
	InvalidResolution      Status = "invalid_resolution"
	ResolutionSent         Status = "resolution_sent"
	ResolutionPayload      Status = "resolution_payload"
	Resolved               Status = "resolved"
	AlreadyResolved        Status = "already_resolved"
	OperationsListed       Status = "operations_listed"
	OperationFound         Status = "operation_found"
	InvalidRequest         Status = "invalid_request"
	WebhookAccepted        Status = "webhook_accepted"
	WebhookRefused         Status = "webhook_refused"
	Alive                  Status = "alive"
	Ready                  Status = "ready"
	NotReady               Status = "not_ready"
	ApprovalRequired       Status = "approval_required"
	ApprovalDeclined       Status = "approval_declined"
	WebAuthnOptions        Status = "webauthn_options"
	ApprovalRecorded       Status = "approval_recorded"
	PasskeyEnrolled        Status = "passkey_enrolled"
	CeremonyRefused        Status = "ceremony_refused"
	PasskeyInvited         Status = "passkey_invited"
	PasskeysListed         Status = "passkeys_listed"
	PasskeyRevoked         Status = "passkey_revoked"
	ApprovalsListed        Status = "approvals_listed"
	UnknownPasskey         Status = "unknown_passkey"
	LimitExceeded          Status = "limit_exceeded"
	RateLimited            Status = "rate_limited"
	LimitsShown            Status = "limits_shown"
	LimitsReset            Status = "limits_reset"
	InsufficientScope      Status = "insufficient_scope"
)

// Audience is who receives an answer with a status.
type Audience string

const (
	// Agent is an agent (or the public client) calling preview, confirm
	// and the status query, or any route before it is routed (not_found,
	// unauthenticated, ...).
	Agent Audience = "agent"
	// Operator is a person or tool on the ops routes.
	Operator Audience = "operator"
	// Approver is a person on the approval or enrolment page, deciding with
	// a passkey.
	Approver Audience = "approver"
	// Probe is a health check (GET /healthz, /readyz).
	Probe Audience = "probe"
	// Downstream is a downstream posting a webhook event.
	Downstream Audience = "downstream"
	// ToolReader is a program reading the tool definitions (GET /v1/tools).
	ToolReader Audience = "tool_reader"
)

// Kind says whether an answer did what the call is for.
type Kind string

const (
	// Outcome means the call did what it is for, even when what it reports
	// is a definite failure of the operation (failed): an MCP tool result
	// that is not an error.
	Outcome Kind = "outcome"
	// Refusal means the call was refused; the body says why and what to
	// change: an MCP tool error.
	Refusal Kind = "refusal"
)

// Class is what a caller does about an answer that is not the outcome it
// asked for: the public client's error class (client.Err*, matched with
// errors.Is). Several statuses share one (the four security refusals, the
// five refusals of the request itself). A refusal the public client can
// receive (an agent's, an operator's, a tool reader's) names its class, and
// so does needs_manual_review; the other entries name none (the empty
// Class: the answer is not an error to the client).
type Class string

// The classes. Each is matched by one sentinel error of the client
// (ClassSecurity by client.ErrSecurity, ...).
const (
	// ClassSecurity: the confirm does not match its fingerprint, or the
	// fingerprint is not one (a security event).
	ClassSecurity Class = "security"
	// ClassFingerprintExpired: preview again.
	ClassFingerprintExpired Class = "fingerprint_expired"
	// ClassInvalidParams: the params fail the action's rules.
	ClassInvalidParams Class = "invalid_params"
	// ClassUnauthenticated: no or an unknown bearer token.
	ClassUnauthenticated Class = "unauthenticated"
	// ClassUnknownAction: no such action.
	ClassUnknownAction Class = "unknown_action"
	// ClassUnknownOperation: no such operation for the caller.
	ClassUnknownOperation Class = "unknown_operation"
	// ClassRepeatUnacknowledged: an identical recent operation was not
	// acknowledged.
	ClassRepeatUnacknowledged Class = "repeat_unacknowledged"
	// ClassTemporarilyUnavailable: nothing was consumed; the same request
	// may be sent again.
	ClassTemporarilyUnavailable Class = "temporarily_unavailable"
	// ClassDownstreamRefused: the downstream refused the params.
	ClassDownstreamRefused Class = "downstream_refused"
	// ClassBadRequest: the request itself was refused (route, method, body,
	// size, permission): a bug of the caller.
	ClassBadRequest Class = "bad_request"
	// ClassInternal: the gateway failed unexpectedly.
	ClassInternal Class = "internal"
	// ClassApprovalRequired: a person must approve first.
	ClassApprovalRequired Class = "approval_required"
	// ClassApprovalDeclined: a person declined the operation.
	ClassApprovalDeclined Class = "approval_declined"
	// ClassLimitExceeded: the amount does not fit a spend budget.
	ClassLimitExceeded Class = "limit_exceeded"
	// ClassRateLimited: too many calls; the same request may be sent after
	// the wait.
	ClassRateLimited Class = "rate_limited"
	// ClassManualReview: the outcome is not known; a person decides.
	ClassManualReview Class = "manual_review"
	// ClassAlreadyResolved: ops: another decision about the operation was
	// first; this one is refused.
	ClassAlreadyResolved Class = "already_resolved"
	// ClassNotAwaitingReview: ops: the operation is not waiting for a
	// decision.
	ClassNotAwaitingReview Class = "not_awaiting_review"
	// ClassInvalidResolution: ops: a decision or a list filter is
	// incomplete or inconsistent; its errors name each problem.
	ClassInvalidResolution Class = "invalid_resolution"
	// ClassUnknownPasskey: ops: no passkey of that id.
	ClassUnknownPasskey Class = "unknown_passkey"
)

// Info is what the registry knows about a status.
type Info struct {
	// Code is the HTTP status code.
	Code int
	// Retryable tells the caller whether sending exactly the same request
	// again can succeed: true only for temporarily_unavailable and
	// rate_limited (docs/contract.md §4, §7).
	Retryable bool
	// Audience is who receives it.
	Audience Audience
	// Kind is whether it is an outcome or a refusal.
	Kind Kind
	// Class is the public client's error class of the answer: set for a
	// refusal an agent, an operator or a tool reader receives and for
	// needs_manual_review, empty otherwise.
	Class Class
	// Carries lists the body members and headers beyond the common ones.
	Carries string
	// When says when the gateway answers it: the status's one description.
	When string
	// Polls marks an answer that tells the agent to poll: it carries
	// poll_with and poll_after_ms.
	Polls bool
	// RetryAfter marks an answer that tells the caller when it may ask
	// again: it carries retry_after_ms.
	RetryAfter bool
}

// Wait reports whether an answer asks the caller to come back (it polls, or
// tells when to retry): such an answer carries the header Retry-After, in
// whole seconds rounded up, equal to its body's wait (docs/contract.md §7).
func (i Info) Wait() bool { return i.Polls || i.RetryAfter }

// registry maps every status to what is known about it.
var registry = map[Status]Info{
	PreviewReady:           {Code: http.StatusOK, Audience: Agent, Kind: Outcome, Carries: "`fingerprint`, `expires_at`, `preview`, `recent_operation` (amnesia guard)", When: "preview succeeded; nothing was executed or written"},
	Completed:              {Code: http.StatusOK, Audience: Agent, Kind: Outcome, Carries: "`result`, `result_ref`, `receipt`", When: "this call executed the operation and it finished"},
	AlreadyCompleted:       {Code: http.StatusOK, Audience: Agent, Kind: Outcome, Carries: "`result`, `result_ref`, `receipt` (the first one); header `Idempotent-Replayed: true`", When: "a replay of a finished operation: the first result itself"},
	Failed:                 {Code: http.StatusOK, Audience: Agent, Kind: Outcome, Carries: "`reason`, `failure_kind`, `receipt`", When: "a definite failure; `failure_kind` says how it is known, and only `downstream_refused`, `not_executed` and `not_sent` prove that nothing was executed (`operator_decision`: a person decided)"},
	AlreadyFailed:          {Code: http.StatusOK, Audience: Agent, Kind: Outcome, Carries: "`reason`, `failure_kind`, `receipt` (the first one); header `Idempotent-Replayed: true`", When: "a replay of a definite failure"},
	InProgress:             {Code: http.StatusAccepted, Audience: Agent, Kind: Outcome, Carries: "`poll_with`, `poll_after_ms`; header `Retry-After`", When: "started, the outcome is not known yet: poll `get_operation_status`", Polls: true},
	NeedsManualReview:      {Code: http.StatusAccepted, Audience: Agent, Kind: Outcome, Class: ClassManualReview, Carries: "`poll_with`, `poll_after_ms`; header `Retry-After`", When: "the outcome cannot be determined automatically; a person decides", Polls: true},
	ParamMismatch:          {Code: http.StatusUnprocessableEntity, Audience: Agent, Kind: Refusal, Class: ClassSecurity, When: "the bound params differ from the fingerprint's (a security event)"},
	SubjectMismatch:        {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassSecurity, When: "the fingerprint was issued to another subject (a security event)"},
	ScopeMismatch:          {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassSecurity, When: "the fingerprint was issued for another action (a security event)"},
	FingerprintExpired:     {Code: http.StatusGone, Audience: Agent, Kind: Refusal, Class: ClassFingerprintExpired, When: "first consumption at or after the fingerprint's `exp`: preview again"},
	FingerprintInvalid:     {Code: http.StatusBadRequest, Audience: Agent, Kind: Refusal, Class: ClassSecurity, When: "not a fingerprint, or a bad signature (a security event)"},
	InvalidParams:          {Code: http.StatusBadRequest, Audience: Agent, Kind: Refusal, Class: ClassInvalidParams, Carries: "`errors`", When: "the params fail the catalog's rules: fix them, then preview again"},
	Unauthenticated:        {Code: http.StatusUnauthorized, Audience: Agent, Kind: Refusal, Class: ClassUnauthenticated, Carries: "header `WWW-Authenticate`", When: "no or unknown bearer token: do not retry with the same credentials"},
	UnknownAction:          {Code: http.StatusNotFound, Audience: Agent, Kind: Refusal, Class: ClassUnknownAction, When: "no such action (scope)"},
	RepeatUnacknowledged:   {Code: http.StatusConflict, Audience: Agent, Kind: Refusal, Class: ClassRepeatUnacknowledged, Carries: "`recent_operation`", When: "an identical operation ran recently and the confirm did not acknowledge it: ask the user"},
	TemporarilyUnavailable: {Code: http.StatusServiceUnavailable, Retryable: true, Audience: Agent, Kind: Refusal, Class: ClassTemporarilyUnavailable, Carries: "`retry_after_ms`; header `Retry-After`", When: "the truth store, the workflow engine or (at preview) the quote endpoint cannot answer now; nothing was consumed: the same request may be sent again a bounded number of times", RetryAfter: true},
	DownstreamRefused:      {Code: http.StatusUnprocessableEntity, Audience: Agent, Kind: Refusal, Class: ClassDownstreamRefused, Carries: "`reason`, `errors` when the downstream names fields", When: "at preview, the downstream's quote endpoint refused the params definitively (a 4xx other than 408/429): change the params, do not resend"},
	UnknownOperation:       {Code: http.StatusNotFound, Audience: Agent, Kind: Refusal, Class: ClassUnknownOperation, When: "no such operation for the caller"},
	Forbidden:              {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, When: "an ops endpoint called without the operator role, or a preview, confirm or status called with an operator's token (an operator never acts for a subject)"},
	InsufficientScope:      {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, Carries: "header `WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"…\"`", When: "the identity provider's token is valid but lacks the scope the request needs (RFC 6750); nothing was done: get a token with that scope"},
	NotFound:               {Code: http.StatusNotFound, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, When: "no such endpoint"},
	MethodNotAllowed:       {Code: http.StatusMethodNotAllowed, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, Carries: "header `Allow`", When: "the endpoint does not accept the method"},
	MalformedRequest:       {Code: http.StatusBadRequest, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, When: "the body is not the endpoint's JSON (syntax, unknown member, a member twice, missing `params`)"},
	RequestTooLarge:        {Code: http.StatusRequestEntityTooLarge, Audience: Agent, Kind: Refusal, Class: ClassBadRequest, When: "the body exceeds 64 KiB"},
	InternalError:          {Code: http.StatusInternalServerError, Audience: Agent, Kind: Refusal, Class: ClassInternal, When: "an unexpected error; report the `trace_id`"},
	NotAwaitingReview:      {Code: http.StatusConflict, Audience: Operator, Kind: Refusal, Class: ClassNotAwaitingReview, Carries: "`state`", When: "ops: a resolve for an operation that is not waiting for review"},
	InvalidResolution:      {Code: http.StatusBadRequest, Audience: Operator, Kind: Refusal, Class: ClassInvalidResolution, Carries: "`errors`", When: "ops: a resolve body, or a list filter, that is incomplete or inconsistent"},
	ResolutionSent:         {Code: http.StatusAccepted, Audience: Operator, Kind: Outcome, Carries: "`outcome`", When: "ops: the decision was accepted by the operation's workflow but its outcome was not recorded within the wait"},
	ResolutionPayload:      {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`workflow_id`, `signal`, `input` (the decision with its `token`), `expires_at`", When: "ops: the resolve signal's input, signed for the authenticated operator, to send from the Temporal Web UI or `temporal workflow signal`; nothing was sent or decided yet"},
	Resolved:               {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`state`, `decision`, `result`/`reason`, `receipt`", When: "ops: this decision was the first; the operation is now in its final state"},
	AlreadyResolved:        {Code: http.StatusConflict, Audience: Operator, Kind: Refusal, Class: ClassAlreadyResolved, Carries: "`decision` (who decided what and when)", When: "ops: another decision was made first; this one is refused"},
	OperationsListed:       {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`operations`, `count`", When: "ops: the list of operations"},
	OperationFound:         {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`operation`", When: "ops: one operation's full record"},
	InvalidRequest:         {Code: http.StatusBadRequest, Audience: ToolReader, Kind: Refusal, Class: ClassBadRequest, When: "`GET /v1/tools` with an unknown `format`"},
	WebhookAccepted:        {Code: http.StatusOK, Audience: Downstream, Kind: Outcome, When: "`POST /v1/webhooks/{scope}`: a downstream's signed event was verified and delivered to the operation's workflow"},
	WebhookRefused:         {Code: http.StatusBadRequest, Audience: Downstream, Kind: Refusal, Carries: "`reason`", When: "`POST /v1/webhooks/{scope}`: an unsigned, wrongly signed, stale, unknown or replayed event; nothing changed"},
	Alive:                  {Code: http.StatusOK, Audience: Probe, Kind: Outcome, When: "`GET /healthz`: the process runs"},
	Ready:                  {Code: http.StatusOK, Audience: Probe, Kind: Outcome, Carries: "`postgres`, `redis`", When: "`GET /readyz`: the truth database answers"},
	ApprovalRequired:       {Code: http.StatusPreconditionRequired, Audience: Agent, Kind: Refusal, Class: ClassApprovalRequired, Carries: "`approval` (`required`, `reasons`, `url`, `expires_at`, `state`)", When: "the action's policy asks a person to approve this operation with a passkey and no approval is recorded yet; nothing was consumed: give the user the link, and confirm again once they approved"},
	ApprovalDeclined:       {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassApprovalDeclined, Carries: "`approval`", When: "the person declined this operation with their passkey; its fingerprint can never be confirmed"},
	WebAuthnOptions:        {Code: http.StatusOK, Audience: Approver, Kind: Outcome, Carries: "`options`", When: "approval and enrolment pages: the options of a WebAuthn ceremony for `navigator.credentials`"},
	ApprovalRecorded:       {Code: http.StatusOK, Audience: Approver, Kind: Outcome, Carries: "`approval`", When: "approval page: the passkey's decision was verified and recorded"},
	PasskeyEnrolled:        {Code: http.StatusOK, Audience: Approver, Kind: Outcome, Carries: "`passkey`", When: "enrolment page: a passkey was registered for the subject"},
	CeremonyRefused:        {Code: http.StatusBadRequest, Audience: Approver, Kind: Refusal, Carries: "`reason`, `approval` when one is recorded", When: "approval and enrolment pages: the link, the decision or the passkey's answer was refused (expired, already decided, not the subject's passkey, a bad signature, a bearer token instead of a passkey); nothing was recorded"},
	PasskeyInvited:         {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`url`, `subject`, `expires_at`", When: "ops: a one-time enrolment link for the subject"},
	PasskeysListed:         {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`passkeys`, `count`", When: "ops: the passkeys"},
	PasskeyRevoked:         {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`passkey`", When: "ops: the passkey is revoked and decides nothing any more"},
	ApprovalsListed:        {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`approvals`, `count`", When: "ops: the approvals (pending ones: asked, not decided)"},
	UnknownPasskey:         {Code: http.StatusNotFound, Audience: Operator, Kind: Refusal, Class: ClassUnknownPasskey, When: "ops: no passkey of that id"},
	LimitExceeded:          {Code: http.StatusForbidden, Audience: Agent, Kind: Refusal, Class: ClassLimitExceeded, Carries: "`limit` (`name`, `window`, `currency`, `max`, `used`, `left`, `resets_at`)", When: "the amount does not fit one of the subject's spend budgets (`ONCEGATE_LIMITS`); nothing was claimed or executed"},
	RateLimited:            {Code: http.StatusTooManyRequests, Retryable: true, Audience: Agent, Kind: Refusal, Class: ClassRateLimited, Carries: "`retry_after_ms`; header `Retry-After`", When: "too many previews or confirms from this subject; nothing was done: the same request may be sent again after the wait", RetryAfter: true},
	LimitsShown:            {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`limits` (`budgets`: `name`, `window`, `currency`, `max`, `used`, `left`; the rates; `last_reset`)", When: "ops: a subject's budgets, what each window holds and what is left"},
	LimitsReset:            {Code: http.StatusOK, Audience: Operator, Kind: Outcome, Carries: "`reset` (`subject`, `reset_at`, `reset_by`, `trace_id`)", When: "ops: the subject's budget windows start afresh; earlier reservations no longer count"},
	NotReady:               {Code: http.StatusServiceUnavailable, Audience: Probe, Kind: Refusal, Carries: "`postgres`, `redis`, `identity_provider` (when its keys are missing), `retry_after_ms`; header `Retry-After`", When: "`GET /readyz`: the truth database cannot be reached, or an identity provider's keys were not fetched yet or are older than their maximum age; probes check again on their own schedule", RetryAfter: true},
}

// Lookup returns what the registry knows about s, or false for a status
// it does not have.
func Lookup(s Status) (Info, bool) {
	info, ok := registry[s]
	return info, ok
}

// All returns every status of the registry, sorted.
func All() []Status { return slices.Sorted(maps.Keys(registry)) }

// For returns the statuses audience receives, sorted.
func For(audience Audience) []Status {
	var out []Status
	for _, s := range All() {
		if registry[s].Audience == audience {
			out = append(out, s)
		}
	}
	return out
}

// Classes returns the class of every entry that names one, sorted: the
// classes the public client has a sentinel error for.
func Classes() []Class {
	seen := map[Class]bool{}
	for _, info := range registry {
		if info.Class != "" {
			seen[info.Class] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Known reports whether s is a status of the registry.
func (s Status) Known() bool {
	_, ok := registry[s]
	return ok
}

// Succeeded reports whether s is completed or already_completed.
func (s Status) Succeeded() bool { return s == Completed || s == AlreadyCompleted }

// Failed reports whether s is failed or already_failed: a definite failure,
// whose failure_kind says whether it proves that nothing was executed.
func (s Status) Failed() bool { return s == Failed || s == AlreadyFailed }

// Terminal reports whether s is a final state of an operation: completed or
// failed, first or replayed.
func (s Status) Terminal() bool { return s.Succeeded() || s.Failed() }

// Replayed reports whether s replays an earlier outcome (already_completed,
// already_failed).
func (s Status) Replayed() bool { return s == AlreadyCompleted || s == AlreadyFailed }
