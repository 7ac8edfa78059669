package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/internal/plainjson"

	"github.com/oncegate/oncegate/status"
)

// PollWith is the status tool's name.
const PollWith = "get_operation_status"

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

// render writes r as JSON, answering c's request.
func (s *Server) render(c echo.Context, r gateway.Answer) error {
	req := c.Request()
	body := borrowBuffer()
	defer giveBackBuffer(body)
	code := s.renderInto(body, c.Response().Header(), r, asked{ctx: req.Context(), traceID: traceIDOf(c),
		lang: messages.ParseAcceptLanguage(req.Header.Get("Accept-Language")), method: req.Method, path: req.URL.Path})
	c.Set(ctxStatus, r.Status)
	return c.JSONBlob(code, body.Bytes())
}

// asked is what rendering reads of the request an answer answers.
type asked struct {
	ctx     context.Context
	traceID string
	lang    messages.Lang
	method  string
	path    string
}

// renderInto writes r's JSON body into body and its headers into h, and
// returns its HTTP code: the texts in the caller's language filled from
// the answer's fields and words, the common members first.
func (s *Server) renderInto(body *bytes.Buffer, h http.Header, r gateway.Answer, q asked) int {
	ctx, traceID, lang := q.ctx, q.traceID, q.lang
	info, ok := status.Lookup(r.Status)
	if !ok {
		s.log.ErrorContext(ctx, "unknown status", "status", r.Status)
		r = gateway.Answer{Status: status.InternalError, OperationID: r.OperationID}
		info, _ = status.Lookup(status.InternalError)
	}
	if r.Err != nil {
		s.log.ErrorContext(ctx, "request failed", "trace_id", traceID, "status", r.Status,
			"operation_id", r.OperationID, "err", r.Err)
	}
	d, err := textData(r)
	if err != nil {
		s.log.ErrorContext(ctx, messages.FaultBodyField, "trace_id", traceID, "status", r.Status, "err", err)
	}
	d.OperationID = r.OperationID
	d.TraceID = traceID
	d.Scope = r.Scope
	d.PreviewTool, d.ConfirmTool = s.toolNamesOf(d.Scope)
	d.PollWith = PollWith
	pollAfter, retryAfter := waitOr(r.PollAfter, s.pollAfter), waitOr(r.RetryAfter, s.retryAfter)
	d.PollAfterMS, d.PollAfterSeconds = pollAfter.ms, pollAfter.seconds
	d.RetryAfterMS, d.RetryAfterSeconds = retryAfter.ms, retryAfter.seconds
	d.RetryLimit = RetryLimit
	d.Method, d.Path = q.method, q.path
	if info.Polls {
		r = r.With("poll_with", PollWith).With("poll_after_ms", d.PollAfterMS)
	}
	if info.RetryAfter {
		r = r.With("retry_after_ms", d.RetryAfterMS)
	}
	key := r.Key
	if key == "" {
		key = string(r.Status)
	}
	if r.Detail != "" {
		if d.Detail, err = s.msgs.Fragment(lang, r.Detail, d); err != nil {
			s.log.ErrorContext(ctx, messages.FaultRenderDetail, "trace_id", traceID, "err", err)
		}
	}
	if v, ok := r.Fields["approval"].(gateway.ApprovalView); ok && r.Detail == "" {
		d.Detail = s.reasonsText(lang, v.Reasons)
	}
	if errs, ok := r.Fields["errors"].([]params.FieldProblem); ok && lang != messages.English {
		r.Fields["errors"] = s.translateProblems(lang, errs)
	}
	// The texts are written into room, and from there into the body.
	var room [messages.TextRoom]byte
	meaning, instruction, err := s.msgs.RenderInto(room[:], lang, key, d)
	if err != nil {
		s.log.ErrorContext(ctx, messages.FaultRender, "trace_id", traceID, "err", err)
		meaning, instruction = []byte(r.Status), []byte(renderFailedInstruction(lang, traceID))
	}
	// An id from the path that is not an operation_id (GET
	// /v1/operations/not-an-id) is named in the texts but never answered as
	// operation_id, whose documented shape it breaks.
	bodyOpID := r.OperationID
	if !fingerprint.IsNonce(bodyOpID) {
		bodyOpID = ""
	}
	orderedBody(body, string(r.Status), meaning, instruction, info.Retryable, traceID, bodyOpID, r.Fields)
	if r.Status == status.InsufficientScope && h.Get(echo.HeaderWWWAuthenticate) == "" {
		// The service's refusal of an action's scope: the challenge names it (RFC 6750 §3.1).
		h.Set(echo.HeaderWWWAuthenticate, challenge("", "insufficient_scope", "the token lacks the scope this request needs", r.Words.Expected))
	}
	setAnswerHeaders(h, r, info, lang)
	s.responses.WithLabelValues(string(r.Status)).Inc()
	return info.Code
}

// The values of the answers' constant headers, made once. An answer's
// header map holds these very slices: nothing changes a header's values in
// place (Header.Add appends, which copies a full slice).
var (
	headerJSON    = []string{echo.MIMEApplicationJSON}
	headerEnglish = []string{string(messages.English)}
	headerChinese = []string{string(messages.Chinese)}
	headerTrue    = []string{"true"}
)

// setAnswerHeaders sets h's headers of the answer r in lang, under keys
// already canonical (what Header.Set would make of them), without
// canonicalising them again: Retry-After when the status waits,
// Idempotent-Replayed, Content-Language, and Content-Type unless set, as
// JSONBlob would (it then leaves it as it is).
func setAnswerHeaders(h http.Header, r gateway.Answer, info status.Info, lang messages.Lang) {
	if info.Wait() {
		h[HeaderRetryAfter] = []string{retryAfterHeader(r.Fields)}
	}
	if r.Replayed {
		h[HeaderReplayed] = headerTrue
	}
	if lang == messages.Chinese {
		h[headerContentLanguage] = headerChinese
	} else {
		h[headerContentLanguage] = headerEnglish
	}
	if v := h[echo.HeaderContentType]; len(v) == 0 || v[0] == "" {
		h[echo.HeaderContentType] = headerJSON
	}
}

// headerContentLanguage names the answer's language.
const headerContentLanguage = "Content-Language"

// wait is a wait an answer tells: in milliseconds, and in seconds as the
// texts say it.
type wait struct {
	ms      int64
	seconds string
}

// newWait is d as an answer tells it.
func newWait(d time.Duration) wait {
	ms := d.Milliseconds()
	return wait{ms: ms, seconds: seconds(ms)}
}

// waitOr is the wait of override when positive, else configured (made once
// at New).
func waitOr(override time.Duration, configured wait) wait {
	if override > 0 {
		return newWait(override)
	}
	return configured
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
// fit.
const bodySize = 2048

// maxPooledBody is the largest body buffer kept for the next answer; a
// larger one (a big result) is left to the garbage collector.
const maxPooledBody = 64 << 10

// bodyBuffers holds the buffers answers are written into (and request
// bodies read into, readBody), reused once the answer is written out.
var bodyBuffers = sync.Pool{New: func() any {
	b := new(bytes.Buffer)
	b.Grow(bodySize)
	return b
}}

// borrowBuffer returns an empty buffer of bodyBuffers.
func borrowBuffer() *bytes.Buffer { return bodyBuffers.Get().(*bytes.Buffer) }

// giveBackBuffer empties b and returns it to bodyBuffers, unless it grew
// larger than maxPooledBody.
func giveBackBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		b.Reset()
		bodyBuffers.Put(b)
	}
}

// bodyKeys is the room for sorted keys on the stack: most answers and their
// nested objects have fewer.
const bodyKeys = 16

// orderedBody writes into b the common fields first, then the extra ones
// sorted: the bytes json.Marshal writes for each key and value. Strings,
// booleans, integers, nested objects of them, plain raw strings and a
// preview (gateway.PreviewView) are written directly; any other value through one
// encoder.
func orderedBody(b *bytes.Buffer, status string, meaning, instruction []byte, retryable bool, traceID, opID string, fields map[string]any) {
	w := bodyWriter{b: b, enc: json.NewEncoder(b), start: b.Len()}
	b.WriteByte('{')
	w.putString("status", status)
	w.putText("meaning", meaning)
	w.putText("instruction", instruction)
	w.put("retryable", retryable)
	w.putString("trace_id", traceID)
	if opID != "" {
		w.putString("operation_id", opID)
	}
	var room [bodyKeys]string
	for _, k := range sortedKeys(room[:0], fields) {
		w.put(k, fields[k])
	}
	b.WriteByte('}')
}

// sortedKeys appends m's keys to keys, sorted as encoding/json sorts them.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// bodyWriter writes an answer's members into b, the way orderedBody says.
type bodyWriter struct {
	b   *bytes.Buffer
	enc *json.Encoder
	// start is where the body begins in b.
	start int
}

// encode writes v as encoding/json does, without the newline it ends with.
func (w bodyWriter) encode(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	w.b.Truncate(w.b.Len() - 1)
	return nil
}

// key writes k as the next member's key.
func (w bodyWriter) key(k string) {
	if w.b.Len() > w.start+1 {
		w.b.WriteByte(',')
	}
	w.string(k)
}

// string writes s as a JSON string.
func (w bodyWriter) string(s string) {
	if !writePlain(w.b, s) {
		_ = w.encode(s) // a string always encodes
	}
}

// text writes s as a JSON string, as string writes it.
func (w bodyWriter) text(s []byte) {
	if !plainjson.Plain(s) {
		_ = w.encode(string(s)) // a string always encodes
		return
	}
	w.b.WriteByte('"')
	w.b.Write(s)
	w.b.WriteByte('"')
}

// putString is put of a string, which it never boxes in an any.
func (w bodyWriter) putString(k, v string) {
	w.key(k)
	w.b.WriteByte(':')
	w.string(v)
}

// putText is putString of a text's bytes.
func (w bodyWriter) putText(k string, v []byte) {
	w.key(k)
	w.b.WriteByte(':')
	w.text(v)
}

// put writes the member k: v. A value that cannot be encoded is answered by
// its error's text, as marshalling the body member by member would.
func (w bodyWriter) put(k string, v any) {
	w.key(k)
	w.b.WriteByte(':')
	mark := w.b.Len()
	if w.value(v) {
		return
	}
	w.b.Truncate(mark)
	if p, ok := v.(gateway.PreviewView); ok {
		v = p.AsMap() // what it stands for: even an encoding error reads the same
	}
	if err := w.encode(v); err != nil {
		_ = w.encode(err.Error())
	}
}

// value writes v directly when it is one of the kinds orderedBody writes
// itself, and reports whether it did; otherwise what it wrote is to be
// dropped and v encoded whole.
func (w bodyWriter) value(v any) bool {
	switch t := v.(type) {
	case string:
		w.string(t)
	case bool:
		w.b.WriteString(strconv.FormatBool(t))
	case int64:
		w.b.WriteString(strconv.FormatInt(t, 10))
	case nil:
		w.b.WriteString("null")
	case json.RawMessage:
		// Marshal compacts raw JSON; a quoted plain string is already compact.
		n := len(t)
		if n < 2 || t[0] != '"' || t[n-1] != '"' || !plainjson.Plain(t[1:n-1]) {
			return false
		}
		w.b.Write(t)
	case map[string]any:
		w.b.WriteByte('{')
		var room [bodyKeys]string
		for i, k := range sortedKeys(room[:0], t) {
			w.member(i, k)
			if !w.value(t[k]) {
				return false
			}
		}
		w.b.WriteByte('}')
	case gateway.PreviewView:
		return w.preview(t)
	default:
		return false
	}
	return true
}

// writePlain writes s as a JSON string when encoding/json would write it
// unchanged between quotes (plain), and reports whether it did; any other
// string is left to the encoder, so the bytes never differ.
func writePlain(b *bytes.Buffer, s string) bool {
	if !plainjson.Plain(s) {
		return false
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return true
}
