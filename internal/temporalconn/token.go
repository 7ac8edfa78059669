package temporalconn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TokenRefreshBefore is how long before its expiry a cached access token is
// replaced by a new one: a call never carries a token that expires on its
// way to the frontend.
const TokenRefreshBefore = 30 * time.Second

// tokenTimeout bounds one request to the token endpoint.
const tokenTimeout = 10 * time.Second

// OAuth is the client-credentials grant by which the client obtains the
// access tokens it sends to a Temporal frontend whose authorization
// checks them (global.authorization with a JWT key provider): the
// gateway's and the worker's own identity at the identity provider.
type OAuth struct {
	// TokenURL is the identity provider's token endpoint; unset: no token
	// is sent.
	TokenURL string `env:"TEMPORAL_OAUTH_TOKEN_URL"`
	// ClientID is the client's id at the identity provider.
	ClientID string `env:"TEMPORAL_OAUTH_CLIENT_ID"`
	// ClientSecret is the client's secret.
	ClientSecret string `env:"TEMPORAL_OAUTH_CLIENT_SECRET"`
	// Scopes are the scopes asked for, space-separated (the Temporal
	// permissions the frontend reads from the token, such as
	// default:writer).
	Scopes string `env:"TEMPORAL_OAUTH_SCOPES"`
	// Audience is the audience asked for (the audience parameter, as Ory
	// Hydra and Auth0 take it), comma-separated; unset: none asked.
	Audience string `env:"TEMPORAL_OAUTH_AUDIENCE"`
}

// enabled reports whether tokens are to be sent.
func (o OAuth) enabled() bool {
	return o.TokenURL != "" || o.ClientID != "" || o.ClientSecret != ""
}

// validate checks that the grant's settings go together.
func (o OAuth) validate() error {
	if o.enabled() && (o.TokenURL == "" || o.ClientID == "" || o.ClientSecret == "") {
		return errors.New("TEMPORAL_OAUTH_TOKEN_URL, TEMPORAL_OAUTH_CLIENT_ID and TEMPORAL_OAUTH_CLIENT_SECRET go together (the client-credentials grant of the tokens sent to Temporal)")
	}
	return nil
}

// tokenHeaders is the SDK's HeadersProvider that sends a client-credentials
// access token, cached and replaced TokenRefreshBefore its expiry.
type tokenHeaders struct {
	src oauth2.TokenSource
}

// newTokenHeaders returns the headers provider of o.
func newTokenHeaders(o OAuth) *tokenHeaders {
	cc := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL,
		Scopes: strings.Fields(o.Scopes)}
	if o.Audience != "" {
		cc.EndpointParams = map[string][]string{"audience": strings.Split(o.Audience, ",")}
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenTimeout})
	return &tokenHeaders{src: oauth2.ReuseTokenSourceWithExpiry(nil, cc.TokenSource(ctx), TokenRefreshBefore)}
}

// GetHeaders implements the SDK's client.HeadersProvider: the bearer token
// in the authorization header the frontend's claim mapper reads.
func (h *tokenHeaders) GetHeaders(context.Context) (map[string]string, error) {
	tok, err := h.src.Token()
	if err != nil {
		return nil, fmt.Errorf("temporal access token: %w", err)
	}
	return map[string]string{"authorization": "Bearer " + tok.AccessToken}, nil
}
