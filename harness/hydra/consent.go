package hydra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/oauth2"
)

// DefaultSubject is who the login app logs in when the authorization
// request names nobody (login_hint).
const DefaultSubject = "alice"

// ConsentApp is the minimal login-and-consent app Hydra sends a person's
// browser to (URLS_LOGIN, URLS_CONSENT): it logs in the subject the
// authorization request names in login_hint (no password: dev and tests
// only) and grants the scopes and audiences the client asked for.
type ConsentApp struct {
	// URL is the app's base URL.
	URL string
	h   *Hydra
	srv *http.Server
}

// StartConsentApp serves the login-and-consent app of h on port of
// 127.0.0.1 (0: a free one).
func StartConsentApp(h *Hydra, port int) (*ConsentApp, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("consent app: %w", err)
	}
	a := &ConsentApp{URL: "http://" + ln.Addr().String(), h: h}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", a.login)
	mux.HandleFunc("GET /consent", a.consent)
	mux.HandleFunc("GET /error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, r.URL.Query().Get("error")+": "+r.URL.Query().Get("error_description"), http.StatusBadRequest)
	})
	a.srv = &http.Server{Handler: mux}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Close stops the app.
func (a *ConsentApp) Close() { _ = a.srv.Close() }

// login accepts the login request of the challenge for its login_hint.
func (a *ConsentApp) login(w http.ResponseWriter, r *http.Request) {
	challenge := r.URL.Query().Get("login_challenge")
	var req struct {
		OIDCContext struct {
			LoginHint string `json:"login_hint"`
		} `json:"oidc_context"`
	}
	q := "?login_challenge=" + url.QueryEscape(challenge)
	if err := a.h.do(r.Context(), http.MethodGet, a.h.AdminURL+"/admin/oauth2/auth/requests/login"+q, nil, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	subject := req.OIDCContext.LoginHint
	if subject == "" {
		subject = DefaultSubject
	}
	a.accept(w, r, "/admin/oauth2/auth/requests/login/accept"+q, map[string]any{"subject": subject, "remember": false})
}

// consent grants what the client asked for.
func (a *ConsentApp) consent(w http.ResponseWriter, r *http.Request) {
	q := "?consent_challenge=" + url.QueryEscape(r.URL.Query().Get("consent_challenge"))
	var req struct {
		RequestedScope    []string `json:"requested_scope"`
		RequestedAudience []string `json:"requested_access_token_audience"`
	}
	if err := a.h.do(r.Context(), http.MethodGet, a.h.AdminURL+"/admin/oauth2/auth/requests/consent"+q, nil, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	a.accept(w, r, "/admin/oauth2/auth/requests/consent/accept"+q, map[string]any{
		"grant_scope": req.RequestedScope, "grant_access_token_audience": req.RequestedAudience, "remember": false,
	})
}

// accept puts the acceptance and sends the browser where Hydra says.
func (a *ConsentApp) accept(w http.ResponseWriter, r *http.Request, path string, body any) {
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	if err := a.h.do(r.Context(), http.MethodPut, a.h.AdminURL+path, body, &out); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, out.RedirectTo, http.StatusFound)
}

// PersonClient is a public client of the authorization-code flow with
// PKCE (a person's app), redirecting to redirectURI.
func PersonClient(id, redirectURI string, scopes, audience []string) Client {
	return Client{ID: id, GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		Scope: strings.Join(scopes, " "), Audience: audience, RedirectURIs: []string{redirectURI}, TokenEndpointAuthMethod: "none"}
}

// AuthorizationCode runs the authorization-code flow with PKCE (S256) of
// the public client c for subject, as a browser would: the authorization
// request, Hydra's redirects through the login-and-consent app, the code at
// the client's redirect URI, then the code exchanged with the verifier.
func (h *Hydra) AuthorizationCode(ctx context.Context, c Client, subject string, scopes, audience []string) (*oauth2.Token, error) {
	if len(c.RedirectURIs) == 0 {
		return nil, errors.New("authorization code: the client has no redirect URI")
	}
	redirect := c.RedirectURIs[0]
	cfg := &oauth2.Config{ClientID: c.ID, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: h.Issuer + "/oauth2/auth", TokenURL: h.Issuer + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier, state := oauth2.GenerateVerifier(), fmt.Sprintf("%x", randomBytes(16))
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("login_hint", subject), oauth2.SetAuthURLParam("audience", strings.Join(audience, " ")))

	jar, _ := cookiejar.New(nil)
	var code string
	browser := &http.Client{Jar: jar, Timeout: h.http.Timeout, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), redirect) {
			code = r.URL.Query().Get("code")
			if r.URL.Query().Get("state") != state {
				return fmt.Errorf("authorization code: state %q is not the one sent", r.URL.Query().Get("state"))
			}
			if e := r.URL.Query().Get("error"); e != "" {
				return fmt.Errorf("authorization code: %s: %s", e, r.URL.Query().Get("error_description"))
			}
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	res, err := browser.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authorization code: %w", err)
	}
	_ = res.Body.Close()
	if code == "" {
		return nil, fmt.Errorf("authorization code: the flow ended at %s (%s) without a code", res.Request.URL, res.Status)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.http), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("authorization code: exchange: %w", err)
	}
	return tok, nil
}
