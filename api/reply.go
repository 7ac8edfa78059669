package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/internal/params"

	"github.com/oncegate/oncegate/status"
)

// PollWith is the status tool's name.
const PollWith = "get_operation_status"

// reply is one answer before rendering.
type reply struct {
	// status is a key of Statuses.
	status status.Status
	// key is the message key when it differs from status.
	key string
	// opID is the operation_id, once one exists.
	opID string
	// scope fills the tool names of the texts.
	scope string
	// fields are the status's extra body fields. A value the texts also
	// show is written here only; textData derives the texts' data from it.
	fields map[string]any
	// text holds the values only the texts show (operation, scope, tools
	// and waits are added by render).
	text messages.Data
	// detail is the key of a detail fragment that fills data.Detail.
	detail string
	// header holds extra response headers.
	header http.Header
	// pollAfter overrides the configured poll_after_ms when positive.
	pollAfter time.Duration
	// retryAfter overrides the configured retry_after_ms when positive
	// (rate_limited: the limiter's own wait).
	retryAfter time.Duration
	// err is an internal error, logged with the trace id.
	err error
}

// toolNames returns the preview and confirm tool names of scope.
func toolNames(scope string) (preview, confirm string) {
	if scope == "" {
		return "", ""
	}
	base := strings.ReplaceAll(scope, ".", "_")
	return base + "_preview", base + "_confirm"
}

// toolNamesOf is toolNames of scope, made at New for the catalog's scopes.
func (s *Server) toolNamesOf(scope string) (preview, confirm string) {
	if t, ok := s.tools[scope]; ok {
		return t[0], t[1]
	}
	return toolNames(scope)
}

// seconds formats a millisecond count as seconds for the texts.
func seconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

// render writes r as JSON.
func (s *Server) render(c echo.Context, r reply) error {
	info, ok := status.Lookup(r.status)
	if !ok {
		s.log.ErrorContext(c.Request().Context(), "unknown status", "status", r.status)
		r = reply{status: status.InternalError, opID: r.opID}
		info, _ = status.Lookup(status.InternalError)
	}
	traceID := traceIDOf(c)
	if r.err != nil {
		s.log.ErrorContext(c.Request().Context(), "request failed", "trace_id", traceID, "status", r.status,
			"operation_id", r.opID, "err", r.err)
	}
	d, err := r.textData()
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), "texts of a body field", "trace_id", traceID, "status", r.status, "err", err)
	}
	d.OperationID = r.opID
	d.TraceID = traceID
	d.Scope = r.scope
	d.PreviewTool, d.ConfirmTool = s.toolNamesOf(d.Scope)
	d.PollWith = PollWith
	d.PollAfterMS = s.cfg.PollAfter.Milliseconds()
	if r.pollAfter > 0 {
		d.PollAfterMS = r.pollAfter.Milliseconds()
	}
	d.PollAfterSeconds = seconds(d.PollAfterMS)
	d.RetryAfterMS = s.cfg.RetryAfter.Milliseconds()
	if r.retryAfter > 0 {
		d.RetryAfterMS = r.retryAfter.Milliseconds()
	}
	d.RetryAfterSeconds = seconds(d.RetryAfterMS)
	d.RetryLimit = RetryLimit
	if d.Method == "" {
		d.Method = c.Request().Method
	}
	if d.Path == "" {
		d.Path = c.Request().URL.Path
	}
	if info.Polls {
		r = r.with("poll_with", PollWith).with("poll_after_ms", d.PollAfterMS)
	}
	if info.RetryAfter {
		r = r.with("retry_after_ms", d.RetryAfterMS)
	}
	key := r.key
	if key == "" {
		key = string(r.status)
	}
	lang := messages.ParseAcceptLanguage(c.Request().Header.Get("Accept-Language"))
	if r.detail != "" {
		if d.Detail, err = s.msgs.Fragment(lang, r.detail, d); err != nil {
			s.log.ErrorContext(c.Request().Context(), "render detail", "trace_id", traceID, "err", err)
		}
	}
	if v, ok := r.fields["approval"].(approvalView); ok && r.detail == "" {
		d.Detail = s.reasonsText(lang, v.Reasons)
	}
	if errs, ok := r.fields["errors"].([]params.FieldProblem); ok && lang != messages.English {
		r.fields["errors"] = s.translateProblems(lang, errs)
	}
	meaning, instruction, err := s.msgs.Render(lang, key, d)
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), "render message", "trace_id", traceID, "err", err)
		meaning, instruction = string(r.status), renderFailedInstruction(lang, traceID)
	}
	// An id from the path that is not an operation_id (GET
	// /v1/operations/not-an-id) is named in the texts but never answered as
	// operation_id, whose documented shape it breaks.
	bodyOpID := r.opID
	if !tools.IsOperationID(bodyOpID) {
		bodyOpID = ""
	}
	body := orderedBody(string(r.status), meaning, instruction, info.Retryable, traceID, bodyOpID, r.fields)
	h := c.Response().Header()
	if info.Wait() {
		h.Set(HeaderRetryAfter, retryAfterHeader(r.fields))
	}
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
	s.metrics.responses.WithLabelValues(string(r.status)).Inc()
	c.Set(ctxStatus, r.status)
	return c.JSONBlob(info.Code, body)
}

// HeaderRetryAfter tells generic HTTP clients when to come back.
const HeaderRetryAfter = "Retry-After"

// retryAfterHeader is the Retry-After of an answer's fields: its wait
// (retry_after_ms, else poll_after_ms) in whole seconds, rounded up.
func retryAfterHeader(fields map[string]any) string {
	ms, ok := fields["retry_after_ms"].(int64)
	if !ok {
		ms, _ = fields["poll_after_ms"].(int64)
	}
	return strconv.FormatInt((ms+999)/1000, 10)
}

// RetryLimit is how many times the texts of a retryable answer allow the
// same request to be sent again before the agent tells the user.
const RetryLimit = 3

// renderFailedInstruction is the instruction when the catalog failed to
// render (a bug): it must still be in the caller's language.
func renderFailedInstruction(lang messages.Lang, traceID string) string {
	if lang == messages.Chinese {
		return "不要重试。请把 trace_id " + traceID + " 报告给运维人员。"
	}
	return "Do not retry. Report trace_id " + traceID + " to the operators."
}

// translateProblems returns errs with each problem text in lang, where the
// message catalog translates its code (others keep their English text).
func (s *Server) translateProblems(lang messages.Lang, errs []params.FieldProblem) []params.FieldProblem {
	out := make([]params.FieldProblem, len(errs))
	for i, p := range errs {
		if text, ok := s.msgs.Problem(lang, p.Code, p.Args); ok {
			p.Problem = text
		}
		out[i] = p
	}
	return out
}

// bodySize is the room an answer's body is given up front: most answers
// (a preview, a replay with its receipt) fit, so it is written once.
const bodySize = 2048

// bodyKeys is how many extra fields an answer's keys are sorted in without
// an allocation (a replay has nine).
const bodyKeys = 16

// orderedBody writes the common fields first, then the extra ones sorted,
// into one buffer through one encoder (the bytes json.Marshal writes for
// each key and value, without a copy of each).
func orderedBody(status, meaning, instruction string, retryable bool, traceID, opID string, fields map[string]any) []byte {
	var b bytes.Buffer
	b.Grow(bodySize)
	enc := json.NewEncoder(&b)
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode ends each value with a newline
		return nil
	}
	key := func(k string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		if !writePlain(&b, k) {
			_ = encode(k) // a string always encodes
		}
		b.WriteByte(':')
	}
	// putString is put of a string, which it never boxes in an any.
	putString := func(k, v string) {
		key(k)
		if !writePlain(&b, v) {
			_ = encode(v) // a string always encodes
		}
	}
	put := func(k string, v any) {
		switch t := v.(type) {
		case string:
			putString(k, t)
			return
		case bool:
			key(k)
			b.WriteString(strconv.FormatBool(t))
			return
		case int64:
			key(k)
			b.WriteString(strconv.FormatInt(t, 10))
			return
		}
		key(k)
		if err := encode(v); err != nil {
			_ = encode(err.Error())
		}
	}
	b.WriteByte('{')
	putString("status", status)
	putString("meaning", meaning)
	putString("instruction", instruction)
	put("retryable", retryable)
	putString("trace_id", traceID)
	if opID != "" {
		putString("operation_id", opID)
	}
	var room [bodyKeys]string // the sorted keys, without an allocation for most answers
	keys := room[:0]
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put(k, fields[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writePlain writes s as a JSON string when encoding/json would write it
// unchanged between quotes (plain), and reports whether it did; any other
// string is left to the encoder, so the bytes never differ.
func writePlain(b *bytes.Buffer, s string) bool {
	if !plain(s) {
		return false
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return true
}

// plain reports whether encoding/json writes s unchanged between quotes:
// printable ASCII without the characters it escapes (quote, backslash, <,
// > and &).
func plain[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
