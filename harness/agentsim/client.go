package agentsim

import (
	"bytes"
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
)

// answer is the part of a gateway answer the agents read.
type answer struct {
	// Code is the HTTP status code.
	Code int
	// Status is the answer's status.
	Status string `json:"status"`
	// OperationID is the operation the answer is about.
	OperationID string `json:"operation_id"`
	// Fingerprint is the preview's fingerprint.
	Fingerprint string `json:"fingerprint"`
	// PollAfterMS is the wait before polling.
	PollAfterMS int64 `json:"poll_after_ms"`
	// RetryAfterMS is the wait before retrying.
	RetryAfterMS int64 `json:"retry_after_ms"`
	// ResultRef is the business reference of a completed operation.
	ResultRef string `json:"result_ref"`
	// RecentOperation is the amnesia guard's identical recent operation.
	RecentOperation *struct {
		OperationID string `json:"operation_id"`
		State       string `json:"state"`
	} `json:"recent_operation"`
}

// errLost is an answer lost to the client timeout.
var errLost = errors.New("answer lost: client timeout")

// client talks to the gateway and the downstream simulator.
type client struct {
	http *http.Client
	cfg  Config
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

// gateway sends one request to the gateway with token and decodes the
// answer. timeout bounds the call; a call cut by it returns errLost.
func (c *client) gateway(ctx context.Context, method, path, token string, body any, timeout time.Duration) (answer, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return answer{}, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, method, c.cfg.GatewayURL+path, rd)
	if err != nil {
		return answer{}, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return answer{}, errLost
		}
		return answer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return answer{}, errLost
		}
		return answer{}, fmt.Errorf("read %s %s: %w", method, path, err)
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil || a.Status == "" {
		return answer{}, fmt.Errorf("%s %s: HTTP %d without a status: %.200s", method, path, resp.StatusCode, raw)
	}
	a.Code = resp.StatusCode
	return a, nil
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
