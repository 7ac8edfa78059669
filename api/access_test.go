package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

func TestDecideAccess(t *testing.T) {
	t.Parallel()
	agent := auth.Identity{Subject: "alice", Role: auth.RoleAgent}
	operator := auth.Identity{Subject: "ops", Role: auth.RoleOperator}
	oidcAgent := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp", Scopes: []string{"oncegate:agent"}}
	oidcOperator := auth.Identity{Subject: "ops", Role: auth.RoleOperator, Issuer: "https://idp"}
	for _, tc := range []struct {
		name          string
		id            auth.Identity
		kind          routeKind
		operatorScope string
		want          access
	}{
		{"an agent on its route", agent, agentRoute, "", access{}},
		{"an operator on an agent's route", operator, agentRoute, "", access{refusal: status.Forbidden, detail: detailOperatorNotAgent}},
		{"an OIDC operator on an agent's route", oidcOperator, agentRoute, "oncegate:operator", access{refusal: status.Forbidden, detail: detailOperatorNotAgent}},
		{"an operator on an ops route", operator, opsRoute, "", access{}},
		{"an OIDC operator on an ops route", oidcOperator, opsRoute, "oncegate:operator", access{}},
		{"an agent on an ops route", agent, opsRoute, "", access{refusal: status.Forbidden}},
		{"a token-file agent on an ops route, operators by scope", agent, opsRoute, "oncegate:operator", access{refusal: status.Forbidden}},
		{"an OIDC agent on an ops route, operators by role", oidcAgent, opsRoute, "", access{refusal: status.Forbidden}},
		{"an OIDC agent on an ops route, operators by scope", oidcAgent, opsRoute, "oncegate:operator",
			access{refusal: status.InsufficientScope, scope: "oncegate:operator"}},
	} {
		assert.Equal(t, tc.want, decideAccess(tc.id, tc.kind, tc.operatorScope), tc.name)
	}
}

func TestEveryTokenReasonHasADetail(t *testing.T) {
	t.Parallel()
	for _, r := range auth.Reasons() {
		assert.NotEmpty(t, tokenDetails[r], r)
		assert.NotEmpty(t, r.Description(), r)
	}
}

// authFunc is an Authenticator of a function.
type authFunc func(ctx context.Context, token string) (auth.Identity, error)

func (f authFunc) Authenticate(ctx context.Context, token string) (auth.Identity, error) {
	return f(ctx, token)
}

// tokenTable authenticates the tokens of a table: an identity, or an error.
func tokenTable(ids map[string]auth.Identity, errs map[string]error) authFunc {
	return func(_ context.Context, token string) (auth.Identity, error) {
		if id, ok := ids[token]; ok {
			return id, nil
		}
		if err, ok := errs[token]; ok {
			return auth.Identity{}, err
		}
		return auth.Identity{}, &auth.TokenError{Reason: auth.ReasonUnknown}
	}
}

func TestRoutesByRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-ops", `{"params":`+transferParams+`}`)
	assert.Equal(t, http.StatusForbidden, r.code)
	assert.Equal(t, status.Forbidden, r.status())
	assert.Contains(t, r.str("meaning"), "operator never previews, confirms or reads an operation for a subject")
	r = b.do(t, "GET", "/v1/operations/0123456789abcdef0123456789abcdef", "dev-ops", "")
	assert.Equal(t, status.Forbidden, r.status(), "an operator reads an operation on the ops route, not the agent's")
	r = b.do(t, "GET", "/v1/ops/operations?state=in_flight", "dev-alice", "")
	assert.Equal(t, status.Forbidden, r.status())
	assert.Contains(t, r.str("meaning"), "This endpoint is for operators")
	r = b.do(t, "GET", "/v1/ops/operations?state=in_flight", "dev-ops", "")
	assert.Equal(t, http.StatusOK, r.code, r.raw)
	writes := b.store.Counts().Writes
	assert.Zero(t, writes)
}

// examplePublicURL is the gateway's public URL of oidcConfig.
func examplePublicURL(d *gateway.Deps) { d.Config.PublicURL = "https://gateway.example" }

// oidcConfig is an OIDC configuration whose operators are those granted
// the scope oncegate:operator, and whose MCP endpoint needs oncegate:mcp.
func oidcConfig(o *Options) {
	o.Config.OIDC = OIDCConfig{Issuers: []string{"https://idp.example"}, Audience: "https://gateway.example/v1",
		RolesClaim: "scp", OperatorRole: "oncegate:operator", MCPScopes: []string{"oncegate:mcp"}}
}

func TestRefusedTokensAreAnsweredTruthfully(t *testing.T) {
	t.Parallel()
	oidcAgent := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example", Client: "agent-app", Scopes: []string{"payments"}}
	b := setupWith(t, func(o *Options) {
		oidcConfig(o)
		o.Authenticator = tokenTable(map[string]auth.Identity{"agent": oidcAgent}, map[string]error{
			"expired":  fmt.Errorf("%w: %w", auth.ErrUnauthenticated, &auth.TokenError{Reason: auth.ReasonExpired, Err: errors.New("exp")}),
			"audience": &auth.TokenError{Reason: auth.ReasonAudience},
			"down":     fmt.Errorf("%w: keys not fetched", auth.ErrProviderUnavailable),
		})
	}, examplePublicURL)
	preview := `{"params":` + transferParams + `}`
	for _, tc := range []struct {
		name, token, path string
		code              int
		st                status.Status
		challenge         string
		meaning           string
	}{
		{"no token", "", "/v1/actions/payments.transfer/preview", 401, status.Unauthenticated,
			`Bearer realm="oncegate"`, "no bearer token"},
		{"an expired token", "expired", "/v1/actions/payments.transfer/preview", 401, status.Unauthenticated,
			`Bearer realm="oncegate", error="invalid_token", error_description="the token has expired"`, "the token has expired"},
		{"a token for another resource", "audience", "/v1/actions/payments.transfer/preview", 401, status.Unauthenticated,
			`Bearer realm="oncegate", error="invalid_token", error_description="the token is not meant for this resource (audience)"`, "issued for another resource"},
		{"an unknown token", "nope", "/v1/actions/payments.transfer/preview", 401, status.Unauthenticated,
			`Bearer realm="oncegate", error="invalid_token", error_description="the token is not known"`, "the token is not known"},
		{"the provider is unreachable", "down", "/v1/actions/payments.transfer/preview", 503, status.TemporarilyUnavailable,
			"", "identity provider that issued the token cannot be reached"},
		{"an agent's token on an ops route, operators by scope", "agent", "/v1/ops/operations?state=in_flight", 403, status.InsufficientScope,
			`Bearer realm="oncegate", error="insufficient_scope", error_description="the token lacks the scope this request needs", scope="oncegate:operator"`, "(oncegate:operator)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := preview
			method := "POST"
			if tc.path != "/v1/actions/payments.transfer/preview" {
				method, body = "GET", ""
			}
			r := b.do(t, method, tc.path, tc.token, body)
			assert.Equal(t, tc.code, r.code, r.raw)
			assert.Equal(t, tc.st, r.status())
			assert.Equal(t, tc.challenge, r.header.Get("WWW-Authenticate"))
			assert.Contains(t, r.str("meaning"), tc.meaning)
			info, _ := status.Lookup(tc.st)
			assert.Equal(t, info.Retryable, r.body["retryable"])
			if tc.st == status.TemporarilyUnavailable {
				assert.Equal(t, "1", r.header.Get("Retry-After"))
			}
		})
	}
	r := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "expired", preview, "Accept-Language", "zh")
	assert.Contains(t, r.str("meaning"), "令牌已过期")
	writes, reads := b.store.Counts().Writes, b.store.Counts().Reads
	assert.Zero(t, writes+reads, "a refused token touches nothing")
	r = b.do(t, "POST", "/v1/actions/payments.transfer/preview", "agent", preview)
	assert.Equal(t, status.PreviewReady, r.status(), "the OIDC agent itself is served")
}

func TestMCPResourceServer(t *testing.T) {
	t.Parallel()
	mcpAgent := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example", Scopes: []string{"oncegate:mcp"}}
	noScope := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example"}
	restAgent := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example", Scopes: []string{"oncegate:mcp"}}
	b := setupWith(t, func(o *Options) {
		oidcConfig(o)
		// The REST API knows only the REST token, the MCP endpoint only the
		// MCP tokens: each audience its own.
		o.Authenticator = tokenTable(map[string]auth.Identity{"rest": restAgent}, nil)
		o.MCPAuthenticator = tokenTable(map[string]auth.Identity{"mcp": mcpAgent, "mcp-noscope": noScope},
			map[string]error{"rest": &auth.TokenError{Reason: auth.ReasonAudience}})
	}, examplePublicURL)
	srv := httptest.NewServer(b.srv.Handler())
	t.Cleanup(srv.Close)
	const metadataURL = "https://gateway.example/.well-known/oauth-protected-resource/mcp"

	t.Run("protected-resource metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			res, err := http.Get(srv.URL + path)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.NewDecoder(res.Body).Decode(&doc))
			_ = res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode, path)
			assert.Equal(t, "https://gateway.example/mcp", doc["resource"], path)
			assert.Equal(t, []any{"https://idp.example"}, doc["authorization_servers"], path)
			assert.Equal(t, []any{"oncegate:mcp"}, doc["scopes_supported"], path)
		}
	})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name, token string
		code        int
		st          status.Status
		challenge   string
	}{
		{"no token", "", 401, status.Unauthenticated, `Bearer realm="oncegate", resource_metadata="` + metadataURL + `"`},
		{"a REST token", "rest", 401, status.Unauthenticated, `Bearer realm="oncegate", resource_metadata="` + metadataURL +
			`", error="invalid_token", error_description="the token is not meant for this resource (audience)"`},
		{"a token without the MCP scope", "mcp-noscope", 403, status.InsufficientScope, `Bearer realm="oncegate", resource_metadata="` + metadataURL +
			`", error="insufficient_scope", error_description="the token lacks the scope this request needs", scope="oncegate:mcp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, "POST", "/mcp", tc.token, init, "Accept", "application/json, text/event-stream")
			assert.Equal(t, tc.code, r.code, r.raw)
			assert.Equal(t, tc.st, r.status())
			assert.Equal(t, tc.challenge, r.header.Get("WWW-Authenticate"))
		})
	}
	t.Run("an MCP token on the REST API", func(t *testing.T) {
		r := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "mcp", `{"params":`+transferParams+`}`)
		assert.Equal(t, status.Unauthenticated, r.status())
	})
	t.Run("an MCP token calls a tool as its identity", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hc := &http.Client{Transport: bearerTransport("mcp")}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc}, nil)
		require.NoError(t, err)
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "payments_transfer_preview",
			Arguments: json.RawMessage(`{"params":` + transferParams + `}`)})
		require.NoError(t, err)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.False(t, res.IsError, string(raw))
		assert.Contains(t, string(raw), `"status":"preview_ready"`, "the REST authenticator never saw the MCP token")
		var out struct {
			Fingerprint string `json:"fingerprint"`
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		p, err := b.keys.Parse(out.Fingerprint)
		require.NoError(t, err)
		assert.Equal(t, "alice", p.Subject, "the fingerprint is bound to the MCP token's subject")
	})
}

// bearerTransport sends every request with a bearer token.
type bearerTransport string

func (tok bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}

// unready is an authenticator whose identity provider's keys are missing.
type unready struct{ authFunc }

func (unready) Ready(context.Context) error {
	return fmt.Errorf("%w: keys not fetched yet", auth.ErrProviderUnavailable)
}

func TestReadyzWaitsForTheIdentityProvidersKeys(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(o *Options) { o.Authenticator = auth.Chain{unready{tokenTable(nil, nil)}} })
	r := b.do(t, "GET", "/readyz", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
	assert.Equal(t, status.NotReady, r.status())
	assert.Equal(t, "unreachable", r.str("identity_provider"))
	assert.Equal(t, "ok", r.str("postgres"))
	assert.Contains(t, r.str("meaning"), "keys of an identity provider")
	r = setup(t).do(t, "GET", "/readyz", "", "")
	assert.Equal(t, status.Ready, r.status(), "the token file needs no provider")
}

// TestActionScopes: an action that names a scope (catalog auth.scope) is
// refused insufficient_scope, with the challenge naming the scope, to a
// token granted other scopes, on preview, confirm and status alike, and
// nothing is read or written; a token granted it, or one without scopes
// (the token file), goes on.
func TestActionScopes(t *testing.T) {
	t.Parallel()
	granted := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example", Scopes: []string{"payments:transfer"}}
	other := auth.Identity{Subject: "alice", Role: auth.RoleAgent, Issuer: "https://idp.example", Scopes: []string{"payments:read"}}
	b := setupWith(t, func(o *Options) {
		o.Authenticator = auth.Chain{tokenTable(map[string]auth.Identity{"granted": granted, "other": other}, nil), o.Authenticator}
	})
	b.cat.Actions["payments.transfer"].Auth.Scope = "payments:transfer"
	refused := func(r resp) {
		t.Helper()
		assert.Equal(t, http.StatusForbidden, r.code, r.raw)
		assert.Equal(t, status.InsufficientScope, r.status())
		assert.Contains(t, r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		assert.Contains(t, r.header.Get("WWW-Authenticate"), `scope="payments:transfer"`)
	}
	before := b.store.Counts()
	refused(b.do(t, "POST", "/v1/actions/payments.transfer/preview", "other", `{"params":`+transferParams+`}`))
	pv := b.preview(t, "granted", "payments.transfer", transferParams)
	refused(b.confirm(t, "other", "payments.transfer", pv.str("fingerprint"), transferParams))
	assert.Equal(t, before.Writes, b.store.Counts().Writes, "a refused scope claims nothing")
	assert.Zero(t, b.started())
	r := b.confirm(t, "granted", "payments.transfer", pv.str("fingerprint"), transferParams)
	require.Equal(t, status.Completed, r.status(), r.raw)
	refused(b.do(t, "GET", "/v1/operations/"+pv.str("operation_id"), "other", ""))
	assert.Equal(t, status.Completed, b.do(t, "GET", "/v1/operations/"+pv.str("operation_id"), "granted", "").status())
	assert.Equal(t, status.PreviewReady, b.preview(t, "dev-alice", "payments.transfer", `{"amount":"1.00","currency":"USD","payee_id":"p-9"}`).status(),
		"a token without scopes is not checked")
}
