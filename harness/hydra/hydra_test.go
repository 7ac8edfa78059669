package hydra_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/harness/hydra"
)

const (
	restAudience = "http://oncegate.test/v1"
	mcpAudience  = "http://oncegate.test/mcp"
)

// kidOf reads a token's kid (not verified: only to see which key signed).
func kidOf(t *testing.T, token string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	require.NoError(t, err)
	kid, _ := tok.Header["kid"].(string)
	return kid
}

// TestHydraIssuesWhatTheGatewayVerifies: the real Hydra's JWT access tokens
// (client credentials for an agent, authorization code with PKCE for a
// person) verify with the gateway's OIDC authenticator against Hydra's
// discovered keys, and a key rotated at Hydra is accepted without a
// restart of the authenticator.
func TestHydraIssuesWhatTheGatewayVerifies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, err := hydra.Start(ctx, hydra.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(h.Stop)

	agent, err := h.CreateClient(ctx, hydra.MachineClient("agent-carol", "secret-of-agent-carol", []string{"payments", "oncegate:mcp"},
		[]string{restAudience, mcpAudience}))
	require.NoError(t, err)
	verifier, err := auth.NewOIDC(ctx, auth.OIDCConfig{Issuers: []string{h.Issuer}, Audience: restAudience, RolesClaim: "scp",
		OperatorRole: "oncegate:operator", UnknownKIDInterval: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return verifier.Ready(ctx) == nil }, 30*time.Second, 50*time.Millisecond)

	tok, err := h.Token(ctx, agent, []string{"payments"}, []string{restAudience})
	require.NoError(t, err)
	id, err := verifier.Authenticate(ctx, tok)
	require.NoError(t, err)
	assert.Equal(t, auth.Identity{Subject: "agent-carol", Role: auth.RoleAgent, Roles: []string{"payments"}, Client: "agent-carol",
		Scopes: []string{"payments"}, Issuer: h.Issuer}, id)

	mcpTok, err := h.Token(ctx, agent, []string{"oncegate:mcp"}, []string{mcpAudience})
	require.NoError(t, err)
	_, err = verifier.Authenticate(ctx, mcpTok)
	assert.Equal(t, auth.ReasonAudience, auth.Explain(err), "an MCP token is refused for the REST audience")
	_, err = verifier.ForAudience(mcpAudience).Authenticate(ctx, mcpTok)
	require.NoError(t, err)

	t.Run("a rotated key", func(t *testing.T) {
		before := kidOf(t, tok)
		kid, err := h.RotateAccessTokenKey(ctx)
		require.NoError(t, err)
		rotated, err := h.Token(ctx, agent, []string{"payments"}, []string{restAudience})
		require.NoError(t, err)
		require.Equal(t, kid, kidOf(t, rotated), "Hydra signs with the new key")
		require.NotEqual(t, before, kid)
		_, err = verifier.Authenticate(ctx, rotated)
		require.NoError(t, err, "a key rotated at the provider is accepted without a restart")
		_, err = verifier.Authenticate(ctx, tok)
		require.NoError(t, err, "tokens of the old key still verify while Hydra publishes it")
	})

	t.Run("a person by authorization code and PKCE", func(t *testing.T) {
		app, err := h.CreateClient(ctx, hydra.PersonClient("ops-console", "http://127.0.0.1:1/callback",
			[]string{"openid", "oncegate:operator"}, []string{restAudience}))
		require.NoError(t, err)
		pt, err := h.AuthorizationCode(ctx, app, "olga", []string{"openid", "oncegate:operator"}, []string{restAudience})
		require.NoError(t, err)
		id, err := verifier.Authenticate(ctx, pt.AccessToken)
		require.NoError(t, err)
		assert.Equal(t, "olga", id.Subject)
		assert.Equal(t, auth.RoleOperator, id.Role, "the operator role from the granted scope")
		assert.Equal(t, "ops-console", id.Client, "the acting client")
	})
}
