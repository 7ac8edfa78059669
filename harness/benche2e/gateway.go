package benche2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Agent-facing statuses the benchmark expects (docs/contract.md §4).
const (
	statusPreviewReady     = "preview_ready"
	statusCompleted        = "completed"
	statusAlreadyCompleted = "already_completed"
	statusInProgress       = "in_progress"
)

// devToken is the dev identity the load runs as on the dev stack
// (deployments/tokens.dev.yaml); the production-like profile's is alice's
// token of its stack.env.
const devToken = "dev-alice"

// Scopes of the dev catalog the benchmark drives.
const (
	scopeTransfer = "payments.transfer"
	scopeLegacy   = "payments.legacy_transfer"
)

// answer is the part of an agent-facing body the benchmark reads.
type answer struct {
	Status      string `json:"status"`
	Fingerprint string `json:"fingerprint"`
	OperationID string `json:"operation_id"`
}

// gateway sends the benchmark's requests to oncegate: to each of its URLs
// in turn (the production-like profile runs two gateways behind what would
// be a load balancer).
type gateway struct {
	urls   []string
	token  string
	client *http.Client
	next   *atomic.Uint64
}

// newGateway returns the gateway of urls, as token's agent.
func newGateway(urls []string, token string, client *http.Client) gateway {
	return gateway{urls: urls, token: token, client: client, next: new(atomic.Uint64)}
}

// base is the URL the next request goes to.
func (g gateway) base() string {
	return g.urls[int(g.next.Add(1)%uint64(len(g.urls)))]
}

// transferParams are the params of a transfer to payee (the same shape for
// oncegate and for the bare workflow).
func transferParams(payee string) map[string]any {
	return map[string]any{"amount": "12.50", "currency": "USD", "payee_id": payee, "memo": "bench-e2e"}
}

// request builds a request to the next URL with the bench identity and a
// JSON body (nil: none).
func (g gateway) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	return g.requestTo(ctx, g.base(), method, path, body)
}

// requestTo is request to the gateway at base.
func (g gateway) requestTo(ctx context.Context, base, method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends one request and decodes the answer.
func (g gateway) do(ctx context.Context, method, path string, body []byte) (int, answer, []byte, error) {
	req, err := g.request(ctx, method, path, body)
	if err != nil {
		return 0, answer{}, nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, answer{}, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, answer{}, nil, err
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return resp.StatusCode, answer{}, raw, fmt.Errorf("%s %s: HTTP %d, not JSON: %.200s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, a, raw, nil
}

// previewBody is the body of a preview of params.
func previewBody(params map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"params": params})
	return b
}

// confirmBody is the body of a confirm of fp with params.
func confirmBody(fp string, params map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"fingerprint": fp, "params": params})
	return b
}

func previewPath(scope string) string { return "/v1/actions/" + scope + "/preview" }
func confirmPath(scope string) string { return "/v1/actions/" + scope + "/confirm" }
func statusPath(opID string) string   { return "/v1/operations/" + opID }

// preview asks for a fingerprint of params.
func (g gateway) preview(ctx context.Context, scope string, params map[string]any) (answer, []byte, error) {
	code, a, raw, err := g.do(ctx, http.MethodPost, previewPath(scope), previewBody(params))
	if err != nil {
		return answer{}, nil, err
	}
	if code != http.StatusOK || a.Status != statusPreviewReady {
		return answer{}, nil, fmt.Errorf("preview %s: HTTP %d: %.300s", scope, code, raw)
	}
	return a, raw, nil
}

// completed is one operation that finished, for the replay and status phases.
type completed struct {
	scope       string
	params      map[string]any
	fingerprint string
	opID        string
	replayBody  []byte
	statusBody  []byte
}

// complete previews and confirms params until the operation completed, then
// takes one replay and one status answer (their bodies size the floors).
func (g gateway) complete(ctx context.Context, scope string, params map[string]any) (completed, error) {
	p, _, err := g.preview(ctx, scope, params)
	if err != nil {
		return completed{}, err
	}
	c := completed{scope: scope, params: params, fingerprint: p.Fingerprint, opID: p.OperationID}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, a, raw, err := g.do(ctx, http.MethodPost, confirmPath(scope), confirmBody(c.fingerprint, params))
		if err != nil {
			return completed{}, err
		}
		if a.Status == statusAlreadyCompleted {
			c.replayBody = raw
			break
		}
		if a.Status != statusCompleted && a.Status != statusInProgress {
			return completed{}, fmt.Errorf("confirm %s: HTTP %d: %.300s", scope, code, raw)
		}
		if time.Now().After(deadline) {
			return completed{}, fmt.Errorf("confirm %s: not completed after 60s: %.300s", scope, raw)
		}
		if a.Status == statusInProgress {
			time.Sleep(100 * time.Millisecond)
		}
	}
	code, a, raw, err := g.do(ctx, http.MethodGet, statusPath(c.opID), nil)
	if err != nil {
		return completed{}, err
	}
	if code != http.StatusOK || a.Status != statusCompleted {
		return completed{}, fmt.Errorf("status %s: HTTP %d: %.300s", c.opID, code, raw)
	}
	c.statusBody = raw
	return c, nil
}

// expect is the Check of an answer that must have code and status.
func expect(code int, status string) Check {
	return func(got int, _ http.Header, body []byte) (string, error) {
		if got != code {
			return "", fmt.Errorf("want HTTP %d %s, got %d: %.300s", code, status, got, body)
		}
		if status != "" && !bytes.Contains(body, []byte(`"status":"`+status+`"`)) {
			return "", fmt.Errorf("want status %s: %.300s", status, body)
		}
		return status, nil
	}
}

// firstConfirmCheck accepts a first confirm's completed (200) or in_progress
// (202) and labels it with its status.
func firstConfirmCheck(got int, _ http.Header, body []byte) (string, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return "", fmt.Errorf("not JSON: %.300s", body)
	}
	switch {
	case got == http.StatusOK && a.Status == statusCompleted:
	case got == http.StatusAccepted && a.Status == statusInProgress:
	default:
		return "", fmt.Errorf("want completed or in_progress, got HTTP %d: %.300s", got, body)
	}
	return a.Status, nil
}

// metric reads one unlabelled gauge or counter from a Prometheus text page.
func metric(ctx context.Context, client *http.Client, url, name string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("metric %s not found at %s", name, url)
}
