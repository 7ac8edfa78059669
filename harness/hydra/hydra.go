// Package hydra runs Ory Hydra, a real OAuth 2.1 / OpenID Connect
// authorization server, for the dev stack and the tests (docs/identity.md):
// the binary scripts/deps.sh builds into ./bin/hydra from Go modules,
// started on free ports with in-memory storage and JWT access tokens, its
// clients created through its admin API, and a minimal login-and-consent
// app (consent.go) for the authorization-code flow of people. Dev and
// tests only: a deployment uses its own identity provider.
package hydra

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/oncegate/oncegate/harness/testenv"
)

// AccessTokenKeySet is the key set Hydra signs JWT access tokens with.
const AccessTokenKeySet = "hydra.jwt.access-token"

// Binary returns the path of the Hydra binary: ONCEGATE_HYDRA, else
// ./bin/hydra (scripts/deps.sh builds it).
func Binary() (string, error) {
	if p := os.Getenv("ONCEGATE_HYDRA"); p != "" {
		return p, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "hydra")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("hydra: %s missing: run scripts/deps.sh (it builds Hydra from Go modules)", p)
	}
	return p, nil
}

// Hydra is one running Hydra server.
type Hydra struct {
	// Issuer is its issuer URL, as its tokens' iss says it (no trailing
	// slash): the public endpoint's base.
	Issuer string
	// AdminURL is its admin API's base URL.
	AdminURL string
	// Consent is the login-and-consent app it sends people to.
	Consent *ConsentApp
	// Proc is the server process.
	Proc *testenv.Process
	http *http.Client
}

// Options tune Start.
type Options struct {
	// Dir holds the log (required).
	Dir string
	// Env is appended to Hydra's environment (KEY=value), after the
	// harness's own settings.
	Env []string
	// PublicPort and AdminPort are Hydra's ports, and ConsentPort the
	// login-and-consent app's, on 127.0.0.1; 0: a free one.
	PublicPort, AdminPort, ConsentPort int
}

// Start starts Hydra on free ports of 127.0.0.1 with in-memory storage
// (DSN=memory) and JWT access tokens (strategies.access_token=jwt), and
// its login-and-consent app, and waits until it is ready.
func Start(ctx context.Context, opts Options) (*Hydra, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	public, admin := opts.PublicPort, opts.AdminPort
	for _, p := range []*int{&public, &admin} {
		if *p == 0 {
			if *p, err = testenv.FreePort(); err != nil {
				return nil, err
			}
		}
	}
	h := &Hydra{
		Issuer:   fmt.Sprintf("http://127.0.0.1:%d", public),
		AdminURL: fmt.Sprintf("http://127.0.0.1:%d", admin),
		http:     &http.Client{Timeout: 10 * time.Second},
	}
	if h.Consent, err = StartConsentApp(h, opts.ConsentPort); err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	env := append([]string{
		"DSN=memory",
		"URLS_SELF_ISSUER=" + h.Issuer,
		"URLS_LOGIN=" + h.Consent.URL + "/login",
		"URLS_CONSENT=" + h.Consent.URL + "/consent",
		"URLS_ERROR=" + h.Consent.URL + "/error",
		"SECRETS_SYSTEM=" + hex.EncodeToString(secret),
		"SERVE_PUBLIC_HOST=127.0.0.1", fmt.Sprintf("SERVE_PUBLIC_PORT=%d", public),
		"SERVE_ADMIN_HOST=127.0.0.1", fmt.Sprintf("SERVE_ADMIN_PORT=%d", admin),
		"STRATEGIES_ACCESS_TOKEN=jwt",
		// scp, an array, as Okta and Entra ID send it (and scope, the
		// RFC 9068 string, too).
		"STRATEGIES_JWT_SCOPE_CLAIM=both",
		"TTL_ACCESS_TOKEN=1h",
		"LOG_LEVEL=warn",
	}, opts.Env...)
	h.Proc, err = testenv.StartProcess("hydra", filepath.Join(opts.Dir, "hydra.log"),
		[]string{bin, "serve", "all", "--dev", "--sqa-opt-out"}, env, nil)
	if err != nil {
		h.Consent.Close()
		return nil, err
	}
	if err := testenv.WaitFor(ctx, 60*time.Second, h.ready); err != nil {
		h.Stop()
		return nil, fmt.Errorf("hydra not ready: %w\n%s", err, h.Proc.Log())
	}
	return h, nil
}

// ready asks the admin API's readiness probe and the public discovery.
func (h *Hydra) ready(ctx context.Context) error {
	if !h.Proc.Running() {
		return errors.New("hydra exited")
	}
	for _, u := range []string{h.AdminURL + "/health/ready", h.Issuer + "/.well-known/openid-configuration"} {
		if err := h.do(ctx, http.MethodGet, u, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops Hydra and its login-and-consent app.
func (h *Hydra) Stop() {
	if h.Proc != nil {
		h.Proc.Stop()
	}
	if h.Consent != nil {
		h.Consent.Close()
	}
}

// Client is an OAuth client at Hydra (its admin API's fields).
type Client struct {
	// ID is the client_id (the subject of its client-credentials tokens).
	ID string `json:"client_id,omitempty"`
	// Secret is the client_secret (returned at creation only).
	Secret string `json:"client_secret,omitempty"`
	// GrantTypes are the grants it may use.
	GrantTypes []string `json:"grant_types"`
	// ResponseTypes are the response types it may ask for.
	ResponseTypes []string `json:"response_types,omitempty"`
	// Scope is the space-separated scopes it may ask for.
	Scope string `json:"scope"`
	// Audience are the audiences it may ask tokens for.
	Audience []string `json:"audience"`
	// RedirectURIs are where the authorization code may go.
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	// TokenEndpointAuthMethod is how it authenticates at the token
	// endpoint (client_secret_basic, or none for a public client).
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
}

// MachineClient is a client-credentials client (an agent, a gateway, a
// worker) with id, secret, scopes and audiences.
func MachineClient(id, secret string, scopes, audience []string) Client {
	return Client{ID: id, Secret: secret, GrantTypes: []string{"client_credentials"}, Scope: strings.Join(scopes, " "),
		Audience: audience, TokenEndpointAuthMethod: "client_secret_basic"}
}

// CreateClient registers c through the admin API and returns it as Hydra
// stored it (with the secret it was given).
func (h *Hydra) CreateClient(ctx context.Context, c Client) (Client, error) {
	var out Client
	if err := h.do(ctx, http.MethodPost, h.AdminURL+"/admin/clients", c, &out); err != nil {
		return Client{}, fmt.Errorf("create client %s: %w", c.ID, err)
	}
	if out.Secret == "" {
		out.Secret = c.Secret
	}
	return out, nil
}

// ClientCredentials is the client-credentials grant of c at Hydra, asking
// for scopes and the audiences (Hydra reads the audience parameter, not
// RFC 8707's resource).
func (h *Hydra) ClientCredentials(c Client, scopes, audience []string) *clientcredentials.Config {
	params := url.Values{}
	if len(audience) > 0 {
		params.Set("audience", strings.Join(audience, " "))
	}
	return &clientcredentials.Config{ClientID: c.ID, ClientSecret: c.Secret, TokenURL: h.Issuer + "/oauth2/token",
		Scopes: scopes, EndpointParams: params, AuthStyle: oauth2.AuthStyleInHeader}
}

// Token gets an access token for c by the client-credentials grant.
func (h *Hydra) Token(ctx context.Context, c Client, scopes, audience []string) (string, error) {
	tok, err := h.ClientCredentials(c, scopes, audience).Token(context.WithValue(ctx, oauth2.HTTPClient, h.http))
	if err != nil {
		return "", fmt.Errorf("token of %s: %w", c.ID, err)
	}
	return tok.AccessToken, nil
}

// RotateAccessTokenKey creates a new RS256 signing key in the access
// tokens' key set (as `hydra create jwks hydra.jwt.access-token` does):
// Hydra signs the next tokens with it and still publishes the old one. It
// returns the new key's kid.
func (h *Hydra) RotateAccessTokenKey(ctx context.Context) (string, error) {
	kid := "rotated-" + hex.EncodeToString(randomBytes(4))
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	body := map[string]string{"alg": "RS256", "use": "sig", "kid": kid}
	if err := h.do(ctx, http.MethodPost, h.AdminURL+"/admin/keys/"+AccessTokenKeySet, body, &set); err != nil {
		return "", fmt.Errorf("rotate the access-token key: %w", err)
	}
	if len(set.Keys) == 0 {
		return "", errors.New("rotate the access-token key: no key in the answer")
	}
	return set.Keys[0].KID, nil
}

// do sends a JSON request and decodes a JSON answer (out may be nil).
func (h *Hydra) do(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, u, res.Status, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, u, err)
		}
	}
	return nil
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// SigningKey returns the key Hydra signs access tokens with now (the first
// of the access tokens' key set; the admin API hands out private keys), so
// that a test can sign, with the provider's real key, what the provider
// never issues: an expired token, one not valid yet, one for another
// issuer.
func (h *Hydra) SigningKey(ctx context.Context) (string, crypto.Signer, error) {
	var set jwkset.JWKSMarshal
	if err := h.do(ctx, http.MethodGet, h.AdminURL+"/admin/keys/"+AccessTokenKeySet, nil, &set); err != nil {
		return "", nil, fmt.Errorf("signing key: %w", err)
	}
	if len(set.Keys) == 0 {
		return "", nil, errors.New("signing key: the key set is empty")
	}
	jwk, err := jwkset.NewJWKFromMarshal(set.Keys[0], jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("signing key: %w", err)
	}
	key, ok := jwk.Key().(crypto.Signer)
	if !ok {
		return "", nil, fmt.Errorf("signing key: %T is not a private key", jwk.Key())
	}
	return set.Keys[0].KID, key, nil
}

// AudienceTransport adds Hydra's audience parameter to the requests an
// OAuth client sends to Hydra's token endpoint: Hydra binds a token to the
// audiences named by `audience`, and reads neither RFC 8707's `resource`
// (which it takes as the audience when a client sends it) nor any default,
// so a client that names the resource only in discovery, such as the MCP
// go-sdk's client-credentials handler, gets tokens for it through this.
type AudienceTransport struct {
	// TokenURL is Hydra's token endpoint.
	TokenURL string
	// Audience is what to ask for when the request names none.
	Audience []string
	// Next sends the request (nil: http.DefaultTransport).
	Next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (a *AudienceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := a.Next
	if next == nil {
		next = http.DefaultTransport
	}
	if r.Method != http.MethodPost || r.URL.String() != a.TokenURL || r.Body == nil {
		return next.RoundTrip(r)
	}
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, err
	}
	if form.Get("audience") == "" {
		if res := form["resource"]; len(res) > 0 {
			form.Set("audience", strings.Join(res, " "))
		} else {
			form.Set("audience", strings.Join(a.Audience, " "))
		}
	}
	body := form.Encode()
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
	return next.RoundTrip(r)
}

// SetTokenLifespan sets how long the client-credentials access tokens of
// client id live (Hydra's per-client lifespans).
func (h *Hydra) SetTokenLifespan(ctx context.Context, id string, d time.Duration) error {
	body := map[string]string{"client_credentials_grant_access_token_lifespan": d.String()}
	if err := h.do(ctx, http.MethodPut, h.AdminURL+"/admin/clients/"+url.PathEscape(id)+"/lifespans", body, nil); err != nil {
		return fmt.Errorf("token lifespan of %s: %w", id, err)
	}
	return nil
}
