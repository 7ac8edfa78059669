package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// replayed answers Idempotent-Replayed: true.
	replayed bool
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
		s.log.ErrorContext(c.Request().Context(), messages.FaultBodyField, "trace_id", traceID, "status", r.status, "err", err)
	}
	d.OperationID = r.opID
	d.TraceID = traceID
	d.Scope = r.scope
	d.PreviewTool, d.ConfirmTool = s.toolNamesOf(d.Scope)
	d.PollWith = PollWith
	pollAfter, retryAfter := waitOr(r.pollAfter, s.pollAfter), waitOr(r.retryAfter, s.retryAfter)
	d.PollAfterMS, d.PollAfterSeconds = pollAfter.ms, pollAfter.seconds
	d.RetryAfterMS, d.RetryAfterSeconds = retryAfter.ms, retryAfter.seconds
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
			s.log.ErrorContext(c.Request().Context(), messages.FaultRenderDetail, "trace_id", traceID, "err", err)
		}
	}
	if v, ok := r.fields["approval"].(approvalView); ok && r.detail == "" {
		d.Detail = s.reasonsText(lang, v.Reasons)
	}
	if errs, ok := r.fields["errors"].([]params.FieldProblem); ok && lang != messages.English {
		r.fields["errors"] = s.translateProblems(lang, errs)
	}
	// The texts are written into room, and from there into the body.
	var room [messages.TextRoom]byte
	meaning, instruction, err := s.msgs.RenderInto(room[:], lang, key, d)
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), messages.FaultRender, "trace_id", traceID, "err", err)
		meaning, instruction = []byte(r.status), []byte(renderFailedInstruction(lang, traceID))
	}
	// An id from the path that is not an operation_id (GET
	// /v1/operations/not-an-id) is named in the texts but never answered as
	// operation_id, whose documented shape it breaks.
	bodyOpID := r.opID
	if !tools.IsOperationID(bodyOpID) {
		bodyOpID = ""
	}
	body := borrowBuffer()
	defer giveBackBuffer(body)
	orderedBody(body, string(r.status), meaning, instruction, info.Retryable, traceID, bodyOpID, r.fields)
	setAnswerHeaders(c.Response().Header(), r, info, lang)
	s.metrics.responses.WithLabelValues(string(r.status)).Inc()
	c.Set(ctxStatus, r.status)
	return c.JSONBlob(info.Code, body.Bytes())
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
func setAnswerHeaders(h http.Header, r reply, info status.Info, lang messages.Lang) {
	if info.Wait() {
		h[HeaderRetryAfter] = []string{retryAfterHeader(r.fields)}
	}
	if r.replayed {
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
// preview (previewView) are written directly; any other value through one
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
	if !plain(s) {
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
	if p, ok := v.(previewView); ok {
		v = p.asMap() // what it stands for: even an encoding error reads the same
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
		if n < 2 || t[0] != '"' || t[n-1] != '"' || !plain(t[1:n-1]) {
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
	case previewView:
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
// > and &). It tests eight bytes at a time (plainWord), the rest one by one.
func plain[T ~string | ~[]byte](s T) bool {
	for len(s) >= 8 {
		if !plainWord(binary.LittleEndian.Uint64([]byte(s[:8]))) {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// Bytes repeated in each of a word's eight (ones) and their high bits.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether all eight bytes of x are plain. A byte below
// 0x20 has its high bit set once 0x20 is taken from it, one from 0x7f to
// 0xfe once 1 is added, 0xff once 0x20 is taken; a borrow or carry that
// crosses into the next byte only follows such a byte, so the answer is
// exact. The escaped characters are the zero bytes of x xor
// the character (zeroBytes).
func plainWord(x uint64) bool {
	bad := (x - ones*0x20) | (x + ones) |
		zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | zeroBytes(x^(ones*'<')) | zeroBytes(x^(ones*'>')) | zeroBytes(x^(ones*'&'))
	return bad&highs == 0
}

// zeroBytes has the high bit of each zero byte of v set (others may be set
// only above a zero byte).
func zeroBytes(v uint64) uint64 {
	return (v - ones) &^ v
}
