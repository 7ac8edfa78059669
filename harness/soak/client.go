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
	"net/url"
	"sync/atomic"
	"time"

	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/clientpool"
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

// client sends the agents' and the audit's requests to the gateways
// through the public client (one per token, never retrying: the agents
// retry as their script says) and counts them; it sends the simulator's
// requests itself. Its HTTP client spreads the gateway requests over the
// gateways as a round-robin load balancer does (balancer).
type client struct {
	// http sends the gateway requests, through the balancer.
	http *http.Client
	// plain sends the other requests to the URL they name.
	plain         *http.Client
	gatewayURLs   []string
	downstreamURL string
	requests      atomic.Int64
	// pool holds the public client of each token (the balancer sends
	// their requests to every gateway in turn).
	pool *clientpool.Pool
}

// newClient returns a client of the stack's gateways and simulator;
// tlsConfig, when not nil, is its TLS configuration (the gateways serve
// HTTPS).
func newClient(gatewayURLs []string, downstreamURL string, tlsConfig *tls.Config) *client {
	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, TLSClientConfig: tlsConfig}
	balanced := &http.Client{Transport: newBalancer(gatewayURLs, transport)}
	return &client{
		http:          balanced,
		plain:         &http.Client{Transport: transport},
		gatewayURLs:   gatewayURLs,
		downstreamURL: downstreamURL,
		pool:          clientpool.New(gatewayURLs[0], balanced),
	}
}

// preview asks a gateway, as token, for a fingerprint of params.
func (c *client) preview(ctx context.Context, token, scope string, params map[string]any) (answer, error) {
	return c.call(ctx, token, requestTimeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Preview(ctx, scope, params)
	})
}

// confirm sends a confirm of fp, as token, with the given client timeout;
// ack, when not empty, acknowledges that recent operation.
func (c *client) confirm(ctx context.Context, token, scope, fp string, params map[string]any, ack string, timeout time.Duration) (answer, error) {
	return c.call(ctx, token, timeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Confirm(ctx, scope, fp, params, oncegate.AcknowledgeRepeatOf(ack))
	})
}

// status asks the status tool, as token, about operation id.
func (c *client) status(ctx context.Context, token, id string) (answer, error) {
	return c.call(ctx, token, requestTimeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Status(ctx, id)
	})
}

// call sends one gateway request as token, cut by timeout, and returns its
// answer as the soak records it: any answer with a status, a refusal's
// too. A timeout is errLost; a body that is not a JSON object with a
// status is errMalformed (with the answer's code).
func (c *client) call(ctx context.Context, token string, timeout time.Duration,
	send func(context.Context, *oncegate.Client) (*oncegate.Answer, error)) (answer, error) {
	c.requests.Add(1)
	a, lost, err := c.pool.Call(ctx, token, timeout, send)
	return recorded(a, lost, err)
}

// recorded is the soak's record of the public client's answer a and error
// err to a request; lost says its timeout cut it.
func recorded(a *oncegate.Answer, lost bool, err error) (answer, error) {
	var refused *oncegate.Error
	switch {
	case a != nil && a.Status != "":
		return answerOf(a), nil
	case errors.As(err, &refused):
		return answer{Code: refused.HTTPCode}, fmt.Errorf("%w: HTTP %d %.200s", errMalformed, refused.HTTPCode, refused.Raw)
	case lost:
		return answer{}, errLost
	default:
		return answer{}, err
	}
}

// answerOf is the part of a the soak records.
func answerOf(a *oncegate.Answer) answer {
	out := answer{Code: a.HTTPCode, Status: string(a.Status), OperationID: a.OperationID, Retryable: a.Retryable,
		Fingerprint: a.Fingerprint, ResultRef: a.ResultRef, FailureKind: a.FailureKind, PollAfterMS: a.PollAfterMS,
		RetryAfterMS: a.RetryAfterMS}
	if a.RecentOperation != nil {
		out.RecentOperation = &struct {
			OperationID string `json:"operation_id"`
		}{OperationID: a.RecentOperation.OperationID}
	}
	return out
}

// resolve sends an operator's decision about operation id as token; a
// refusal is an error naming its status.
func (c *client) resolve(ctx context.Context, token, id string, r oncegate.Resolution) error {
	c.requests.Add(1)
	o, err := c.pool.Operator(token)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = o.Resolve(ctx, id, r)
	if refused := (*oncegate.Error)(nil); errors.As(err, &refused) {
		return fmt.Errorf("resolve %s: %s (HTTP %d)", id, refused.Status, refused.HTTPCode)
	}
	return err
}

// tools returns the gateway's tool definitions in format, as token.
func (c *client) tools(ctx context.Context, token, format string) ([]byte, error) {
	gw, err := c.pool.Agent(token)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return gw.Tools(ctx, format)
}

// do sends one request to url (the simulator, a health check) and returns
// the body and the HTTP status code.
func (c *client) do(ctx context.Context, method, url string, body any, timeout time.Duration) ([]byte, int, error) {
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
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.plain.Do(req)
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

// balancer is the soak's load balancer in front of the gateways: each
// request goes to the next gateway in turn, whatever URL it names, and a
// connection that cannot be opened (that gateway is down, nothing was
// sent) goes on to the next one, as a load balancer's retry of a failed
// connect does.
type balancer struct {
	gateways []*url.URL
	turn     atomic.Uint64
	next     http.RoundTripper
}

// newBalancer returns the balancer of gatewayURLs over next.
func newBalancer(gatewayURLs []string, next http.RoundTripper) *balancer {
	b := &balancer{next: next}
	for _, g := range gatewayURLs {
		u, err := url.Parse(g)
		if err != nil {
			panic(fmt.Sprintf("soak: gateway URL %q: %v", g, err))
		}
		b.gateways = append(b.gateways, u)
	}
	return b
}

// RoundTrip sends req to the next gateway that accepts a connection.
func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	first := b.turn.Add(1)
	var (
		resp *http.Response
		err  error
	)
	for i := range uint64(len(b.gateways)) {
		g := b.gateways[(first+i)%uint64(len(b.gateways))]
		r := req.Clone(req.Context())
		r.URL.Scheme, r.URL.Host, r.Host = g.Scheme, g.Host, ""
		// A connection that could not be opened read nothing of the
		// body: the next gateway gets all of it.
		resp, err = b.next.RoundTrip(r)
		if !refused(err) {
			break
		}
	}
	return resp, err
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
	raw, code, err := c.do(ctx, method, c.downstreamURL+path, body, requestTimeout)
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
