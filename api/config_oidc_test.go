package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/gateway"
)

// oidcEnv is a dev environment with the OIDC variables of extra.
func oidcEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc",
		"ONCEGATE_RECEIPT_KEYS": "r:abc", "ONCEGATE_ENV": gateway.EnvDev,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func TestOIDCConfigDefaultsAreTheAuthPackages(t *testing.T) {
	t.Parallel()
	c, err := ConfigFromEnv(oidcEnv(map[string]string{
		"ONCEGATE_OIDC_ISSUER": " https://idp.example/ , https://other.example", "ONCEGATE_OIDC_AUDIENCE": "https://gateway.example/v1",
		"ONCEGATE_PUBLIC_URL": "https://gateway.example",
	}))
	require.NoError(t, err)
	o := c.OIDC
	assert.Equal(t, []string{"https://idp.example/", "https://other.example"}, o.Issuers)
	assert.Equal(t, auth.DefaultSubjectClaim, o.SubjectClaim)
	assert.Equal(t, auth.DefaultRolesClaim, o.RolesClaim)
	assert.Equal(t, auth.DefaultOperatorRole, o.OperatorRole)
	assert.Equal(t, auth.DefaultLeeway, o.Leeway)
	assert.Equal(t, auth.DefaultAlgorithms, o.Algorithms)
	assert.Equal(t, auth.DefaultJWKSRefresh, o.JWKSRefresh)
	assert.Equal(t, auth.DefaultJWKSMaxAge, o.JWKSMaxAge)
	assert.Equal(t, auth.DefaultUnknownKIDInterval, o.UnknownKIDInterval)
	assert.Equal(t, "https://gateway.example/mcp", o.MCPResource, "the MCP resource defaults to the public URL's /mcp")
	assert.Empty(t, o.OperatorScope(), "operators are a role unless the roles are the scopes")

	// A context ended at once: nothing is discovered (no request leaves).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rest, mcp, err := OIDCAuthenticators(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, "https://gateway.example/v1", rest.Audience())
	assert.Equal(t, "https://gateway.example/mcp", mcp.Audience())

	c, err = ConfigFromEnv(oidcEnv(nil))
	require.NoError(t, err)
	rest, mcp, err = OIDCAuthenticators(ctx, c, nil)
	require.NoError(t, err)
	assert.Nil(t, rest, "no issuer, no OIDC")
	assert.Nil(t, mcp)
}

func TestOIDCConfigNamesTheBadValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"issuer without audience", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp"}, "ONCEGATE_OIDC_AUDIENCE is required"},
		{"audience without issuer", map[string]string{"ONCEGATE_OIDC_AUDIENCE": "a"}, "need ONCEGATE_OIDC_ISSUER"},
		{"issuer not a URL", map[string]string{"ONCEGATE_OIDC_ISSUER": "idp", "ONCEGATE_OIDC_AUDIENCE": "a"}, `ONCEGATE_OIDC_ISSUER: "idp"`},
		{"HMAC", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_OIDC_ALGORITHMS": "RS256,HS256"}, `"HS256" is refused`},
		{"none", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_OIDC_ALGORITHMS": "none"}, `"none" is refused`},
		{"leeway", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_OIDC_LEEWAY": "10m"}, "ONCEGATE_OIDC_LEEWAY=10m0s: want at most 5m0s"},
		{"max age", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_OIDC_JWKS_MAX_AGE": "1m"}, "ONCEGATE_OIDC_JWKS_MAX_AGE=1m0s"},
		{"one audience for both", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "https://g/mcp", "ONCEGATE_MCP_RESOURCE": "https://g/mcp"}, "must not be one for the REST API"},
		{"MCP resource with a fragment", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_MCP_RESOURCE": "https://g/mcp#x"}, "without a fragment"},
		{"a scope with a quote", map[string]string{"ONCEGATE_OIDC_ISSUER": "https://idp", "ONCEGATE_OIDC_AUDIENCE": "a", "ONCEGATE_MCP_SCOPES": `mcp"`}, "ONCEGATE_MCP_SCOPES"},
	} {
		_, err := ConfigFromEnv(oidcEnv(tc.env))
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestOperatorScopeWhenRolesAreScopes(t *testing.T) {
	t.Parallel()
	c := OIDCConfig{Issuers: []string{"https://idp"}, RolesClaim: "scp", OperatorRole: "oncegate:operator", Leeway: time.Second}
	assert.Equal(t, "oncegate:operator", c.OperatorScope())
	c.RolesClaim = "realm_access.roles"
	assert.Empty(t, c.OperatorScope())
}
