package downstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/oncegate/oncegate/internal/plan"
)

// HeaderIdempotencyKey is the header carrying the operation id to an HTTP
// downstream.
const HeaderIdempotencyKey = "Idempotency-Key"

// maxBody bounds how much of a downstream answer is read.
const maxBody = 1 << 20

func init() { Register(plan.KindHTTP, HTTP{}) }

// HTTP is the kind of a JSON HTTP API: execute is a POST of the params plus
// client_reference with the header Idempotency-Key, status a GET
// ?client_reference=.
type HTTP struct{}

// Check refuses the settings of the other kinds (an MCP tool's) and takes
// honors_idempotency_key as written (false when left out).
func (HTTP) Check(d *plan.Source, honors *bool) []string {
	d.HonorsIdempotencyKey = honors != nil && *honors
	var problems []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"tool", d.Tool != ""}, {"idempotency_argument", d.IdempotencyArgument != ""}, {"status_tool", d.StatusTool != ""},
		{"status_arguments", len(d.StatusArguments) > 0}, {"auth_env", d.AuthEnv != ""}} {
		if f.set {
			problems = append(problems, "downstream."+f.name+" applies to kind mcp only")
		}
	}
	return problems
}

// Execute POSTs the params. A 2xx answer is the result; a 4xx other than
// 408, 429 and an "in use" 409 is a *Refusal; a 5xx, those 4xx or a
// transport error is an unknown outcome.
func (HTTP) Execute(ctx context.Context, c Call) (Answer, error) {
	body, err := withClientReference(c.Params, c.OperationID)
	if err != nil {
		return Answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Downstream.Endpoint.Execute, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderIdempotencyKey, c.OperationID)
	// Sent once: Go's http.Transport replays a request that carries an
	// Idempotency-Key header (net/http's isReplayable) when its reply is
	// lost on a reused keep-alive connection — a blind resend, a second
	// execution at a downstream that ignores the key. Without GetBody the
	// body cannot be rewound, so the transport never replays it; the
	// workflow decides what follows an unknown outcome.
	req.GetBody = nil
	status, respBody, err := send(c.HTTP, req)
	if err != nil {
		return Answer{}, err
	}
	switch {
	case status >= 200 && status < 300:
		return Answer{StatusCode: status, Result: asJSON(respBody)}, nil
	case status >= 400 && status < 500 && !retryable4xx(status, respBody):
		return Answer{StatusCode: status}, refusalOf(status, respBody)
	default:
		return Answer{StatusCode: status}, fmt.Errorf("downstream answered HTTP %d", status)
	}
}

// Reconcile GETs <status>?client_reference=<id>: 200 is found with the
// downstream's record, 404 not found; anything else proves nothing.
func (HTTP) Reconcile(ctx context.Context, c Call) (Answer, error) {
	if c.Downstream.Endpoint.Status == "" {
		return Answer{}, ErrNoStatus
	}
	u, err := url.Parse(c.Downstream.Endpoint.Status)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNoStatus, err)
	}
	q := u.Query()
	q.Set("client_reference", c.OperationID)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNoStatus, err)
	}
	req.Header.Set("Accept", "application/json")
	status, respBody, err := send(c.HTTP, req)
	if err != nil {
		return Answer{}, err
	}
	switch status {
	case http.StatusOK:
		return Answer{StatusCode: status, Found: true, Result: asJSON(respBody)}, nil
	case http.StatusNotFound:
		return Answer{StatusCode: status}, nil
	default:
		return Answer{StatusCode: status}, fmt.Errorf("status endpoint answered HTTP %d", status)
	}
}

// send sends req with client (http.DefaultClient when nil) and reads the answer.
func send(client *http.Client, req *http.Request) (int, []byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, body, nil
}

// asJSON returns body when it is JSON, else body as a JSON string (an empty
// body is nil).
func asJSON(body []byte) json.RawMessage {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if json.Valid(body) {
		return json.RawMessage(bytes.TrimSpace(body))
	}
	s, _ := json.Marshal(string(body))
	return s
}

// retryable4xx reports the 4xx answers that say "not now" rather than "no":
// 408 Request Timeout, 429 Too Many Requests, and a 409 telling that a
// request with the same Idempotency-Key is still being processed (Stripe's
// idempotency_key_in_use): refusing on it would report FAILED for an
// operation that may be executing.
func retryable4xx(status int, body []byte) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	case http.StatusConflict:
		switch refusalOf(status, body).Code {
		case "idempotency_key_in_use", "request_in_progress", "in_progress", "concurrent_request":
			return true
		}
	}
	return false
}
