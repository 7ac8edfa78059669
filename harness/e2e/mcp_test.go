package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// bearerTransport adds Authorization: Bearer <token> to every request
// (none when token is empty) and remembers the HTTP codes it saw.
type bearerTransport struct {
	token string
	next  http.RoundTripper
	mu    sync.Mutex
	codes []int
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		b.mu.Lock()
		b.codes = append(b.codes, resp.StatusCode)
		b.mu.Unlock()
	}
	return resp, err
}

func (b *bearerTransport) seen() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.codes)
}

// mcpConnect opens an MCP session to the stack's /mcp as token ("" for
// none) and returns the transport that saw the HTTP codes.
func mcpConnect(ctx context.Context, s *testenv.Stack, token string) (*mcp.ClientSession, *bearerTransport, error) {
	bt := &bearerTransport{token: token, next: http.DefaultTransport}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: bt}
	client := mcp.NewClient(&mcp.Implementation{Name: "oncegate-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.GatewayURL + "/mcp", HTTPClient: hc}, nil)
	return cs, bt, err
}

// structured decodes a tool result's structured content.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoErrorf(t, json.Unmarshal(raw, &m), "structured content: %s", raw)
	return m
}

// TestMCPEndToEnd drives the tools over MCP with the official SDK client
// against the real stack.
func TestMCPEndToEnd(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Without a token (or with an unknown one) the session cannot start.
	for _, token := range []string{"", "dev-nobody"} {
		_, bt, err := mcpConnect(ctx, s, token)
		require.Errorf(t, err, "an MCP session with token %q", token)
		codes := bt.seen()
		assert.NotEmptyf(t, codes, "token %q: no HTTP answer: %v", token, err)
		for _, code := range codes {
			assert.Equalf(t, http.StatusUnauthorized, code, "token %q: %v (codes %v)", token, err, codes)
		}
	}
	// The raw answer is the gateway's JSON 401.
	init := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}}
	ua := call(t, http.MethodPost, s.GatewayURL+"/mcp", "", init, "Accept", "application/json, text/event-stream")
	assert.Equal(t, http.StatusUnauthorized, ua.Code, ua.String())
	assert.Equal(t, "unauthenticated", ua.str("status"))

	cs, _, err := mcpConnect(ctx, s, "dev-alice")
	require.NoError(t, err)
	defer cs.Close()

	lt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tool := range lt.Tools {
		byName[tool.Name] = tool
	}
	want := []string{"payments_transfer_preview", "payments_transfer_confirm",
		"payments_legacy_transfer_preview", "payments_legacy_transfer_confirm", "get_operation_status"}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range want {
		tool, ok := byName[n]
		require.Truef(t, ok, "tool %s missing; have %v", n, names)
		assert.NotEmpty(t, tool.Description, n)
		assert.NotNil(t, tool.InputSchema, n)
		require.NotNilf(t, tool.Annotations, "%s has no annotations", n)
		switch n {
		case "payments_transfer_confirm", "payments_legacy_transfer_confirm":
			assert.Falsef(t, tool.Annotations.ReadOnlyHint, "%s read-only", n)
			if assert.NotNilf(t, tool.Annotations.DestructiveHint, "%s destructiveHint", n) {
				assert.Truef(t, *tool.Annotations.DestructiveHint, "%s destructive", n)
			}
		default:
			assert.Truef(t, tool.Annotations.ReadOnlyHint, "%s must be read-only", n)
		}
	}

	callTool := func(name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoErrorf(t, err, "call %s", name)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assertNoNumbers(t, raw, "MCP "+name)
		for _, c := range res.Content {
			if text, ok := c.(*mcp.TextContent); ok {
				assertNoNumbers(t, []byte(text.Text), "MCP text of "+name)
			}
		}
		return res, structured(t, res)
	}

	params := map[string]any{"amount": "42.10", "currency": "usd", "payee_id": "mcp-" + randomHex(4), "memo": "via mcp"}
	res, p := callTool("payments_transfer_preview", map[string]any{"params": params})
	require.Falsef(t, res.IsError, "preview: %v", p)
	require.Equal(t, "preview_ready", p["status"])
	fp, _ := p["fingerprint"].(string)
	opID, _ := p["operation_id"].(string)
	require.NotEmpty(t, fp)
	require.Len(t, opID, 32)
	assert.NotEmpty(t, res.Content, "the answer is also text content")

	res, c := callTool("payments_transfer_confirm", map[string]any{"fingerprint": fp, "params": params})
	require.Falsef(t, res.IsError, "confirm: %v", c)
	if c["status"] == "in_progress" {
		assert.Equal(t, "get_operation_status", c["poll_with"])
		deadline := time.Now().Add(60 * time.Second)
		for c["status"] == "in_progress" {
			require.Truef(t, time.Now().Before(deadline), "operation %s never finished: %v", opID, c)
			time.Sleep(250 * time.Millisecond)
			res, c = callTool("get_operation_status", map[string]any{"operation_id": opID})
			require.Falsef(t, res.IsError, "status: %v", c)
		}
	}
	require.Equalf(t, "completed", c["status"], "%v", c)
	ref, _ := c["result_ref"].(string)
	require.NotEmpty(t, ref)

	params["memo"] = "via mcp, again"
	res, r := callTool("payments_transfer_confirm", map[string]any{"fingerprint": fp, "params": params})
	require.Falsef(t, res.IsError, "replay: %v", r)
	assert.Equal(t, "already_completed", r["status"])
	assert.Equal(t, ref, r["result_ref"])
	assert.Equal(t, opID, r["operation_id"])

	res, st := callTool("get_operation_status", map[string]any{"operation_id": opID})
	require.False(t, res.IsError)
	assert.Equal(t, "completed", st["status"])
	assert.Equal(t, ref, st["result_ref"])

	mismatch := map[string]any{"amount": "4210", "currency": "USD", "payee_id": params["payee_id"]}
	res, pm := callTool("payments_transfer_confirm", map[string]any{"fingerprint": fp, "params": mismatch})
	assert.Truef(t, res.IsError, "param_mismatch must be a tool error: %v", pm)
	assert.Equal(t, "param_mismatch", pm["status"])

	// A decimal sent as a JSON number is answered as a string.
	res, n := callTool("payments_transfer_preview", map[string]any{"params": map[string]any{"amount": 42.1, "currency": "USD", "payee_id": "mcp-n"}})
	require.Falsef(t, res.IsError, "preview with a number: %v", n)
	assert.Equal(t, "42.1", n["preview"].(map[string]any)["params"].(map[string]any)["amount"])

	// A constraint violation is a tool error naming field and rule, in Chinese too.
	res, ip := callTool("payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "12.505", "currency": "USD", "payee_id": "p-\u200b3"}})
	assert.True(t, res.IsError)
	assert.Equal(t, "invalid_params", ip["status"])
	assert.Equal(t, false, ip["retryable"])
	rules := map[string]string{}
	for _, e := range ip["errors"].([]any) {
		m := e.(map[string]any)
		rules[m["field"].(string)] = m["rule"].(string)
	}
	assert.Equal(t, map[string]string{"amount": "scale", "payee_id": "identifier"}, rules)

	res, uo := callTool("get_operation_status", map[string]any{"operation_id": randomHex(16)})
	assert.True(t, res.IsError)
	assert.Equal(t, "unknown_operation", uo["status"])

	assert.Equal(t, 1, executions(t, s, opID))
}
