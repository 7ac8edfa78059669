package agentsim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/clientpool"
)

// answer is the part of a gateway answer the agents read.
type answer struct {
	// Code is the HTTP status code.
	Code int
	// Status is the answer's status.
	Status string
	// OperationID is the operation the answer is about.
	OperationID string
	// Fingerprint is the preview's fingerprint.
	Fingerprint string
	// PollAfterMS is the wait before polling.
	PollAfterMS int64
	// RetryAfterMS is the wait before retrying.
	RetryAfterMS int64
	// ResultRef is the business reference of a completed operation.
	ResultRef string
	// RecentOperation is the amnesia guard's identical recent operation.
	RecentOperation *recentOperation
}

// recentOperation is the part of an answer's recent_operation the agents read.
type recentOperation struct {
	// OperationID is the recent operation's id.
	OperationID string
	// State is its agent-facing state.
	State string
}

// errLost is an answer lost to the client timeout.
var errLost = errors.New("answer lost: client timeout")

// client talks to the gateway through the public client, one per token
// (one attempt per request: the agents retry as their script says), and
// to the downstream simulator itself.
type client struct {
	http *http.Client
	cfg  Config
	pool *clientpool.Pool
}

// newClient returns the client of cfg's gateway and simulator.
func newClient(cfg Config) *client {
	return &client{http: cfg.HTTPClient, cfg: cfg, pool: clientpool.New(cfg.GatewayURL, cfg.HTTPClient)}
}

// reachable checks that url answers at all.
func (c *client) reachable(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("probe %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// preview asks the gateway, as token, for a fingerprint of p for scope.
func (c *client) preview(ctx context.Context, token, scope string, p Params) (answer, error) {
	return c.call(ctx, token, c.cfg.RequestTimeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Preview(ctx, scope, p)
	})
}

// confirm sends one confirm of fp as token, cut by timeout; ack, when not
// empty, acknowledges that recent operation.
func (c *client) confirm(ctx context.Context, token, scope, fp string, p Params, ack string, timeout time.Duration) (answer, error) {
	return c.call(ctx, token, timeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Confirm(ctx, scope, fp, p, oncegate.AcknowledgeRepeatOf(ack))
	})
}

// status asks the status tool, as token, about operation id.
func (c *client) status(ctx context.Context, token, id string) (answer, error) {
	return c.call(ctx, token, c.cfg.RequestTimeout, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Status(ctx, id)
	})
}

// call sends one gateway request as token and returns its answer, a
// refusal's too. timeout bounds the call; a call cut by it returns
// errLost.
func (c *client) call(ctx context.Context, token string, timeout time.Duration,
	send func(context.Context, *oncegate.Client) (*oncegate.Answer, error)) (answer, error) {
	a, lost, err := c.pool.Call(ctx, token, timeout, send)
	var unread *oncegate.Error
	switch {
	case a != nil && a.Status != "":
		out := answer{Code: a.HTTPCode, Status: string(a.Status), OperationID: a.OperationID, Fingerprint: a.Fingerprint,
			PollAfterMS: a.PollAfterMS, RetryAfterMS: a.RetryAfterMS, ResultRef: a.ResultRef}
		if r := a.RecentOperation; r != nil {
			out.RecentOperation = &recentOperation{OperationID: r.OperationID, State: string(r.State)}
		}
		return out, nil
	case lost && ctx.Err() == nil:
		return answer{}, errLost
	case errors.As(err, &unread):
		return answer{}, fmt.Errorf("%s %s: HTTP %d without a status: %.200s", unread.Method, unread.Path, unread.HTTPCode, unread.Raw)
	default:
		return answer{}, err
	}
}

// executions asks the downstream simulator how many side effects ran for
// the operation ref.
func (c *client) executions(ctx context.Context, ref string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		c.cfg.DownstreamURL+"/_sim/executions?ref="+url.QueryEscape(ref), nil)
	if err != nil {
		return 0, fmt.Errorf("build executions request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("executions: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Count *int `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Count == nil {
		return 0, fmt.Errorf("executions: HTTP %d, no count", resp.StatusCode)
	}
	return *out.Count, nil
}

// operationIDOf returns the nonce of a fingerprint (the operation_id), or
// "" when fp is not a fingerprint.
func operationIDOf(fp string) string {
	payload, _, ok := strings.Cut(fp, ".")
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return ""
	}
	var p struct {
		N string `json:"n"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	return p.N
}
