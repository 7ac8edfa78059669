package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults and bounds of OIDCConfig.
const (
	// DefaultSubjectClaim is the claim the subject is read from.
	DefaultSubjectClaim = "sub"
	// DefaultRolesClaim is the claim path the roles are read from.
	DefaultRolesClaim = "roles"
	// DefaultOperatorRole is the role (in the roles claim) that makes an
	// identity an operator.
	DefaultOperatorRole = "oncegate-operator"
	// MaxLeeway bounds the clock skew tolerated on exp, nbf and iat: a
	// longer one would keep expired tokens alive.
	MaxLeeway = 5 * time.Minute
	// DefaultJWKSRefresh is how often an issuer's keys are fetched again.
	DefaultJWKSRefresh = 5 * time.Minute
	// DefaultJWKSMaxAge is how long keys fetched last serve while the
	// provider does not answer; past it a token of that issuer is refused
	// as temporarily unavailable (ErrProviderUnavailable).
	DefaultJWKSMaxAge = time.Hour
	// DefaultUnknownKIDInterval is the least time between two fetches of an
	// issuer's keys caused by tokens naming an unknown kid (a rotation at
	// the provider is found at once; a flood of made-up kids costs the
	// provider one request per interval).
	DefaultUnknownKIDInterval = 30 * time.Second
	// DefaultDiscoveryTimeout bounds one discovery or key fetch.
	DefaultDiscoveryTimeout = 10 * time.Second
)

// DefaultAlgorithms are the signing algorithms an issuer's tokens may use
// unless configured otherwise: asymmetric only.
var DefaultAlgorithms = []string{"RS256", "ES256", "EdDSA", "PS256"}

// asymmetric are the algorithms an issuer's published keys can verify:
// never "none", never an HMAC (a public key is no secret).
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// acceptedTypes are the JWT typ headers of an access token (RFC 9068 §2.1:
// at+jwt; many providers still send JWT or none).
var acceptedTypes = []string{"", "jwt", "at+jwt", "application/at+jwt"}

// OIDCConfig configures OIDC access-token verification.
type OIDCConfig struct {
	// Issuers are the accepted issuers (at least one), each discovered at
	// <issuer>/.well-known/openid-configuration.
	Issuers []string
	// Audience must be one of a token's aud values (required): the
	// resource the tokens are for (the REST API; the MCP endpoint has its
	// own, see OIDC.ForAudience).
	Audience string
	// SubjectClaim is the claim path of the subject; empty means
	// DefaultSubjectClaim.
	SubjectClaim string
	// ClientClaim is the claim path of the acting client (Identity.Client);
	// empty means the first of DefaultClientClaims a token names.
	ClientClaim string
	// RolesClaim is the claim path of the roles, dotted for nested
	// objects (realm_access.roles), a list or a space-separated string;
	// empty means DefaultRolesClaim.
	RolesClaim string
	// OperatorRole makes an identity an operator when its roles hold it;
	// empty means DefaultOperatorRole.
	OperatorRole string
	// Leeway is the tolerated clock skew; zero means DefaultLeeway, and at
	// most MaxLeeway.
	Leeway time.Duration
	// Algorithms are the accepted signing algorithms; empty means
	// DefaultAlgorithms. Only asymmetric ones are allowed.
	Algorithms []string
	// JWKSRefresh is how often the keys are fetched again; zero means
	// DefaultJWKSRefresh.
	JWKSRefresh time.Duration
	// JWKSMaxAge is how long fetched keys serve without a newer fetch;
	// zero means DefaultJWKSMaxAge. At least JWKSRefresh.
	JWKSMaxAge time.Duration
	// UnknownKIDInterval is the least time between two fetches caused by an
	// unknown kid; zero means DefaultUnknownKIDInterval.
	UnknownKIDInterval time.Duration
	// RetryEvery is how often discovery is tried again while the provider
	// does not answer; zero means one second, doubling up to 30s.
	RetryEvery time.Duration
	// HTTPClient fetches discovery documents and keys; nil means a client
	// with DefaultDiscoveryTimeout.
	HTTPClient *http.Client
	// Logger logs discovery and key fetches; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// withDefaults fills the zero fields and checks the rest.
func (c OIDCConfig) withDefaults() (OIDCConfig, error) {
	var errs []error
	if len(c.Issuers) == 0 {
		errs = append(errs, errors.New("oidc: at least one issuer is required"))
	}
	for _, iss := range c.Issuers {
		if !strings.HasPrefix(iss, "https://") && !strings.HasPrefix(iss, "http://") {
			errs = append(errs, fmt.Errorf("oidc: issuer %q: want an http(s) URL", iss))
		}
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("oidc: an audience is required (the resource the tokens are issued for)"))
	}
	if c.SubjectClaim == "" {
		c.SubjectClaim = DefaultSubjectClaim
	}
	if c.RolesClaim == "" {
		c.RolesClaim = DefaultRolesClaim
	}
	if c.OperatorRole == "" {
		c.OperatorRole = DefaultOperatorRole
	}
	switch {
	case c.Leeway == 0:
		c.Leeway = DefaultLeeway
	case c.Leeway < 0 || c.Leeway > MaxLeeway:
		errs = append(errs, fmt.Errorf("oidc: leeway %s: want between 0 and %s", c.Leeway, MaxLeeway))
	}
	if len(c.Algorithms) == 0 {
		c.Algorithms = DefaultAlgorithms
	}
	for _, alg := range c.Algorithms {
		if !slices.Contains(asymmetric, alg) {
			errs = append(errs, fmt.Errorf("oidc: algorithm %q refused: want asymmetric ones (%s); never none or HMAC",
				alg, strings.Join(asymmetric, ", ")))
		}
	}
	if c.JWKSRefresh <= 0 {
		c.JWKSRefresh = DefaultJWKSRefresh
	}
	if c.JWKSMaxAge <= 0 {
		c.JWKSMaxAge = DefaultJWKSMaxAge
	}
	if c.JWKSMaxAge < c.JWKSRefresh {
		errs = append(errs, fmt.Errorf("oidc: keys' maximum age %s is shorter than their refresh interval %s", c.JWKSMaxAge, c.JWKSRefresh))
	}
	if c.UnknownKIDInterval <= 0 {
		c.UnknownKIDInterval = DefaultUnknownKIDInterval
	}
	if c.RetryEvery <= 0 {
		c.RetryEvery = time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultDiscoveryTimeout}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, errors.Join(errs...)
}

// OIDC verifies access tokens (JWTs, RFC 9068) of one or several OIDC
// issuers: each issuer's keys are discovered and cached (issuerKeys), its
// tokens verified by golang-jwt against them, and the claims turned into
// an Identity. Nothing of the JWT is parsed by hand.
type OIDC struct {
	cfg      OIDCConfig
	issuers  map[string]*issuerKeys
	audience string
	parsers  map[string]*jwt.Parser
}

var _ Authenticator = (*OIDC)(nil)

// NewOIDC starts discovering cfg's issuers in the background (until ctx
// ends) and returns the authenticator at once: until an issuer's keys are
// fetched, its tokens are refused with ErrProviderUnavailable and Ready
// reports it.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o := &OIDC{cfg: cfg, issuers: make(map[string]*issuerKeys, len(cfg.Issuers))}
	for _, iss := range cfg.Issuers {
		k := newIssuerKeys(iss, cfg)
		o.issuers[iss] = k
		go k.run(ctx)
	}
	return o.ForAudience(cfg.Audience), nil
}

// ForAudience returns an authenticator of the same issuers and keys that
// accepts the tokens issued for audience instead (RFC 8707: a token is
// bound to the resource it is for, the REST API or the MCP endpoint).
func (o *OIDC) ForAudience(audience string) *OIDC {
	p := &OIDC{cfg: o.cfg, issuers: o.issuers, audience: audience, parsers: make(map[string]*jwt.Parser, len(o.issuers))}
	for iss := range o.issuers {
		p.parsers[iss] = jwt.NewParser(
			jwt.WithValidMethods(o.cfg.Algorithms),
			jwt.WithIssuer(iss),
			jwt.WithAudience(audience),
			jwt.WithLeeway(o.cfg.Leeway),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithTimeFunc(o.cfg.Now),
		)
	}
	return p
}

// Audience is the audience this authenticator accepts.
func (o *OIDC) Audience() string { return o.audience }

// Issuers are the accepted issuers, in their configured order.
func (o *OIDC) Issuers() []string { return o.cfg.Issuers }

// Ready reports an issuer whose keys cannot serve now (never fetched, or
// older than their maximum age).
func (o *OIDC) Ready(context.Context) error {
	var errs []error
	for _, iss := range o.cfg.Issuers {
		if err := o.issuers[iss].usable(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unverified reads a token's header and claims without verifying them,
// only to choose the issuer whose keys verify it.
var unverified = jwt.NewParser()

// Authenticate implements Authenticator.
func (o *OIDC) Authenticate(ctx context.Context, token string) (Identity, error) {
	var peek jwt.MapClaims
	head, _, err := unverified.ParseUnverified(token, &peek)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenUnverifiable) { // an alg jwt does not know
			return Identity{}, refuse(ReasonAlgorithm, err)
		}
		return Identity{}, refuse(ReasonMalformed, err)
	}
	iss, _ := peek["iss"].(string)
	keys, ok := o.issuers[iss]
	if !ok {
		return Identity{}, refuse(ReasonIssuer, fmt.Errorf("oidc: issuer %q is not accepted", iss))
	}
	if alg := head.Method.Alg(); !slices.Contains(o.cfg.Algorithms, alg) {
		return Identity{}, refuse(ReasonAlgorithm, fmt.Errorf("oidc: algorithm %q is not accepted (%s)", alg, strings.Join(o.cfg.Algorithms, ", ")))
	}
	if typ, _ := head.Header["typ"].(string); !slices.Contains(acceptedTypes, strings.ToLower(typ)) {
		return Identity{}, refuse(ReasonClaims, fmt.Errorf("oidc: typ %q is not an access token's", typ))
	}
	if err := keys.usable(); err != nil {
		return Identity{}, err
	}
	var claims jwt.MapClaims
	if _, err := o.parsers[iss].ParseWithClaims(token, &claims, keys.keyfunc(ctx)); err != nil {
		return Identity{}, keys.refusal(err)
	}
	return o.identity(iss, claims)
}

// identity turns verified claims into an Identity.
func (o *OIDC) identity(iss string, claims jwt.MapClaims) (Identity, error) {
	subject, _ := claimAt(claims, o.cfg.SubjectClaim).(string)
	if subject == "" {
		return Identity{}, refuse(ReasonClaims, fmt.Errorf("oidc: no subject in claim %q", o.cfg.SubjectClaim))
	}
	id := Identity{Subject: subject, Role: RoleAgent, Issuer: iss,
		Roles: stringsOf(claimAt(claims, o.cfg.RolesClaim)), Scopes: scopesOf(claims)}
	if slices.Contains(id.Roles, o.cfg.OperatorRole) {
		id.Role = RoleOperator
	}
	names := DefaultClientClaims
	if o.cfg.ClientClaim != "" {
		names = []string{o.cfg.ClientClaim}
	}
	for _, c := range names {
		if v, ok := claimAt(claims, c).(string); ok && v != "" {
			id.Client = v
			break
		}
	}
	return id, nil
}

// DefaultClientClaims name the acting client when no client claim is
// configured, in the order they are read: RFC 9068's client_id, OIDC's
// azp, Okta's cid, Entra ID v1's appid.
var DefaultClientClaims = []string{"client_id", "azp", "cid", "appid"}

// claimAt returns the claim at a dotted path (realm_access.roles), or nil.
// A claim whose own name has dots (https://example.com/roles) is found
// first as it is.
func claimAt(claims map[string]any, path string) any {
	if v, ok := claims[path]; ok {
		return v
	}
	head, rest, nested := strings.Cut(path, ".")
	if !nested {
		return nil
	}
	inner, ok := claims[head].(map[string]any)
	if !ok {
		return nil
	}
	return claimAt(inner, rest)
}

// stringsOf reads a list claim: an array of strings, or one string of
// space-separated values (as scope is).
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// scopesOf reads the granted scopes: scope (RFC 9068, space-separated) or
// scp (an array, as Hydra, Okta and Entra ID send it).
func scopesOf(claims jwt.MapClaims) []string {
	if s := stringsOf(claims["scope"]); len(s) > 0 {
		return s
	}
	return stringsOf(claims["scp"])
}

// reasonOf classifies a verification error of golang-jwt.
func reasonOf(err error) Reason {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ReasonMalformed
	case errors.Is(err, jwt.ErrTokenExpired):
		return ReasonExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return ReasonNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ReasonIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ReasonAudience
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return ReasonClaims
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return ReasonUnknownKey
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ReasonSignature
	}
	return ReasonUnknown
}
