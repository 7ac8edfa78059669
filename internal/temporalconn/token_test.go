package temporalconn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/hydra"
)

// TestNoTokenByDefault: without a grant the client sends no headers.
func TestNoTokenByDefault(t *testing.T) {
	c, err := fromEnv(nil)
	require.NoError(t, err)
	assert.Nil(t, c.Apply(client.Options{}).HeadersProvider)
}

// TestTokenFromTheIdentityProvider: with TEMPORAL_OAUTH_* the client sends
// the bearer token of a client-credentials grant at a real Hydra, with
// the scopes and audience asked; the token is cached while it is valid for
// more than TokenRefreshBefore, and replaced before it expires.
func TestTokenFromTheIdentityProvider(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := hydra.Start(ctx, hydra.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(h.Stop)
	long, err := h.CreateClient(ctx, hydra.MachineClient("worker-long", "secret-worker-long", []string{"default:write"}, []string{"temporal"}))
	require.NoError(t, err)
	short, err := h.CreateClient(ctx, hydra.MachineClient("worker-short", "secret-worker-short", []string{"default:write"}, []string{"temporal"}))
	require.NoError(t, err)
	require.NoError(t, h.SetTokenLifespan(ctx, short.ID, TokenRefreshBefore-10*time.Second))

	headers := func(c hydra.Client) (func() jwt.MapClaims, string) {
		cfg, err := fromEnv(map[string]string{"TEMPORAL_OAUTH_TOKEN_URL": h.Issuer + "/oauth2/token", "TEMPORAL_OAUTH_CLIENT_ID": c.ID,
			"TEMPORAL_OAUTH_CLIENT_SECRET": c.Secret, "TEMPORAL_OAUTH_SCOPES": "default:write", "TEMPORAL_OAUTH_AUDIENCE": "temporal"})
		require.NoError(t, err)
		hp := cfg.Apply(client.Options{}).HeadersProvider
		require.NotNil(t, hp)
		return func() jwt.MapClaims {
			got, err := hp.GetHeaders(ctx)
			require.NoError(t, err)
			bearer, ok := strings.CutPrefix(got["authorization"], "Bearer ")
			require.True(t, ok, "a bearer token: %v", got)
			claims := jwt.MapClaims{}
			_, _, err = jwt.NewParser().ParseUnverified(bearer, claims)
			require.NoError(t, err)
			return claims
		}, c.ID
	}

	get, id := headers(long)
	first := get()
	assert.Equal(t, id, first["client_id"])
	assert.Equal(t, []any{"default:write"}, first["scp"], "the scopes asked (the permissions Temporal reads)")
	assert.Equal(t, []any{"temporal"}, first["aud"], "the audience asked")
	assert.Equal(t, first["jti"], get()["jti"], "cached while valid for longer than TokenRefreshBefore")

	get, _ = headers(short)
	first = get()
	assert.NotEqual(t, first["jti"], get()["jti"], "a token that expires within TokenRefreshBefore is replaced")
}
