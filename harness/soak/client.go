package soak

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// answer is the part of a gateway answer the agents and the audit read.
type answer struct {
	// Code is the HTTP status code.
	Code int `json:"code"`
	// Status is the answer's status.
	Status string `json:"status"`
	// OperationID is the operation the answer is about.
	OperationID string `json:"operation_id,omitempty"`
	// Retryable is the answer's retryable.
	Retryable bool `json:"retryable"`
	// Fingerprint is a preview's fingerprint.
	Fingerprint string `json:"fingerprint,omitempty"`
	// ResultRef is the business reference of a completed operation.
	ResultRef string `json:"result_ref,omitempty"`
	// FailureKind says how a failure is known.
	FailureKind string `json:"failure_kind,omitempty"`
	// PollAfterMS is the wait before polling.
	PollAfterMS int64 `json:"poll_after_ms,omitempty"`
	// RetryAfterMS is the wait before retrying.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// RecentOperation is the amnesia guard's identical recent operation.
	RecentOperation *struct {
		OperationID string `json:"operation_id"`
	} `json:"recent_operation,omitempty"`
}

// errLost is an answer lost to the client's timeout.
var errLost = errors.New("answer lost: client timeout")

// errMalformed is an HTTP answer that is not a JSON body with a status.
var errMalformed = errors.New("answer without a JSON status")

// client sends the agents' and the audit's requests; it counts them. It
// spreads the gateway requests over the gateways as a round-robin load
// balancer does.
type client struct {
	http          *http.Client
	gatewayURLs   []string
	downstreamURL string
	requests      atomic.Int64
	next          atomic.Uint64
}

// newClient returns a client of the stack's gateways and simulator;
// tlsConfig, when not nil, is its TLS configuration (the gateways serve
// HTTPS).
func newClient(gatewayURLs []string, downstreamURL string, tlsConfig *tls.Config) *client {
	return &client{
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
			TLSClientConfig: tlsConfig}},
		gatewayURLs:   gatewayURLs,
		downstreamURL: downstreamURL,
	}
}

// gateway sends one request to a gateway as token with the given client
// timeout, to each gateway in turn; a connection that cannot be opened
// (that gateway is down, nothing was sent) goes on to the next one, as a
// load balancer's retry of a failed connect does. A timeout is errLost; a
// body that is not a JSON object with a status is errMalformed (with the
// answer's code).
func (c *client) gateway(ctx context.Context, method, path, token string, body any, timeout time.Duration) (answer, error) {
	c.requests.Add(1)
	first := c.next.Add(1)
	var (
		raw  []byte
		code int
		err  error
	)
	for i := range uint64(len(c.gatewayURLs)) {
		raw, code, err = c.do(ctx, method, c.gatewayURLs[(first+i)%uint64(len(c.gatewayURLs))]+path, token, body, timeout)
		if !refused(err) {
			break
		}
	}
	if err != nil {
		return answer{}, err
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil || a.Status == "" {
		return answer{Code: code}, fmt.Errorf("%w: HTTP %d %.200s", errMalformed, code, raw)
	}
	a.Code = code
	return a, nil
}

// do sends one request and returns the body and the HTTP status code.
func (c *client) do(ctx context.Context, method, url, token string, body any, timeout time.Duration) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("build request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var raw []byte
		if raw, err = io.ReadAll(resp.Body); err == nil {
			return raw, resp.StatusCode, nil
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, 0, errLost
	}
	return nil, 0, fmt.Errorf("%s %s: %w", method, url, err)
}

// refused reports a connection that could not be opened: the request was
// never sent.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// downstreamJSON sends one request to the simulator and decodes its JSON
// answer into out (when out is not nil); it returns the HTTP status code.
func (c *client) downstreamJSON(ctx context.Context, method, path string, body, out any) (int, error) {
	raw, code, err := c.do(ctx, method, c.downstreamURL+path, "", body, requestTimeout)
	if err != nil {
		return 0, err
	}
	if out != nil && code < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			return code, fmt.Errorf("decode %s: %w", path, err)
		}
	}
	return code, nil
}

// executions asks the simulator how many side effects ran for ref.
func (c *client) executions(ctx context.Context, ref string) (int, error) {
	var out struct {
		Count int `json:"count"`
	}
	code, err := c.downstreamJSON(ctx, http.MethodGet, "/_sim/executions?ref="+ref, nil, &out)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("executions of %s: HTTP %d", ref, code)
	}
	return out.Count, nil
}
