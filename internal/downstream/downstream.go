// Package downstream holds the protocols the operation's activities speak to
// a downstream, one Kind each: today's HTTP API (the key as a header, status
// by client_reference) and a tool on another MCP server. A kind checks the
// catalog's settings of a downstream when the catalog loads, executes an
// operation and, when the catalog names a way, asks for its status; the
// activities turn its answers into the workflow's results and errors.
// Adding a kind is one file (its Check, Execute and Reconcile) and a
// Register call; the catalog loader and the activities need no change.
package downstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// Call is one call of an operation to its downstream.
type Call struct {
	// OperationID is the operation's id: its idempotency key and
	// client_reference on every attempt.
	OperationID string
	// Params is the JSON object of the bound and free params.
	Params json.RawMessage
	// Downstream is the operation's resolved downstream.
	Downstream plan.Downstream
	// HTTP sends the kind's requests.
	HTTP *http.Client
}

// Answer is a downstream's answer to a call.
type Answer struct {
	// StatusCode is the HTTP status (a kind without one answers 200 for a
	// result and 422 for a refusal), for metrics and logs; 0 when the call
	// got no answer.
	StatusCode int
	// Found reports, for Reconcile, whether the downstream has the operation.
	Found bool
	// Result is the downstream's record of the operation (JSON).
	Result json.RawMessage
}

// Refusal is a definite refusal by the downstream (errors.As): it executed
// nothing, and sending the same call again would be refused again. It
// carries the refusal as the workflow records it (status, code, message,
// and its Reason).
type Refusal struct {
	operation.BusinessRefusal
}

// Error describes the refusal.
func (r *Refusal) Error() string { return "refused by the downstream: " + r.Reason() }

// Sentinel errors of a call. Any other error means the outcome is unknown:
// the downstream may or may not have executed it.
var (
	// ErrNotSent means the call could not even be built: nothing was sent.
	ErrNotSent = errors.New("downstream: not sent")
	// ErrNoStatus means the downstream offers no way to ask for the status.
	ErrNoStatus = errors.New("downstream: no status endpoint")
)

// Kind is one protocol to a downstream.
type Kind interface {
	// Check checks, when the catalog loads, the settings of a downstream
	// of this kind, and fills those it derives from them (an MCP tool
	// honours the key exactly when it names its idempotency argument).
	// honors is honors_idempotency_key as the catalog wrote it, nil when
	// left out. Each problem names its setting, such as
	// "downstream.tool is required for kind mcp"; none means valid.
	Check(d *plan.Source, honors *bool) []string
	// Execute sends the operation. A definite refusal is a *Refusal, a call
	// that could not be built ErrNotSent; any other error is an unknown outcome.
	Execute(ctx context.Context, c Call) (Answer, error)
	// Reconcile asks whether the downstream has the operation (Answer.Found)
	// and its record. ErrNoStatus when there is no way to ask; any other
	// error proves nothing.
	Reconcile(ctx context.Context, c Call) (Answer, error)
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// Register makes k the kind named name (a catalog downstream's kind).
func Register(name string, k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	kinds[name] = k
}

// For returns the kind registered as name.
func For(name string) (Kind, error) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown downstream kind %q", ErrNotSent, name)
	}
	return k, nil
}

// Names returns the names of the registered kinds, sorted.
func Names() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return slices.Sorted(maps.Keys(kinds))
}

// withClientReference returns params (a JSON object, or empty) with
// client_reference set to id.
func withClientReference(params json.RawMessage, id string) ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(params); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, fmt.Errorf("%w: params are not a JSON object: %w", ErrNotSent, err)
		}
	}
	ref, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	obj["client_reference"] = ref
	return json.Marshal(obj)
}

// errorBody is the usual shape of a downstream's error answer: "error" is a
// code string ({"error":"insufficient_funds","message":"..."}) or an object
// ({"error":{"code":"...","message":"..."}}, as Stripe answers).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
}

// refusalOf reads the downstream's error code and message from a refusal's body.
func refusalOf(status int, body []byte) *Refusal {
	r := &Refusal{operation.BusinessRefusal{StatusCode: status}}
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		return r
	}
	r.Code, r.Message = eb.Code, eb.Message
	var code string
	if err := json.Unmarshal(eb.Error, &code); err == nil {
		if code != "" {
			r.Code = code
		}
		return r
	}
	var nested struct {
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(eb.Error, &nested); err == nil {
		switch {
		case nested.Code != "":
			r.Code = nested.Code
		case nested.Type != "" && r.Code == "":
			r.Code = nested.Type
		}
		if nested.Message != "" {
			r.Message = nested.Message
		}
	}
	return r
}
