package gateway

import (
	"time"

	"github.com/oncegate/oncegate/status"
)

// Answer is what a use case answers, before any transport renders it: a
// status of the registry, the operation it is about, the body's extra
// fields, and what only its texts show. The HTTP API and the MCP server
// render it the same way (package api): the status's code, meaning and
// instruction in the caller's language, the fields, the headers.
type Answer struct {
	// Status is a status of the registry.
	Status status.Status
	// Key is the message key when it differs from Status (a status
	// rendered under another text, such as preview_ready_repeat).
	Key string
	// OperationID is the operation_id, once one exists.
	OperationID string
	// Scope is the action the answer is about (it fills the tool names of
	// the texts).
	Scope string
	// Fields are the status's extra body fields. A value the texts also
	// show is written here only; the renderer derives the texts' data from
	// it.
	Fields map[string]any
	// Words are the values only the texts show.
	Words Words
	// Detail is the message key of a detail fragment the texts show.
	Detail string
	// Replayed answers an outcome an earlier call started
	// (Idempotent-Replayed: true).
	Replayed bool
	// PollAfter overrides the configured poll_after_ms when positive.
	PollAfter time.Duration
	// RetryAfter overrides the configured retry_after_ms when positive
	// (rate_limited: the limiter's own wait).
	RetryAfter time.Duration
	// Err is an internal error, logged with the trace id by the renderer.
	Err error
}

// Words are the values an answer's texts show that its body does not.
type Words struct {
	// ExpiresAt is when a fingerprint expired (RFC 3339).
	ExpiresAt string
	// Got is what a downstream answered instead (an HTTP status).
	Got string
	// Detail is a detail in words, when no fragment says it.
	Detail string
	// State is a state or a subject the texts name.
	State string
	// Field is the request member a refusal is about.
	Field string
	// Expected is what that member must be.
	Expected string
	// Err is a refusal's technical reason.
	Err string
	// Offset is a byte offset into the request's body.
	Offset int64
}

// NewAnswer is an answer of status st.
func NewAnswer(st status.Status) Answer { return Answer{Status: st} }

// opAnswer is an answer about operation opID.
func opAnswer(st status.Status, opID string) Answer {
	return Answer{Status: st, OperationID: opID}
}

// scopedAnswer is an answer about action scope.
func scopedAnswer(st status.Status, scope string) Answer {
	return Answer{Status: st, Scope: scope}
}

// With sets an extra body field.
func (a Answer) With(k string, v any) Answer {
	if a.Fields == nil {
		a.Fields = map[string]any{}
	}
	a.Fields[k] = v
	return a
}

// asReplayed marks the answer with Idempotent-Replayed: true.
func (a Answer) asReplayed() Answer {
	a.Replayed = true
	return a
}
