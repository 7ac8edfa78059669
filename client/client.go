package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oncegate/oncegate/status"
)

// Defaults of a Client.
const (
	// DefaultAttempts is how many times one request is sent at most when the
	// gateway is unreachable or temporarily unavailable.
	DefaultAttempts = 5
	// DefaultBackoff is the first wait between attempts when the gateway
	// names no retry_after_ms; it doubles up to DefaultMaxBackoff.
	DefaultBackoff = 250 * time.Millisecond
	// DefaultMaxBackoff caps the wait between attempts, whatever
	// retry_after_ms says.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultRequestTimeout bounds one HTTP request; it is longer than the
	// gateway's confirm budget.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultPollAfter is Wait's interval when an answer names no poll_after_ms.
	DefaultPollAfter = time.Second
	// maxBody bounds the answer read from the gateway.
	maxBody = 4 << 20
)

// Client calls one oncegate gateway as one subject (its bearer token).
// It is safe for concurrent use.
type Client struct {
	base       *url.URL
	token      string
	http       *http.Client
	lang       string
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
	sleep      func(context.Context, time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc (its Timeout bounds one attempt).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithLanguage asks for meaning and instruction in lang (Accept-Language,
// such as "zh").
func WithLanguage(lang string) Option { return func(c *Client) { c.lang = lang } }

// WithRetry sets how many times one request is sent at most (1 disables
// retries) and the first wait between attempts when the gateway names none.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(c *Client) {
		c.attempts = max(attempts, 1)
		c.backoff = backoff
	}
}

// New returns a client of the gateway at baseURL (such as
// http://127.0.0.1:8080) that authenticates with the bearer token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new client: gateway URL %q is not an http(s) URL", baseURL)
	}
	if token == "" {
		return nil, fmt.Errorf("new client: %w: empty bearer token", ErrUnauthenticated)
	}
	c := &Client{
		base: u, token: token,
		http:     &http.Client{Timeout: DefaultRequestTimeout},
		attempts: DefaultAttempts, backoff: DefaultBackoff, maxBackoff: DefaultMaxBackoff,
		sleep: sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// policy says how one request is sent and how its answer is judged.
type policy struct {
	// once sends the request a single time: a request whose repetition is
	// not harmless to the caller (an operator's decision, an invitation)
	// is never sent again by the client.
	once bool
	// byCode judges an answer by its HTTP code: any 2xx is the call's
	// outcome, whatever its body (the ops routes, the tool definitions).
	// Otherwise the registry judges by the answer's status (the agent
	// routes), and a body without a known status is unexpected.
	byCode bool
}

// agentCalls is the policy of the agent routes: retried, judged by status.
var agentCalls = policy{}

// do sends one request, again while the gateway is unreachable or
// temporarily unavailable (the same body each time) unless p says once,
// and decodes the answer. A refusal is returned as an *Error, with the
// answer.
func (c *Client) do(ctx context.Context, method, path string, body any, p policy) (*Answer, error) {
	raw, err := encode(method, path, body)
	if err != nil {
		return nil, err
	}
	attempts := c.attempts
	if p.once {
		attempts = 1
	}
	wait := c.backoff
	for attempt := 1; ; attempt++ {
		a, err := c.send(ctx, method, path, raw)
		retry := false
		next := wait
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		case err != nil:
			retry = true
			err = unreachable(method, path, err)
		case isRetried(a.Status):
			retry = true
			if a.RetryAfterMS > 0 {
				next = a.RetryAfter()
			}
			err = errorOf(*a, method, path)
		case p.byCode && a.HTTPCode >= 200 && a.HTTPCode <= 299:
			return a, nil
		case p.byCode || isRefusal(a.Status):
			return a, errorOf(*a, method, path)
		default:
			return a, nil
		}
		if !retry || attempt >= attempts {
			return a, err
		}
		if serr := c.sleep(ctx, min(next, c.maxBackoff)); serr != nil {
			return a, fmt.Errorf("%s %s: %w (last: %w)", method, path, serr, err)
		}
		wait = min(wait*2, c.maxBackoff)
	}
}

// unreachable wraps a failed attempt of method path: it matches
// ErrUnreachable (once, however it was found).
func unreachable(method, path string, err error) error {
	if errors.Is(err, ErrUnreachable) {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return fmt.Errorf("%s %s: %w: %w", method, path, ErrUnreachable, err)
}

// send makes one attempt. An error is a transport failure, an answer that
// could not be read, or a 5xx that is no oncegate answer (a proxy's page:
// the gateway was not reached; the answer then comes back too, with its
// code and body, and the error is an *Error matching ErrUnreachable).
func (c *Client) send(ctx context.Context, method, path string, raw []byte) (*Answer, error) {
	req, err := c.request(ctx, method, path, raw)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil || a.Status == "" {
		a = Answer{HTTPCode: resp.StatusCode, Raw: body}
		if resp.StatusCode >= 500 {
			return &a, &Error{Answer: a, Method: method, Path: path, class: ErrUnreachable}
		}
		return &a, nil
	}
	a.HTTPCode = resp.StatusCode
	a.Replayed = resp.Header.Get(HeaderReplayed) == "true"
	a.Raw = body
	return &a, nil
}

// encode is the JSON body of the request method path (nil for a nil body).
func encode(method, path string, body any) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
	}
	return raw, nil
}

// request builds the request method path with the JSON body raw (nil:
// none), as the client's subject.
func (c *Client) request(ctx context.Context, method, path string, raw []byte) (*http.Request, error) {
	var rd io.Reader
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.lang != "" {
		req.Header.Set("Accept-Language", c.lang)
	}
	return req, nil
}

// HeaderReplayed is the header that marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isRetried reports whether the client sends the same request again after an
// answer of status s: the registry says the same request may be sent again
// (the gateway was temporarily unavailable, or the subject went over its
// rate and the answer names the wait).
func isRetried(s Status) bool {
	info, ok := status.Lookup(s)
	return ok && info.Retryable
}

// isTransient reports whether err is a failure that sending the same request
// again may cure: the gateway was unreachable, temporarily unavailable, or
// asked the subject to slow down.
func isTransient(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTemporarilyUnavailable) || errors.Is(err, ErrRateLimited)
}
