package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	hsSecret = []byte("0123456789abcdef0123456789abcdef")
	now      = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func sign(t *testing.T, method jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, c).SignedString(key)
	require.NoError(t, err)
	return s
}

func TestJWT(t *testing.T) {
	t.Parallel()
	trusted, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	untrusted, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&trusted.PublicKey)
	require.NoError(t, err)
	keys, err := ParsePublicKeysPEM(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	require.NoError(t, err)

	a, err := NewJWT(JWTConfig{HS256Secret: hsSecret, PublicKeys: keys, Audience: "oncegate", Now: func() time.Time { return now }})
	require.NoError(t, err)

	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "carol", "aud": "oncegate", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }

	ok := []struct {
		name  string
		token string
		want  Identity
	}{
		{"HS256", sign(t, jwt.SigningMethodHS256, hsSecret, valid()), Identity{Subject: "carol", Role: RoleAgent}},
		{"ES256", sign(t, jwt.SigningMethodES256, trusted, valid()), Identity{Subject: "carol", Role: RoleAgent}},
		{"operator role", sign(t, jwt.SigningMethodES256, trusted, with("role", "operator")), Identity{Subject: "carol", Role: RoleOperator}},
		{"within leeway", sign(t, jwt.SigningMethodHS256, hsSecret, with("exp", now.Add(-10*time.Second).Unix())), Identity{Subject: "carol", Role: RoleAgent}},
	}
	for _, tc := range ok {
		id, err := a.Authenticate(context.Background(), tc.token)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, id, tc.name)
	}

	bad := []struct {
		name  string
		token string
	}{
		{"untrusted key", sign(t, jwt.SigningMethodES256, untrusted, valid())},
		{"untrusted secret", sign(t, jwt.SigningMethodHS256, []byte("another secret of thirty-two by!"), valid())},
		{"expired", sign(t, jwt.SigningMethodHS256, hsSecret, with("exp", now.Add(-time.Hour).Unix()))},
		{"no exp", sign(t, jwt.SigningMethodHS256, hsSecret, without("exp"))},
		{"not yet valid", sign(t, jwt.SigningMethodHS256, hsSecret, with("nbf", now.Add(time.Hour).Unix()))},
		{"wrong audience", sign(t, jwt.SigningMethodHS256, hsSecret, with("aud", "elsewhere"))},
		{"no audience", sign(t, jwt.SigningMethodHS256, hsSecret, without("aud"))},
		{"no subject", sign(t, jwt.SigningMethodHS256, hsSecret, without("sub"))},
		{"unknown role", sign(t, jwt.SigningMethodHS256, hsSecret, with("role", "root"))},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid())},
		// Algorithm confusion: the public key's DER used as an HMAC secret.
		{"HS256 with public key", sign(t, jwt.SigningMethodHS256, der, valid())},
		{"garbage", "not-a-jwt"},
	}
	for _, tc := range bad {
		_, err := a.Authenticate(context.Background(), tc.token)
		assert.ErrorIs(t, err, ErrUnauthenticated, tc.name)
	}
}

func TestJWTAlgorithmPinnedToKeyType(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	// Only an EC key configured: an HS256 token is refused even if signed
	// with the public key bytes.
	a, err := NewJWT(JWTConfig{PublicKeys: []crypto.PublicKey{&ec.PublicKey}})
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	c := jwt.MapClaims{"sub": "x", "exp": time.Now().Add(time.Hour).Unix()}
	_, err = a.Authenticate(context.Background(), sign(t, jwt.SigningMethodHS256, der, c))
	assert.ErrorIs(t, err, ErrUnauthenticated)
	_, err = a.Authenticate(context.Background(), sign(t, jwt.SigningMethodES256, ec, c))
	assert.NoError(t, err)
}

func TestTokensAndChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "deployments", "tokens.dev.yaml")
	tokens, err := LoadTokens(path)
	require.NoError(t, err)
	j, err := NewJWT(JWTConfig{HS256Secret: hsSecret})
	require.NoError(t, err)
	chain := Chain{tokens, j}
	ctx := context.Background()

	for tok, want := range map[string]Identity{
		"dev-alice": {Subject: "alice", Role: RoleAgent},
		"dev-bob":   {Subject: "bob", Role: RoleAgent},
		"dev-ops":   {Subject: "ops", Role: RoleOperator},
	} {
		id, err := chain.Authenticate(ctx, tok)
		require.NoError(t, err, tok)
		assert.Equal(t, want, id)
	}
	id, err := chain.Authenticate(ctx, sign(t, jwt.SigningMethodHS256, hsSecret, jwt.MapClaims{"sub": "dave", "exp": time.Now().Add(time.Hour).Unix()}))
	require.NoError(t, err)
	assert.Equal(t, "dave", id.Subject)

	for _, tok := range []string{"", "dev-mallory", "dev-alice "} {
		_, err := chain.Authenticate(ctx, tok)
		assert.ErrorIs(t, err, ErrUnauthenticated, tok)
	}

	bad := filepath.Join(t.TempDir(), "t.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("tokens:\n  x: {subject: s, role: god}\n"), 0o600))
	_, err = LoadTokens(bad)
	assert.Error(t, err)
}
