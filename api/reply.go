package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"
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
	// StatusScopeMismatch means the fingerprint was issued for another action.
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
	// StatusInvalidResolution means a resolve body that is incomplete or inconsistent.
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
	// StatusAlive means liveness.
	StatusAlive = "alive"
	// StatusReady means readiness: the truth database answers.
	StatusReady = "ready"
	// StatusNotReady means the truth database cannot be reached.
	StatusNotReady = "not_ready"
)

// StatusInfo is the HTTP code and retryability of a status.
type StatusInfo struct {
	// Code is the HTTP status code.
	Code int
	// Retryable tells the model whether sending the same request again can help.
	Retryable bool
}

// Statuses maps every status the gateway answers to its code and retryability.
var Statuses = map[string]StatusInfo{
	StatusPreviewReady:           {http.StatusOK, false},
	StatusCompleted:              {http.StatusOK, false},
	StatusAlreadyCompleted:       {http.StatusOK, false},
	StatusFailed:                 {http.StatusOK, false},
	StatusAlreadyFailed:          {http.StatusOK, false},
	StatusInProgress:             {http.StatusAccepted, false},
	StatusNeedsManualReview:      {http.StatusAccepted, false},
	StatusParamMismatch:          {http.StatusUnprocessableEntity, false},
	StatusSubjectMismatch:        {http.StatusForbidden, false},
	StatusScopeMismatch:          {http.StatusForbidden, false},
	StatusFingerprintExpired:     {http.StatusGone, false},
	StatusFingerprintInvalid:     {http.StatusBadRequest, false},
	StatusInvalidParams:          {http.StatusBadRequest, true},
	StatusUnauthenticated:        {http.StatusUnauthorized, true},
	StatusUnknownAction:          {http.StatusNotFound, false},
	StatusRepeatUnacknowledged:   {http.StatusConflict, false},
	StatusTemporarilyUnavailable: {http.StatusServiceUnavailable, true},
	StatusUnknownOperation:       {http.StatusNotFound, false},
	StatusForbidden:              {http.StatusForbidden, false},
	StatusNotFound:               {http.StatusNotFound, false},
	StatusMethodNotAllowed:       {http.StatusMethodNotAllowed, false},
	StatusMalformedRequest:       {http.StatusBadRequest, false},
	StatusRequestTooLarge:        {http.StatusRequestEntityTooLarge, false},
	StatusInternalError:          {http.StatusInternalServerError, false},
	StatusNotAwaitingReview:      {http.StatusConflict, false},
	StatusInvalidResolution:      {http.StatusBadRequest, true},
	StatusResolutionSent:         {http.StatusAccepted, false},
	StatusResolved:               {http.StatusOK, false},
	StatusAlreadyResolved:        {http.StatusConflict, false},
	StatusOperationsListed:       {http.StatusOK, false},
	StatusOperationFound:         {http.StatusOK, false},
	StatusAlive:                  {http.StatusOK, false},
	StatusReady:                  {http.StatusOK, false},
	StatusNotReady:               {http.StatusServiceUnavailable, true},
}

// HeaderReplayed marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"

// PollWith is the status tool's name.
const PollWith = "get_operation_status"

// reply is one answer before rendering.
type reply struct {
	// status is a key of Statuses.
	status string
	// key is the message key when it differs from status.
	key string
	// opID is the operation_id, once one exists.
	opID string
	// scope fills the tool names of the texts.
	scope string
	// fields are the status's extra body fields.
	fields map[string]any
	// data fills the texts (operation, scope and tools are added).
	data messages.Data
	// header holds extra response headers.
	header http.Header
	// err is an internal error, logged with the trace id.
	err error
}

func newReply(status string) reply { return reply{status: status} }

// with sets an extra body field.
func (r reply) with(k string, v any) reply {
	if r.fields == nil {
		r.fields = map[string]any{}
	}
	r.fields[k] = v
	return r
}

// replayed marks the reply with Idempotent-Replayed: true.
func (r reply) replayed() reply {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(HeaderReplayed, "true")
	return r
}

// toolNames returns the preview and confirm tool names of scope.
func toolNames(scope string) (preview, confirm string) {
	if scope == "" {
		return "", ""
	}
	base := strings.ReplaceAll(scope, ".", "_")
	return base + "_preview", base + "_confirm"
}

// seconds formats a millisecond count as seconds for the texts.
func seconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

// render writes r as JSON.
func (s *Server) render(c echo.Context, r reply) error {
	info, ok := Statuses[r.status]
	if !ok {
		s.log.ErrorContext(c.Request().Context(), "unknown status", "status", r.status)
		r = reply{status: StatusInternalError, opID: r.opID}
		info = Statuses[StatusInternalError]
	}
	traceID := traceIDOf(c)
	if r.err != nil {
		s.log.ErrorContext(c.Request().Context(), "request failed", "trace_id", traceID, "status", r.status,
			"operation_id", r.opID, "err", r.err)
	}
	d := r.data
	d.OperationID = r.opID
	d.TraceID = traceID
	if r.scope != "" {
		d.Scope = r.scope
	}
	d.PreviewTool, d.ConfirmTool = toolNames(d.Scope)
	d.PollWith = PollWith
	d.PollAfterMS = s.cfg.PollAfter.Milliseconds()
	d.PollAfterSeconds = seconds(d.PollAfterMS)
	d.RetryAfterMS = s.cfg.RetryAfter.Milliseconds()
	d.RetryAfterSeconds = seconds(d.RetryAfterMS)
	if d.Method == "" {
		d.Method = c.Request().Method
	}
	if d.Path == "" {
		d.Path = c.Request().URL.Path
	}
	switch r.status {
	case StatusInProgress, StatusNeedsManualReview:
		r = r.with("poll_with", PollWith).with("poll_after_ms", d.PollAfterMS)
	case StatusTemporarilyUnavailable, StatusNotReady:
		r = r.with("retry_after_ms", d.RetryAfterMS)
	}
	key := r.key
	if key == "" {
		key = r.status
	}
	lang := messages.ParseAcceptLanguage(c.Request().Header.Get("Accept-Language"))
	meaning, instruction, err := s.msgs.Render(lang, key, d)
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), "render message", "trace_id", traceID, "err", err)
		meaning, instruction = r.status, "Report trace_id "+traceID+" to the operators."
	}
	body := orderedBody(r.status, meaning, instruction, info.Retryable, traceID, r.opID, r.fields)
	h := c.Response().Header()
	for k, vs := range r.header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if lang == messages.Chinese {
		h.Set("Content-Language", "zh")
	} else {
		h.Set("Content-Language", "en")
	}
	s.metrics.responses.WithLabelValues(r.status).Inc()
	c.Set(ctxStatus, r.status)
	return c.JSONBlob(info.Code, body)
}

// orderedBody writes the common fields first, then the extra ones sorted.
func orderedBody(status, meaning, instruction string, retryable bool, traceID, opID string, fields map[string]any) []byte {
	var b bytes.Buffer
	put := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			vb, _ = json.Marshal(err.Error())
		}
		b.Write(vb)
	}
	b.WriteByte('{')
	put("status", status)
	put("meaning", meaning)
	put("instruction", instruction)
	put("retryable", retryable)
	put("trace_id", traceID)
	if opID != "" {
		put("operation_id", opID)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		put(k, fields[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}
