package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/mcpserver"
	"github.com/oncegate/oncegate/internal/catalog"
)

const opID = "0123456789abcdef0123456789abcdef"

// seen is one call the fake gateway received.
type seen struct {
	method, path, auth, lang, body string
}

// fakeGateway answers canned JSON by tool and records what it received.
// Its Authenticate lets every token in unless strict (then only
// dev-alice's); its tools answer only dev-alice.
type fakeGateway struct {
	mu     sync.Mutex
	reqs   []seen
	strict bool
}

var _ mcpserver.Gateway = (*fakeGateway)(nil)

func (g *fakeGateway) Authenticate(_ context.Context, token string) error {
	if g.strict && token != "dev-alice" {
		return io.EOF
	}
	return nil
}

func (g *fakeGateway) Preview(_ context.Context, h http.Header, scope string, args []byte) mcpserver.Reply {
	return g.answer(h, seen{method: http.MethodPost, path: "/v1/actions/" + scope + "/preview", body: string(args)})
}

func (g *fakeGateway) Confirm(_ context.Context, h http.Header, scope string, args []byte) mcpserver.Reply {
	return g.answer(h, seen{method: http.MethodPost, path: "/v1/actions/" + scope + "/confirm", body: string(args)})
}

func (g *fakeGateway) Status(_ context.Context, h http.Header, id string) mcpserver.Reply {
	return g.answer(h, seen{method: http.MethodGet, path: "/v1/operations/" + id})
}

// answer records call and answers it as the gateway's route would.
func (g *fakeGateway) answer(h http.Header, call seen) mcpserver.Reply {
	call.auth, call.lang = h.Get("Authorization"), h.Get("Accept-Language")
	g.mu.Lock()
	g.reqs = append(g.reqs, call)
	g.mu.Unlock()
	reply := func(code int, body string) mcpserver.Reply { return mcpserver.Reply{Code: code, Body: []byte(body)} }
	if call.auth != "Bearer dev-alice" {
		return reply(http.StatusUnauthorized, `{"status":"unauthenticated","meaning":"m","instruction":"i","retryable":false,"trace_id":"t"}`)
	}
	switch {
	case call.method == http.MethodPost && call.path == "/v1/actions/payments.transfer/preview":
		return reply(http.StatusOK, `{"status":"preview_ready","meaning":"m","instruction":"i","retryable":false,"trace_id":"t","fingerprint":"fp.sig","expires_at":"2030-01-01T00:00:00Z","preview":{"amount":12.5}}`)
	case call.method == http.MethodPost && call.path == "/v1/actions/payments.transfer/confirm":
		if strings.Contains(call.body, `"tampered"`) {
			return reply(http.StatusUnprocessableEntity, `{"status":"param_mismatch","meaning":"m","instruction":"i","retryable":false,"trace_id":"t","operation_id":"`+opID+`"}`)
		}
		return reply(http.StatusAccepted, `{"status":"in_progress","meaning":"m","instruction":"i","retryable":false,"trace_id":"t","operation_id":"`+opID+`","poll_with":"get_operation_status","poll_after_ms":2000}`)
	case call.method == http.MethodGet && call.path == "/v1/operations/"+opID:
		return reply(http.StatusOK, `{"status":"completed","meaning":"m","instruction":"i","retryable":false,"trace_id":"t","operation_id":"`+opID+`","result":{"id":"tr_1"},"result_ref":"tr_1"}`)
	}
	return reply(http.StatusNotFound, `{"status":"not_found","meaning":"m","instruction":"i","retryable":false,"trace_id":"t"}`)
}

func (g *fakeGateway) last() seen {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reqs[len(g.reqs)-1]
}

// headerTransport adds headers to every request.
type headerTransport struct {
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func testCatalog() *catalog.Catalog {
	return &catalog.Catalog{Actions: map[string]*catalog.Action{
		"payments.transfer": {
			Scope:       "payments.transfer",
			Description: "Transfer money.",
			Bind: map[string]catalog.Field{
				"amount":   {Type: catalog.TypeDecimal, Required: true},
				"currency": {Type: catalog.TypeString, Required: true, Normalize: []string{"trim", "upper"}},
				"payee_id": {Type: catalog.TypeString, Required: true},
			},
			Free: map[string]catalog.FreeField{"memo": {}},
		},
	}}
}

func connect(t *testing.T, url string, header http.Header) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: headerTransport{header: header}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok)
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(text.Text), &fromText))
	assert.Equal(t, m, fromText)
	return m
}

func TestMCP(t *testing.T) {
	for _, stateful := range []bool{false, true} {
		name := "stateless"
		if stateful {
			name = "stateful"
		}
		t.Run(name, func(t *testing.T) {
			gw := &fakeGateway{}
			srv := httptest.NewServer(mcpserver.New(testCatalog(), gw, mcpserver.Options{Stateful: stateful}))
			t.Cleanup(srv.Close)
			cs := connect(t, srv.URL, http.Header{"Authorization": {"Bearer dev-alice"}, "Accept-Language": {"zh-CN"}})
			ctx := context.Background()

			t.Run("list tools and annotations", func(t *testing.T) {
				res, err := cs.ListTools(ctx, nil)
				require.NoError(t, err)
				byName := map[string]*mcp.Tool{}
				for _, tl := range res.Tools {
					byName[tl.Name] = tl
				}
				require.Len(t, byName, 3)
				confirm := byName["payments_transfer_confirm"]
				require.NotNil(t, confirm)
				require.NotNil(t, confirm.Annotations)
				require.NotNil(t, confirm.Annotations.DestructiveHint)
				assert.True(t, *confirm.Annotations.DestructiveHint)
				assert.True(t, confirm.Annotations.IdempotentHint)
				assert.False(t, confirm.Annotations.ReadOnlyHint)
				assert.Contains(t, confirm.Description, "fingerprint")
				schema := confirm.InputSchema.(map[string]any)
				assert.Equal(t, []any{"fingerprint", "params"}, schema["required"])
				for _, n := range []string{"payments_transfer_preview", "get_operation_status"} {
					require.NotNil(t, byName[n], n)
					require.NotNil(t, byName[n].Annotations)
					assert.True(t, byName[n].Annotations.ReadOnlyHint, n)
				}
			})

			t.Run("preview forwards the arguments verbatim", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Name:      "payments_transfer_preview",
					Arguments: json.RawMessage(`{"params":{"amount":12.50,"currency":" usd ","payee_id":"p-1","memo":"asap"}}`),
				})
				require.NoError(t, err)
				assert.False(t, res.IsError)
				a := structured(t, res)
				assert.Equal(t, "preview_ready", a["status"])
				assert.Equal(t, "fp.sig", a["fingerprint"])
				got := gw.last()
				assert.Equal(t, http.MethodPost, got.method)
				assert.Equal(t, "/v1/actions/payments.transfer/preview", got.path)
				assert.Equal(t, "Bearer dev-alice", got.auth)
				assert.Equal(t, "zh-CN", got.lang)
				assert.Contains(t, got.body, `"amount":12.50`, "the exact decimal text must reach the gateway")
			})

			t.Run("confirm", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Name: "payments_transfer_confirm",
					Arguments: map[string]any{
						"fingerprint":           "fp.sig",
						"params":                map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-1"},
						"acknowledge_repeat_of": opID,
					},
				})
				require.NoError(t, err)
				assert.False(t, res.IsError, "in_progress is not an error")
				a := structured(t, res)
				assert.Equal(t, "in_progress", a["status"])
				got := gw.last()
				assert.Equal(t, "/v1/actions/payments.transfer/confirm", got.path)
				var body map[string]any
				require.NoError(t, json.Unmarshal([]byte(got.body), &body))
				assert.Equal(t, "fp.sig", body["fingerprint"])
				assert.Equal(t, opID, body["acknowledge_repeat_of"])
				assert.Equal(t, "Bearer dev-alice", got.auth)
			})

			t.Run("status", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Name: "get_operation_status", Arguments: map[string]any{"operation_id": opID},
				})
				require.NoError(t, err)
				assert.False(t, res.IsError)
				assert.Equal(t, "completed", structured(t, res)["status"])
				got := gw.last()
				assert.Equal(t, http.MethodGet, got.method)
				assert.Equal(t, "/v1/operations/"+opID, got.path)
				assert.Equal(t, "Bearer dev-alice", got.auth)
			})

			t.Run("status with a malformed id asks nothing", func(t *testing.T) {
				before := len(gw.reqs)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Name: "get_operation_status", Arguments: map[string]any{"operation_id": "../ops"},
				})
				require.NoError(t, err)
				assert.True(t, res.IsError)
				body := structured(t, res)
				assert.Equal(t, "invalid_params", body["status"])
				problem := body["errors"].([]any)[0].(map[string]any)["problem"].(string)
				assert.Contains(t, problem, "十六进制", "the problem is in the caller's language (zh): %q", problem)
				assert.Len(t, gw.reqs, before)
			})

			t.Run("422 is an error", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Name: "payments_transfer_confirm",
					Arguments: map[string]any{
						"fingerprint": "fp.sig",
						"params":      map[string]any{"amount": "99999", "currency": "USD", "payee_id": "tampered"},
					},
				})
				require.NoError(t, err)
				assert.True(t, res.IsError)
				assert.Equal(t, "param_mismatch", structured(t, res)["status"])
			})
		})
	}
}

func TestGatewayRefusesToken(t *testing.T) {
	gw := &fakeGateway{}
	srv := httptest.NewServer(mcpserver.New(testCatalog(), gw, mcpserver.Options{}))
	t.Cleanup(srv.Close)
	cs := connect(t, srv.URL, http.Header{"Authorization": {"Bearer stolen"}})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "get_operation_status", Arguments: map[string]any{"operation_id": opID},
	})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "unauthenticated", structured(t, res)["status"])
	assert.Equal(t, "Bearer stolen", gw.last().auth)
}

func TestUnauthenticated(t *testing.T) {
	gw := &fakeGateway{strict: true}
	srv := httptest.NewServer(mcpserver.New(testCatalog(), gw, mcpserver.Options{}))
	t.Cleanup(srv.Close)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct{ name, auth, lang string }{
		{"no header", "", ""},
		{"not bearer", "Basic YTpi", ""},
		{"empty bearer", "Bearer ", ""},
		{"refused token", "Bearer nope", "zh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(init))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.lang != "" {
				req.Header.Set("Accept-Language", tc.lang)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			var a map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
			assert.Equal(t, "unauthenticated", a["status"])
			assert.NotEmpty(t, a["meaning"])
			assert.NotEmpty(t, a["instruction"])
			assert.Equal(t, false, a["retryable"])
			assert.NotEmpty(t, a["trace_id"])
		})
	}
	assert.Empty(t, gw.reqs)

	t.Run("good token passes", func(t *testing.T) {
		cs := connect(t, srv.URL, http.Header{"Authorization": {"Bearer dev-alice"}})
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.Len(t, res.Tools, 3)
	})
}
