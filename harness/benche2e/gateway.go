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

	oncegate "github.com/oncegate/oncegate/client"
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

// gateway sends the benchmark's requests to oncegate through the public
// client, one attempt each: to each of its URLs in turn (the
// production-like profile runs two gateways behind what would be a load
// balancer). The measured phases send the client's requests themselves
// (client.Client.PreviewRequest, ...), to read each answer as it is.
type gateway struct {
	urls    []string
	token   string
	http    *http.Client
	clients []*oncegate.Client
	next    *atomic.Uint64
}

// newGateway returns the gateway of urls, as token's agent.
func newGateway(urls []string, token string, hc *http.Client) (gateway, error) {
	g := gateway{urls: urls, token: token, http: hc, next: new(atomic.Uint64)}
	for _, u := range urls {
		c, err := oncegate.New(u, token, oncegate.WithHTTPClient(hc), oncegate.WithRetry(1, 0))
		if err != nil {
			return gateway{}, fmt.Errorf("gateway %s: %w", u, err)
		}
		g.clients = append(g.clients, c)
	}
	return g, nil
}

// agent is the client of the gateway the next request goes to.
func (g gateway) agent() *oncegate.Client {
	return g.clients[int(g.next.Add(1)%uint64(len(g.clients)))]
}

// prebuilt returns the Request that sends, in turn, a copy of each
// gateway's request that build makes, built once here: the load generator
// encodes nothing per request, as the floors' requests do not. A request
// build cannot make is the error of every call.
func (g gateway) prebuilt(build func(context.Context, *oncegate.Client) (*http.Request, error)) Request {
	reqs := make([]*http.Request, len(g.clients))
	for i, c := range g.clients {
		r, err := build(context.Background(), c)
		if err != nil {
			return func(context.Context, int) (*http.Request, error) { return nil, err }
		}
		reqs[i] = r
	}
	return func(ctx context.Context, _ int) (*http.Request, error) {
		return copyOf(ctx, reqs[int(g.next.Add(1)%uint64(len(reqs)))])
	}
}

// copyOf is a copy of req, with its own body, to send with ctx.
func copyOf(ctx context.Context, req *http.Request) (*http.Request, error) {
	r := req.Clone(ctx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// transferParams are the params of a transfer to payee (the same shape for
// oncegate and for the bare workflow).
func transferParams(payee string) map[string]any {
	return map[string]any{"amount": "12.50", "currency": "USD", "payee_id": payee, "memo": "bench-e2e"}
}

// plainRequest builds a request to base that is no call of the gateway's
// API (a floor's route, the metrics page) with the bench identity and a
// JSON body (nil: none).
func (g gateway) plainRequest(ctx context.Context, base, method, path string, body []byte) (*http.Request, error) {
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

// previewBody is the body of a preview of params (a floor's request).
func previewBody(params map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"params": params})
	return b
}

// confirmBody is the body of a confirm of fp with params (a floor's request).
func confirmBody(fp string, params map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"fingerprint": fp, "params": params})
	return b
}

// preview asks for a fingerprint of params.
func (g gateway) preview(ctx context.Context, scope string, params map[string]any) (answer, []byte, error) {
	a, err := g.agent().Preview(ctx, scope, params)
	if a == nil {
		return answer{}, nil, err
	}
	if a.HTTPCode != http.StatusOK || a.Status != statusPreviewReady {
		return answer{}, nil, fmt.Errorf("preview %s: HTTP %d: %.300s", scope, a.HTTPCode, a.Raw)
	}
	return answer{Status: string(a.Status), Fingerprint: a.Fingerprint, OperationID: a.OperationID}, a.Raw, nil
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
		a, err := g.agent().Confirm(ctx, scope, c.fingerprint, params)
		if a == nil {
			return completed{}, err
		}
		if a.Status == statusAlreadyCompleted {
			c.replayBody = a.Raw
			break
		}
		if a.Status != statusCompleted && a.Status != statusInProgress {
			return completed{}, fmt.Errorf("confirm %s: HTTP %d: %.300s", scope, a.HTTPCode, a.Raw)
		}
		if time.Now().After(deadline) {
			return completed{}, fmt.Errorf("confirm %s: not completed after 60s: %.300s", scope, a.Raw)
		}
		if a.Status == statusInProgress {
			time.Sleep(100 * time.Millisecond)
		}
	}
	a, err := g.agent().Status(ctx, c.opID)
	if a == nil {
		return completed{}, err
	}
	if a.HTTPCode != http.StatusOK || a.Status != statusCompleted {
		return completed{}, fmt.Errorf("status %s: HTTP %d: %.300s", c.opID, a.HTTPCode, a.Raw)
	}
	c.statusBody = a.Raw
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
