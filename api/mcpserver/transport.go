package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/tools"
)

// TransportMessageKey is the message key of the answers to MCP requests
// the SDK's transport refused before any tool ran (a wrong method, Accept
// or Content-Type header, an unknown session, a body it cannot read).
const TransportMessageKey = "mcp_transport"

// transportStatuses maps the HTTP code of a transport refusal to the
// status that answers it, with the registry's code for that status.
// Unlisted 4xx codes answer malformed_request, 5xx internal_error.
var transportStatuses = map[int]struct {
	status string
	code   int
}{
	http.StatusBadRequest:            {"malformed_request", http.StatusBadRequest},
	http.StatusUnsupportedMediaType:  {"malformed_request", http.StatusBadRequest},
	http.StatusForbidden:             {"forbidden", http.StatusForbidden},
	http.StatusNotFound:              {"not_found", http.StatusNotFound},
	http.StatusMethodNotAllowed:      {"method_not_allowed", http.StatusMethodNotAllowed},
	http.StatusRequestEntityTooLarge: {"request_too_large", http.StatusRequestEntityTooLarge},
}

// transportErrors is the ResponseWriter the SDK's handler writes to: an
// answer of 400 or more that is not JSON (the SDK's plain-text http.Error)
// is held back and rewritten as the gateway's JSON answer, with status,
// meaning, instruction, retryable and trace_id, by finish. JSON answers
// (JSON-RPC errors, which MCP clients read) and every success pass through
// as they are, streamed.
type transportErrors struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

// WriteHeader implements http.ResponseWriter.
func (t *transportErrors) WriteHeader(code int) {
	if code >= http.StatusBadRequest && !strings.HasPrefix(t.Header().Get("Content-Type"), "application/json") {
		t.code = code
		return
	}
	t.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (t *transportErrors) Write(b []byte) (int, error) {
	if t.code != 0 {
		return t.body.Write(b)
	}
	return t.ResponseWriter.Write(b)
}

// Flush implements http.Flusher for the SSE streams that pass through.
func (t *transportErrors) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok && t.code == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (t *transportErrors) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// finish writes the JSON answer of a held-back refusal.
func (t *transportErrors) finish(r *http.Request, msgs *messages.Catalog) {
	if t.code == 0 {
		return
	}
	to, ok := transportStatuses[t.code]
	switch {
	case ok:
	case t.code >= http.StatusInternalServerError:
		to.status, to.code = "internal_error", http.StatusInternalServerError
	default:
		to.status, to.code = "malformed_request", http.StatusBadRequest
	}
	detail := strings.TrimSpace(t.body.String())
	lang := messages.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	tid := tools.TraceID(t.ResponseWriter, r)
	meaning := "The MCP request was refused before any tool ran: " + detail + ". Nothing was executed."
	instruction := "Do not resend it unchanged. Send each MCP message as a POST of one JSON-RPC message with the headers Content-Type: application/json and Accept: application/json, text/event-stream (both), and your bearer token; GET and DELETE are not served."
	if msgs != nil {
		if m, i, err := msgs.Render(lang, TransportMessageKey, messages.Data{Detail: detail, Method: r.Method, Path: r.URL.Path, TraceID: tid}); err == nil {
			meaning, instruction = m, i
		}
	}
	t.Header().Set("Content-Type", "application/json")
	t.ResponseWriter.WriteHeader(to.code)
	_ = json.NewEncoder(t.ResponseWriter).Encode(map[string]any{
		"status":      to.status,
		"meaning":     meaning,
		"instruction": instruction,
		"retryable":   false, // a transport refusal never passes unchanged
		"trace_id":    tid,
	})
}
