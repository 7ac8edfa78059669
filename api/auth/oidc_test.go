package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testIssuer is an OIDC issuer on httptest: its discovery document and its
// JWKS, whose keys a test adds, and which a test can take down.
type testIssuer struct {
	srv *httptest.Server
	mu  sync.Mutex
	// keys are the published signing keys by kid.
	keys map[string]crypto.Signer
	algs map[string]jwkset.ALG
	down atomic.Bool
	// jwksFetches counts the JWKS requests.
	jwksFetches atomic.Int64
}

// newTestIssuer starts an issuer publishing one RSA key, kid k1.
func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{keys: map[string]crypto.Signer{}, algs: map[string]jwkset.ALG{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if is.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url(), "jwks_uri": is.url() + "/jwks",
			"authorization_endpoint": is.url() + "/auth", "token_endpoint": is.url() + "/token",
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(is.jwks(t))
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.addKey(t, "k1", newRSA(t), jwkset.AlgRS256)
	return is
}

func (is *testIssuer) url() string { return is.srv.URL }

func newRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

// addKey publishes a key.
func (is *testIssuer) addKey(t *testing.T, kid string, key crypto.Signer, alg jwkset.ALG) {
	t.Helper()
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid], is.algs[kid] = key, alg
}

// jwks is the JSON Web Key Set of the public keys, built by jwkset.
func (is *testIssuer) jwks(t *testing.T) []byte {
	is.mu.Lock()
	defer is.mu.Unlock()
	store := jwkset.NewMemoryStorage()
	for kid, key := range is.keys {
		jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			KID: kid, ALG: is.algs[kid], USE: jwkset.UseSig}})
		require.NoError(t, err)
		require.NoError(t, store.KeyWrite(context.Background(), jwk))
	}
	raw, err := store.JSONPublic(context.Background())
	require.NoError(t, err)
	return raw
}

// sign signs claims with the issuer's key kid.
func (is *testIssuer) sign(t *testing.T, kid string, method jwt.SigningMethod, claims jwt.MapClaims) string {
	t.Helper()
	is.mu.Lock()
	key := is.keys[kid]
	is.mu.Unlock()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	tok.Header["typ"] = "at+jwt"
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// clock is a settable test clock.
type clock struct{ at atomic.Int64 }

func newClock() *clock                      { c := &clock{}; c.at.Store(time.Now().UnixNano()); return c }
func (c *clock) now() time.Time             { return time.Unix(0, c.at.Load()) }
func (c *clock) add(d time.Duration)        { c.at.Add(int64(d)) }
func (c *clock) unix(d time.Duration) int64 { return c.now().Add(d).Unix() }

const testAudience = "https://gateway.example/api"

// newTestOIDC starts an authenticator of the issuers, on clk.
func newTestOIDC(t *testing.T, clk *clock, cfg OIDCConfig, issuers ...*testIssuer) *OIDC {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, is := range issuers {
		cfg.Issuers = append(cfg.Issuers, is.url())
	}
	if cfg.Audience == "" {
		cfg.Audience = testAudience
	}
	cfg.Now = clk.now
	cfg.RetryEvery = 20 * time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	o, err := NewOIDC(ctx, cfg)
	require.NoError(t, err)
	return o
}

// waitReady waits until o has fetched its keys.
func waitReady(t *testing.T, o *OIDC) {
	t.Helper()
	require.Eventually(t, func() bool { return o.Ready(context.Background()) == nil }, 5*time.Second, 10*time.Millisecond)
}

func TestOIDCAcceptsAnIssuersAccessTokens(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	is.addKey(t, "ec", ec, jwkset.AlgES256)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	is.addKey(t, "ed", ed, jwkset.AlgEdDSA)
	is.addKey(t, "ps", newRSA(t), jwkset.AlgPS256)
	o := newTestOIDC(t, clk, OIDCConfig{RolesClaim: "realm_access.roles", OperatorRole: "ops"}, is)
	waitReady(t, o)

	base := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": is.url(), "aud": []string{"other", testAudience}, "sub": "alice",
			"exp": clk.unix(5 * time.Minute), "iat": clk.unix(0)}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		kid    string
		method jwt.SigningMethod
		claims jwt.MapClaims
		want   Identity
	}{
		{"RS256, scope string, client_id", "k1", jwt.SigningMethodRS256,
			base(jwt.MapClaims{"scope": "payments:read payments:wire", "client_id": "agent-app"}),
			Identity{Subject: "alice", Role: RoleAgent, Issuer: is.url(), Client: "agent-app", Scopes: []string{"payments:read", "payments:wire"}}},
		{"PS256, scp array, azp", "ps", jwt.SigningMethodPS256,
			base(jwt.MapClaims{"scp": []string{"oncegate:mcp"}, "azp": "desktop"}),
			Identity{Subject: "alice", Role: RoleAgent, Issuer: is.url(), Client: "desktop", Scopes: []string{"oncegate:mcp"}}},
		{"ES256, nested roles make an operator", "ec", jwt.SigningMethodES256,
			base(jwt.MapClaims{"realm_access": map[string]any{"roles": []string{"viewer", "ops"}}}),
			Identity{Subject: "alice", Role: RoleOperator, Issuer: is.url(), Roles: []string{"viewer", "ops"}}},
		{"EdDSA, roles without the operator role", "ed", jwt.SigningMethodEdDSA,
			base(jwt.MapClaims{"realm_access": map[string]any{"roles": []string{"viewer"}}}),
			Identity{Subject: "alice", Role: RoleAgent, Issuer: is.url(), Roles: []string{"viewer"}}},
		{"expired within the leeway", "k1", jwt.SigningMethodRS256,
			base(jwt.MapClaims{"exp": clk.unix(-10 * time.Second)}),
			Identity{Subject: "alice", Role: RoleAgent, Issuer: is.url()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := o.Authenticate(context.Background(), is.sign(t, tc.kid, tc.method, tc.claims))
			require.NoError(t, err)
			assert.Equal(t, tc.want, id)
			assert.True(t, id.Scoped())
		})
	}
}

// The acting client is read from the configured claim alone, or else from
// the first of DefaultClientClaims a token names (client_id before azp).
func TestOIDCClientClaim(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	claims := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": is.url(), "aud": testAudience, "sub": "alice", "exp": clk.unix(5 * time.Minute), "iat": clk.unix(0)}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	both := claims(jwt.MapClaims{"client_id": "agent-app", "azp": "desktop", "ext": map[string]any{"agent": "ops-bot"}})
	for name, tc := range map[string]struct {
		cfg    OIDCConfig
		claims jwt.MapClaims
		want   string
	}{
		"default: client_id before azp":  {OIDCConfig{}, both, "agent-app"},
		"default: azp without client_id": {OIDCConfig{}, claims(jwt.MapClaims{"azp": "desktop"}), "desktop"},
		"configured, nested":             {OIDCConfig{ClientClaim: "ext.agent"}, both, "ops-bot"},
		"configured and absent: none":    {OIDCConfig{ClientClaim: "ext.agent"}, claims(jwt.MapClaims{"client_id": "agent-app"}), ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := newTestOIDC(t, clk, tc.cfg, is)
			waitReady(t, o)
			id, err := o.Authenticate(context.Background(), is.sign(t, "k1", jwt.SigningMethodRS256, tc.claims))
			require.NoError(t, err)
			assert.Equal(t, tc.want, id.Client)
		})
	}
}

func TestOIDCRefusesEveryBadToken(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	stranger := newTestIssuer(t) // not configured
	o := newTestOIDC(t, clk, OIDCConfig{}, is)
	waitReady(t, o)
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": is.url(), "aud": testAudience, "sub": "alice", "exp": clk.unix(5 * time.Minute)}
	}
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }

	pub, err := x509.MarshalPKIXPublicKey(is.keys["k1"].Public())
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	hsWithPublicKey := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, valid())
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(pubPEM)
		require.NoError(t, err)
		return s
	}()
	none := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, valid())
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		require.NoError(t, err)
		return s
	}()
	typed := func(typ string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, valid())
		tok.Header["kid"], tok.Header["typ"] = "k1", typ
		s, err := tok.SignedString(is.keys["k1"])
		require.NoError(t, err)
		return s
	}
	unpublished := newRSA(t)
	signedUnpublished := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, valid())
		tok.Header["kid"] = "k9"
		s, err := tok.SignedString(unpublished)
		require.NoError(t, err)
		return s
	}()
	forgedK1 := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, valid())
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(unpublished)
		require.NoError(t, err)
		return s
	}()

	for _, tc := range []struct {
		name  string
		token string
		want  Reason
	}{
		{"expired", is.sign(t, "k1", jwt.SigningMethodRS256, with("exp", clk.unix(-time.Minute))), ReasonExpired},
		{"no exp", is.sign(t, "k1", jwt.SigningMethodRS256, without("exp")), ReasonClaims},
		{"not yet valid", is.sign(t, "k1", jwt.SigningMethodRS256, with("nbf", clk.unix(time.Minute))), ReasonNotYetValid},
		{"issued in the future", is.sign(t, "k1", jwt.SigningMethodRS256, with("iat", clk.unix(time.Minute))), ReasonNotYetValid},
		{"wrong issuer", stranger.sign(t, "k1", jwt.SigningMethodRS256, with("iss", stranger.url())), ReasonIssuer},
		{"no issuer", is.sign(t, "k1", jwt.SigningMethodRS256, without("iss")), ReasonIssuer},
		{"an accepted issuer's name on another's key", stranger.sign(t, "k1", jwt.SigningMethodRS256, valid()), ReasonSignature},
		{"wrong audience", is.sign(t, "k1", jwt.SigningMethodRS256, with("aud", "https://elsewhere")), ReasonAudience},
		{"no audience", is.sign(t, "k1", jwt.SigningMethodRS256, without("aud")), ReasonClaims},
		{"a key's token in another algorithm", is.sign(t, "k1", jwt.SigningMethodPS256, valid()), ReasonUnknownKey},
		{"unknown kid", signedUnpublished, ReasonUnknownKey},
		{"forged with a published kid", forgedK1, ReasonSignature},
		{"alg none", none, ReasonAlgorithm},
		{"HS256 signed with the public key", hsWithPublicKey, ReasonAlgorithm},
		{"RS512 not in the allow-list", is.sign(t, "k1", jwt.SigningMethodRS512, valid()), ReasonAlgorithm},
		{"no subject", is.sign(t, "k1", jwt.SigningMethodRS256, without("sub")), ReasonClaims},
		{"an id token's typ", typed("id+jwt"), ReasonClaims},
		{"not a JWT", "dev-alice", ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := o.Authenticate(context.Background(), tc.token)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUnauthenticated)
			assert.NotErrorIs(t, err, ErrProviderUnavailable)
			assert.Equal(t, tc.want, Explain(err), "%v", err)
		})
	}
	t.Run("an accepted typ", func(t *testing.T) {
		for _, typ := range []string{"JWT", "at+jwt", "application/at+jwt"} {
			_, err := o.Authenticate(context.Background(), typed(typ))
			assert.NoError(t, err, typ)
		}
	})
}

func TestOIDCFollowsAKeyRotatedAtTheProvider(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	o := newTestOIDC(t, clk, OIDCConfig{UnknownKIDInterval: time.Hour}, is)
	waitReady(t, o)
	claims := jwt.MapClaims{"iss": is.url(), "aud": testAudience, "sub": "alice", "exp": clk.unix(time.Minute)}
	fetches := is.jwksFetches.Load()

	is.addKey(t, "k2", newRSA(t), jwkset.AlgRS256)
	id, err := o.Authenticate(context.Background(), is.sign(t, "k2", jwt.SigningMethodRS256, claims))
	require.NoError(t, err, "a key published after the start is fetched when a token names it")
	assert.Equal(t, "alice", id.Subject)
	assert.Equal(t, fetches+1, is.jwksFetches.Load())

	// A flood of unknown kids costs the provider nothing more within the
	// interval: the kid is unknown at once.
	is.addKey(t, "k3", newRSA(t), jwkset.AlgRS256)
	for range 5 {
		_, err = o.Authenticate(context.Background(), is.sign(t, "k3", jwt.SigningMethodRS256, claims))
		assert.Equal(t, ReasonUnknownKey, Explain(err))
	}
	assert.Equal(t, fetches+1, is.jwksFetches.Load(), "unknown kids are rate-limited")
}

func TestOIDCProviderDownAtStart(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	is.down.Store(true)
	o := newTestOIDC(t, clk, OIDCConfig{}, is)
	tok := is.sign(t, "k1", jwt.SigningMethodRS256, jwt.MapClaims{"iss": is.url(), "aud": testAudience, "sub": "alice", "exp": clk.unix(time.Minute)})

	time.Sleep(60 * time.Millisecond) // a few discovery attempts
	require.ErrorIs(t, o.Ready(context.Background()), ErrProviderUnavailable)
	_, err := o.Authenticate(context.Background(), tok)
	require.ErrorIs(t, err, ErrProviderUnavailable, "a good token of an issuer not reached yet is not called invalid")

	is.down.Store(false)
	waitReady(t, o)
	_, err = o.Authenticate(context.Background(), tok)
	require.NoError(t, err)
}

func TestOIDCProviderDownWhileRunning(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	o := newTestOIDC(t, clk, OIDCConfig{JWKSRefresh: time.Hour, JWKSMaxAge: 2 * time.Hour, UnknownKIDInterval: time.Millisecond}, is)
	waitReady(t, o)
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": is.url(), "aud": testAudience, "sub": "alice", "exp": clk.unix(time.Minute)}
	}
	is.down.Store(true)

	clk.add(90 * time.Minute)
	_, err := o.Authenticate(context.Background(), is.sign(t, "k1", jwt.SigningMethodRS256, claims()))
	require.NoError(t, err, "cached keys serve while the provider is down, within their maximum age")

	is.addKey(t, "k2", newRSA(t), jwkset.AlgRS256)
	_, err = o.Authenticate(context.Background(), is.sign(t, "k2", jwt.SigningMethodRS256, claims()))
	require.ErrorIs(t, err, ErrProviderUnavailable, "an unknown kid that could not be fetched is not called invalid")

	clk.add(31 * time.Minute)
	_, err = o.Authenticate(context.Background(), is.sign(t, "k1", jwt.SigningMethodRS256, claims()))
	require.ErrorIs(t, err, ErrProviderUnavailable, "past their maximum age the keys serve no more")
	assert.ErrorIs(t, o.Ready(context.Background()), ErrProviderUnavailable)
}

func TestOIDCAudiences(t *testing.T) {
	t.Parallel()
	clk := newClock()
	is := newTestIssuer(t)
	rest := newTestOIDC(t, clk, OIDCConfig{}, is)
	mcp := rest.ForAudience("https://gateway.example/mcp")
	waitReady(t, rest)
	tokFor := func(aud string) string {
		return is.sign(t, "k1", jwt.SigningMethodRS256, jwt.MapClaims{"iss": is.url(), "aud": aud, "sub": "alice", "exp": clk.unix(time.Minute)})
	}
	_, err := rest.Authenticate(context.Background(), tokFor(testAudience))
	require.NoError(t, err)
	_, err = mcp.Authenticate(context.Background(), tokFor(testAudience))
	assert.Equal(t, ReasonAudience, Explain(err), "a REST token is refused at the MCP resource")
	_, err = mcp.Authenticate(context.Background(), tokFor(mcp.Audience()))
	require.NoError(t, err)
	_, err = rest.Authenticate(context.Background(), tokFor(mcp.Audience()))
	assert.Equal(t, ReasonAudience, Explain(err), "an MCP token is refused at the REST API")
}

func TestOIDCConfigIsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  OIDCConfig
		want string
	}{
		{"no issuer", OIDCConfig{Audience: "a"}, "at least one issuer"},
		{"no audience", OIDCConfig{Issuers: []string{"https://idp"}}, "audience is required"},
		{"issuer not a URL", OIDCConfig{Issuers: []string{"idp"}, Audience: "a"}, "want an http(s) URL"},
		{"leeway too long", OIDCConfig{Issuers: []string{"https://idp"}, Audience: "a", Leeway: time.Hour}, "leeway 1h0m0s"},
		{"HS256", OIDCConfig{Issuers: []string{"https://idp"}, Audience: "a", Algorithms: []string{"RS256", "HS256"}}, `"HS256" refused`},
		{"none", OIDCConfig{Issuers: []string{"https://idp"}, Audience: "a", Algorithms: []string{"none"}}, `"none" refused`},
		{"max age under refresh", OIDCConfig{Issuers: []string{"https://idp"}, Audience: "a", JWKSRefresh: time.Hour, JWKSMaxAge: time.Minute}, "shorter than their refresh"},
	} {
		_, err := NewOIDC(context.Background(), tc.cfg)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestExplainKeepsTheMostSpecificReason(t *testing.T) {
	t.Parallel()
	chain := Chain{mustTokens(t), mustTokens(t)}
	_, err := chain.Authenticate(context.Background(), "nope")
	assert.Equal(t, ReasonUnknown, Explain(err))
	joined := fmt.Errorf("%w: %w", ErrUnauthenticated, errors.Join(refuse(ReasonUnknown, nil), refuse(ReasonExpired, nil), refuse(ReasonIssuer, nil)))
	assert.Equal(t, ReasonExpired, Explain(joined))
	assert.Equal(t, ReasonUnknown, Explain(nil))
}

// mustTokens is a token file of one agent.
func mustTokens(t *testing.T) *Tokens {
	t.Helper()
	tokens, err := NewTokens(map[string]Identity{"dev-alice": {Subject: "alice"}})
	require.NoError(t, err)
	return tokens
}
