package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/hydra"
	"github.com/oncegate/oncegate/harness/testenv"
)

// The scopes and audiences of the OIDC stack: Hydra grants operators the
// scope oncegate:operator (the gateway reads the roles from scp), the MCP
// endpoint needs oncegate:mcp, and the REST API's audience is its own.
const (
	oidcRESTAudience = "http://oncegate.test/v1"
	scopeOperator    = "oncegate:operator"
	scopeMCP         = "oncegate:mcp"
)

// oidcStack is a stack whose gateway accepts the tokens of a real Hydra.
type oidcStack struct {
	*testenv.Stack
	h *hydra.Hydra
	// mcpResource is the MCP endpoint's canonical URI (the gateway's
	// public URL, localhost, + /mcp).
	mcpResource            string
	agent, operator, noMCP hydra.Client
}

// startOIDCStack starts Hydra, then the stack with the gateway pointed at
// it, then the clients (their audiences name the stack's MCP resource).
func startOIDCStack(t *testing.T, ctx context.Context) *oidcStack {
	t.Helper()
	h, err := hydra.Start(ctx, hydra.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(h.Stop)
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{
		"ONCEGATE_OIDC_ISSUER=" + h.Issuer, "ONCEGATE_OIDC_AUDIENCE=" + oidcRESTAudience,
		"ONCEGATE_OIDC_ROLES_CLAIM=scp", "ONCEGATE_OIDC_OPERATOR_ROLE=" + scopeOperator, "ONCEGATE_MCP_SCOPES=" + scopeMCP,
		"ONCEGATE_OIDC_LEEWAY=1s", "ONCEGATE_OIDC_UNKNOWN_KID_INTERVAL=10ms",
	}})
	u, err := url.Parse(s.GatewayURL)
	require.NoError(t, err)
	o := &oidcStack{Stack: s, h: h, mcpResource: "http://localhost:" + u.Port() + "/mcp"}
	both := []string{oidcRESTAudience, o.mcpResource}
	o.agent, err = h.CreateClient(ctx, hydra.MachineClient("agent-carol", "secret-agent-carol", []string{"payments", scopeMCP}, both))
	require.NoError(t, err)
	o.operator, err = h.CreateClient(ctx, hydra.MachineClient("ops-olga", "secret-ops-olga", []string{scopeOperator}, both))
	require.NoError(t, err)
	o.noMCP, err = h.CreateClient(ctx, hydra.MachineClient("agent-nomcp", "secret-agent-nomcp", []string{"payments"}, both))
	require.NoError(t, err)
	require.NoError(t, testenv.WaitFor(ctx, 30*time.Second, func(ctx context.Context) error {
		a := call(t, http.MethodGet, s.GatewayURL+"/readyz", "", nil)
		if a.Code != http.StatusOK {
			return fmt.Errorf("readyz: %s", a)
		}
		return nil
	}), "the gateway is ready once Hydra's keys are fetched")
	return o
}

// token is a client-credentials token of c from Hydra.
func (o *oidcStack) token(t *testing.T, ctx context.Context, c hydra.Client, scopes []string, audience string) string {
	t.Helper()
	tok, err := o.h.Token(ctx, c, scopes, []string{audience})
	require.NoError(t, err)
	return tok
}

// footprint counts what a call could have claimed, stored or executed:
// Redis claims, truth records, workflows on the stack's task queue, and
// the simulator's side effects.
func (o *oidcStack) footprint(t *testing.T, ctx context.Context) string {
	t.Helper()
	rdb := o.Redis.Client()
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "idem:*").Result()
	require.NoError(t, err)
	count := func(dbURL, query string) int {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int
		require.NoError(t, conn.QueryRow(ctx, query).Scan(&n))
		return n
	}
	records := count(o.DatabaseURL, "SELECT count(*) FROM write_record")
	sims := count(o.SimulatorDatabaseURL, "SELECT count(*) FROM sim_transfer")
	tc := o.Temporal.Client(t)
	wf, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: o.Temporal.Namespace, Query: fmt.Sprintf("TaskQueue = %q", o.TaskQueue)})
	require.NoError(t, err)
	return fmt.Sprintf("idem keys %d, write_record %d, workflows %d, simulator transfers %d", len(keys), records, wf.Count, sims)
}

// forge signs claims with key under kid and alg method: what Hydra never
// issues, signed with its real key (or another).
func forge(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// TestOIDCWithHydra: the gateway against a real Ory Hydra. A
// client-credentials agent previews and confirms, and the operator's token
// shows the operation; every bad token is refused with its code, body and
// WWW-Authenticate, consuming nothing (the same fingerprint confirms after
// them); a key rotated at Hydra is accepted without a restart; the MCP
// endpoint is found, authorized and called by the go-sdk's OAuth client;
// Hydra down: cached keys keep serving, an unknown key is not called
// invalid.
func TestOIDCWithHydra(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	o := startOIDCStack(t, ctx)
	agentTok := o.token(t, ctx, o.agent, []string{"payments"}, oidcRESTAudience)
	opsTok := o.token(t, ctx, o.operator, []string{scopeOperator}, oidcRESTAudience)
	params := map[string]any{"amount": "12.00", "currency": "USD", "payee_id": "p-oidc"}

	p := preview(t, o.Stack, agentTok, "payments.transfer", params)
	require.Equal(t, "preview_ready", p.str("status"), p.String())
	fp, opID := p.str("fingerprint"), p.str("operation_id")

	t.Run("bad tokens", func(t *testing.T) {
		kid, key, err := o.h.SigningKey(ctx)
		require.NoError(t, err)
		claims := func(mut func(jwt.MapClaims)) jwt.MapClaims {
			c := jwt.MapClaims{"iss": o.h.Issuer, "aud": []string{oidcRESTAudience}, "sub": "agent-carol", "client_id": "agent-carol",
				"scp": []string{"payments"}, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
			if mut != nil {
				mut(c)
			}
			return c
		}
		stranger, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		pub, err := x509.MarshalPKIXPublicKey(key.Public())
		require.NoError(t, err)
		pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
		shortLived, err := o.h.CreateClient(ctx, hydra.MachineClient("agent-brief", "secret-agent-brief", []string{"payments"}, []string{oidcRESTAudience}))
		require.NoError(t, err)

		type refusal struct {
			name, token string
			code        int
			status      string
			challenge   string
		}
		invalid := func(desc string) string {
			return `Bearer realm="oncegate", error="invalid_token", error_description="` + desc + `"`
		}
		refusals := []refusal{
			{"no token", "", 401, "unauthenticated", `Bearer realm="oncegate"`},
			{"forged with Hydra's key: expired", forge(t, jwt.SigningMethodRS256, kid, key, claims(func(c jwt.MapClaims) {
				c["exp"] = time.Now().Add(-time.Minute).Unix()
			})), 401, "unauthenticated", invalid("the token has expired")},
			{"forged with Hydra's key: not valid yet", forge(t, jwt.SigningMethodRS256, kid, key, claims(func(c jwt.MapClaims) {
				c["nbf"] = time.Now().Add(time.Hour).Unix()
			})), 401, "unauthenticated", invalid("the token is not valid yet")},
			{"forged with Hydra's key: another issuer", forge(t, jwt.SigningMethodRS256, kid, key, claims(func(c jwt.MapClaims) {
				c["iss"] = "http://issuer.invalid"
			})), 401, "unauthenticated", invalid("the token was not issued by an accepted issuer")},
			{"Hydra's token for the MCP resource", o.token(t, ctx, o.agent, []string{scopeMCP}, o.mcpResource),
				401, "unauthenticated", invalid("the token is not meant for this resource (audience)")},
			{"an unknown kid", forge(t, jwt.SigningMethodRS256, "kid-nobody-published", stranger, claims(nil)),
				401, "unauthenticated", invalid("the token is signed with a key its issuer does not publish")},
			{"a forged signature under Hydra's kid", forge(t, jwt.SigningMethodRS256, kid, stranger, claims(nil)),
				401, "unauthenticated", invalid("the token's signature does not verify")},
			{"alg none", forge(t, jwt.SigningMethodNone, kid, jwt.UnsafeAllowNoneSignatureType, claims(nil)),
				401, "unauthenticated", invalid("the token's signing algorithm is not accepted")},
			{"HS256 signed with Hydra's public key", forge(t, jwt.SigningMethodHS256, kid, pubPEM, claims(nil)),
				401, "unauthenticated", invalid("the token's signing algorithm is not accepted")},
			{"an operator's token", opsTok, 403, "forbidden", ""},
		}
		// A token Hydra issued with a lifespan of one second, expired
		// beyond the leeway (1s).
		require.NoError(t, o.h.SetTokenLifespan(ctx, shortLived.ID, time.Second))
		expiredReal := o.token(t, ctx, shortLived, []string{"payments"}, oidcRESTAudience)
		time.Sleep(2500 * time.Millisecond)
		refusals = append(refusals, refusal{"Hydra's token, expired", expiredReal, 401, "unauthenticated", invalid("the token has expired")})

		before := o.footprint(t, ctx)
		for _, r := range refusals {
			a := confirm(t, o.Stack, r.token, "payments.transfer", fp, params)
			assert.Equal(t, r.code, a.Code, "%s: %s", r.name, a)
			assert.Equal(t, r.status, a.str("status"), r.name)
			assert.Equal(t, false, a.Body["retryable"], r.name)
			assert.Equal(t, r.challenge, a.Header.Get("WWW-Authenticate"), r.name)
		}
		ops := call(t, http.MethodGet, o.GatewayURL+"/v1/ops/operations?state=in_flight", agentTok, nil)
		assert.Equal(t, http.StatusForbidden, ops.Code, ops.String())
		assert.Equal(t, "insufficient_scope", ops.str("status"))
		assert.Equal(t, `Bearer realm="oncegate", error="insufficient_scope", error_description="the token lacks the scope this request needs", scope="oncegate:operator"`,
			ops.Header.Get("WWW-Authenticate"))
		assert.Equal(t, before, o.footprint(t, ctx), "the refused calls claimed, stored or executed nothing")
	})

	c := confirm(t, o.Stack, agentTok, "payments.transfer", fp, params)
	require.Contains(t, []string{"completed", "in_progress"}, c.str("status"), "the fingerprint was not consumed by the refused calls: %s", c)
	done := waitStatus(t, o.Stack, agentTok, opID, "completed")
	assert.Equal(t, "completed", done.str("status"))
	assert.Equal(t, 1, executions(t, o.Stack, opID))

	t.Run("who acted for whom: show, the memo, the receipt", func(t *testing.T) {
		// Hydra's client-credentials token names the client in client_id;
		// its subject is the same client.
		claims, _, err := jwt.NewParser().ParseUnverified(agentTok, jwt.MapClaims{})
		require.NoError(t, err)
		require.Equal(t, "agent-carol", claims.Claims.(jwt.MapClaims)["client_id"], "the token Hydra issued names the client")

		show := func(args ...string) string {
			cmd := exec.Command(filepath.Join(testenv.Binaries(t), "oncegate-ops"), append([]string{"show", opID}, args...)...)
			cmd.Env = append(os.Environ(), "GATEWAY_URL="+o.GatewayURL, "TEMPORAL_ADDRESS="+o.Temporal.Address, "ONCEGATE_OPS_TOKEN="+opsTok)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			return string(out)
		}
		out := show()
		assert.Regexp(t, `(?m)^subject\s+agent-carol$`, out, "the subject is the agent's client")
		assert.Regexp(t, `(?m)^acting_client\s+agent-carol$`, out, "show names the acting client")
		var view struct {
			Operation struct {
				ActingClient string `json:"acting_client"`
			} `json:"operation"`
		}
		require.NoError(t, json.Unmarshal([]byte(show("--json")), &view))
		assert.Equal(t, "agent-carol", view.Operation.ActingClient, "the ops API's record (the truth's write_record.acting_client)")

		desc, err := o.Temporal.Client(t).DescribeWorkflowExecution(ctx, opID, "")
		require.NoError(t, err)
		field, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()["acting_client"]
		require.True(t, ok, "the workflow's memo names the acting client: %v", desc.GetWorkflowExecutionInfo().GetMemo())
		var memo string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(field, &memo))
		assert.Equal(t, "agent-carol", memo, "the memo Temporal shows")

		rc, err := client.VerifyReceipt(done.str("receipt"), gatewayJWKS(t, o.Stack))
		require.NoError(t, err, "the receipt verifies against the gateway's JWKS")
		assert.Equal(t, "agent-carol", rc.ActingClient, "the signed receipt names the acting client")
		assert.Equal(t, "agent-carol", rc.Subject)
		assert.Equal(t, "agent-carol", done.str("acting_client"), "the status answer names it")
		assert.Equal(t, "agent-carol", c.str("acting_client"), "the confirm's answer names it")
	})

	t.Run("a key rotated at Hydra", func(t *testing.T) {
		kid, err := o.h.RotateAccessTokenKey(ctx)
		require.NoError(t, err)
		rotated := o.token(t, ctx, o.agent, []string{"payments"}, oidcRESTAudience)
		tok, _, err := jwt.NewParser().ParseUnverified(rotated, jwt.MapClaims{})
		require.NoError(t, err)
		require.Equal(t, kid, tok.Header["kid"], "Hydra signs with the rotated key")
		a := preview(t, o.Stack, rotated, "payments.transfer", params)
		assert.Equal(t, "preview_ready", a.str("status"), "accepted without a restart: %s", a)
	})

	t.Run("MCP through the go-sdk's OAuth client", func(t *testing.T) {
		// A client of its own: the SDK authenticates with client_secret_post,
		// which Hydra allows a client only when it is registered so.
		desktop := hydra.MachineClient("mcp-desktop", "secret-mcp-desktop", []string{"payments", scopeMCP}, []string{o.mcpResource})
		desktop.TokenEndpointAuthMethod = "client_secret_post"
		desktop, err := o.h.CreateClient(ctx, desktop)
		require.NoError(t, err)
		handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: desktop.ID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: desktop.Secret}},
			HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: &hydra.AudienceTransport{
				TokenURL: o.h.Issuer + "/oauth2/token", Audience: []string{o.mcpResource}}},
		})
		require.NoError(t, err)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "oncegate-e2e", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: o.mcpResource, OAuthHandler: handler}, nil)
		require.NoError(t, err, "the client discovers the protected-resource metadata, gets a token from Hydra and connects")
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "payments_transfer_preview", Arguments: map[string]any{"params": params}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Equal(t, "preview_ready", structured(t, res)["status"])

		for name, token := range map[string]string{
			"a REST token on MCP":            agentTok,
			"an MCP token without its scope": o.token(t, ctx, o.noMCP, []string{"payments"}, o.mcpResource),
		} {
			_, bt, err := mcpConnect(ctx, o.Stack, token)
			assert.Error(t, err, name)
			assert.Contains(t, bt.seen(), map[string]int{"a REST token on MCP": 401, "an MCP token without its scope": 403}[name], name)
		}
		mcpTok := o.token(t, ctx, o.agent, []string{scopeMCP}, o.mcpResource)
		a := preview(t, o.Stack, mcpTok, "payments.transfer", params)
		assert.Equal(t, http.StatusUnauthorized, a.Code, "an MCP token on the REST API: %s", a)
	})

	t.Run("Hydra down", func(t *testing.T) {
		stranger, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		o.h.Proc.Stop()
		a := preview(t, o.Stack, agentTok, "payments.transfer", params)
		assert.Equal(t, "preview_ready", a.str("status"), "the cached keys keep serving: %s", a)
		unknown := forge(t, jwt.SigningMethodRS256, "kid-after-the-outage", stranger, jwt.MapClaims{
			"iss": o.h.Issuer, "aud": oidcRESTAudience, "sub": "agent-carol", "exp": time.Now().Add(time.Hour).Unix()})
		a = preview(t, o.Stack, unknown, "payments.transfer", params)
		assert.Equal(t, http.StatusServiceUnavailable, a.Code, a.String())
		assert.Equal(t, "temporarily_unavailable", a.str("status"))
		assert.Equal(t, true, a.Body["retryable"])
		assert.Contains(t, a.str("meaning"), "identity provider")
		assert.True(t, strings.HasPrefix(a.Header.Get("Retry-After"), "1"), a.Header.Get("Retry-After"))
	})
}
