package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/oncegate/oncegate/api/auth"
)

// OIDCConfig is how the gateway accepts the access tokens of the
// organisation's identity providers (docs/identity.md), and how its MCP
// endpoint takes part in the MCP authorization flow as an OAuth 2.1
// resource server. Unset ONCEGATE_OIDC_ISSUER: no OIDC.
type OIDCConfig struct {
	// Issuers are the accepted issuers (ONCEGATE_OIDC_ISSUER,
	// comma-separated), each discovered at its
	// /.well-known/openid-configuration.
	Issuers []string `env:"ONCEGATE_OIDC_ISSUER"`
	// Audience is the REST API's audience: every token for it names it in
	// aud (ONCEGATE_OIDC_AUDIENCE; required with an issuer).
	Audience string `env:"ONCEGATE_OIDC_AUDIENCE"`
	// SubjectClaim is the claim (path) of the subject.
	SubjectClaim string `env:"ONCEGATE_OIDC_SUBJECT_CLAIM" envDefault:"sub"`
	// ClientClaim is the claim (path) of the acting client, the agent that
	// acts for the subject; empty reads auth.DefaultClientClaims
	// (client_id, else azp, cid, appid).
	ClientClaim string `env:"ONCEGATE_OIDC_CLIENT_CLAIM"`
	// RolesClaim is the claim path of the roles or groups (dotted for
	// nested claims, such as realm_access.roles; scp or scope read the
	// granted scopes as roles).
	RolesClaim string `env:"ONCEGATE_OIDC_ROLES_CLAIM" envDefault:"roles"`
	// OperatorRole is the role (a value of the roles claim) of operators.
	OperatorRole string `env:"ONCEGATE_OIDC_OPERATOR_ROLE" envDefault:"oncegate-operator"`
	// Leeway is the clock skew tolerated on exp, nbf and iat (at most
	// auth.MaxLeeway).
	Leeway time.Duration `env:"ONCEGATE_OIDC_LEEWAY" envDefault:"30s"`
	// Algorithms are the accepted signing algorithms (asymmetric only).
	Algorithms []string `env:"ONCEGATE_OIDC_ALGORITHMS" envDefault:"RS256,ES256,EdDSA,PS256"`
	// JWKSRefresh is how often each issuer's keys are fetched again.
	JWKSRefresh time.Duration `env:"ONCEGATE_OIDC_JWKS_REFRESH" envDefault:"5m"`
	// JWKSMaxAge is how long fetched keys serve while the provider does not
	// answer; past it, its tokens are answered temporarily_unavailable.
	JWKSMaxAge time.Duration `env:"ONCEGATE_OIDC_JWKS_MAX_AGE" envDefault:"1h"`
	// UnknownKIDInterval is the least time between two key fetches caused
	// by tokens naming an unknown kid.
	UnknownKIDInterval time.Duration `env:"ONCEGATE_OIDC_UNKNOWN_KID_INTERVAL" envDefault:"30s"`
	// MCPResource is the MCP endpoint's canonical URI: the audience of the
	// tokens it accepts (RFC 8707) and the resource its protected-resource
	// metadata names (ONCEGATE_MCP_RESOURCE; default: ONCEGATE_PUBLIC_URL
	// followed by /mcp).
	MCPResource string `env:"ONCEGATE_MCP_RESOURCE"`
	// MCPScopes are the scopes a token needs at the MCP endpoint
	// (ONCEGATE_MCP_SCOPES, comma-separated; default none), announced in
	// its protected-resource metadata.
	MCPScopes []string `env:"ONCEGATE_MCP_SCOPES"`
}

// Enabled reports whether OIDC tokens are accepted.
func (c OIDCConfig) Enabled() bool { return len(c.Issuers) > 0 }

// OperatorScope is the scope an identity provider grants operators, when
// the roles are read from the granted scopes (ONCEGATE_OIDC_ROLES_CLAIM scp
// or scope): a refusal at an ops route then names it (insufficient_scope).
// Empty otherwise: the operator role is a role, not a scope.
func (c OIDCConfig) OperatorScope() string {
	if c.Enabled() && (c.RolesClaim == "scp" || c.RolesClaim == "scope") {
		return c.OperatorRole
	}
	return ""
}

// trimmed drops the blanks around and between the list items.
func (c OIDCConfig) trimmed() OIDCConfig {
	c.Issuers, c.Algorithms, c.MCPScopes = items(c.Issuers), items(c.Algorithms), items(c.MCPScopes)
	return c
}

// items are the non-empty trimmed values of a comma-separated list.
func items(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// check reports what is wrong with the OIDC settings, naming the variables.
func (c OIDCConfig) check(publicURL string) []error {
	var errs []error
	if !c.Enabled() {
		if c.Audience != "" || c.MCPResource != "" || len(c.MCPScopes) > 0 {
			errs = append(errs, errors.New("ONCEGATE_OIDC_AUDIENCE, ONCEGATE_MCP_RESOURCE and ONCEGATE_MCP_SCOPES need ONCEGATE_OIDC_ISSUER (the identity provider)"))
		}
		return errs
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("ONCEGATE_OIDC_ISSUER is set: ONCEGATE_OIDC_AUDIENCE is required (the audience your identity provider puts in the REST API's tokens)"))
	}
	for _, iss := range c.Issuers {
		if u, err := url.Parse(iss); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_OIDC_ISSUER: %q: want the issuer's URL, as its tokens' iss says it", iss))
		}
	}
	if c.Leeway < 0 || c.Leeway > auth.MaxLeeway {
		errs = append(errs, fmt.Errorf("ONCEGATE_OIDC_LEEWAY=%s: want at most %s", c.Leeway, auth.MaxLeeway))
	}
	if c.JWKSRefresh <= 0 || c.JWKSMaxAge < c.JWKSRefresh {
		errs = append(errs, fmt.Errorf("ONCEGATE_OIDC_JWKS_MAX_AGE=%s: want at least ONCEGATE_OIDC_JWKS_REFRESH=%s (positive)", c.JWKSMaxAge, c.JWKSRefresh))
	}
	if c.UnknownKIDInterval <= 0 {
		errs = append(errs, fmt.Errorf("ONCEGATE_OIDC_UNKNOWN_KID_INTERVAL=%s: want a positive duration", c.UnknownKIDInterval))
	}
	if u, err := url.Parse(c.mcpResource(publicURL)); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("ONCEGATE_MCP_RESOURCE=%q: want the MCP endpoint's absolute URI without a fragment (RFC 8707)", c.mcpResource(publicURL)))
	}
	if c.mcpResource(publicURL) == c.Audience {
		errs = append(errs, fmt.Errorf("ONCEGATE_MCP_RESOURCE and ONCEGATE_OIDC_AUDIENCE are both %q: a token for the MCP endpoint must not be one for the REST API", c.Audience))
	}
	for _, scope := range append(slices.Clone(c.MCPScopes), c.OperatorScope()) {
		if strings.ContainsAny(scope, "\"\\ ") {
			errs = append(errs, fmt.Errorf("%q: a scope has no quote, backslash or space (RFC 6749 §3.3; ONCEGATE_MCP_SCOPES, ONCEGATE_OIDC_OPERATOR_ROLE)", scope))
		}
	}
	_, err := c.authConfig(nil)
	return append(errs, err)
}

// mcpResource is MCPResource, or publicURL + /mcp.
func (c OIDCConfig) mcpResource(publicURL string) string {
	if c.MCPResource != "" {
		return c.MCPResource
	}
	return strings.TrimRight(publicURL, "/") + "/mcp"
}

// authConfig is the auth package's view of the settings (its checks of the
// algorithms included).
func (c OIDCConfig) authConfig(logger *slog.Logger) (auth.OIDCConfig, error) {
	algs := items(c.Algorithms)
	cfg := auth.OIDCConfig{
		Issuers: c.Issuers, Audience: c.Audience, SubjectClaim: c.SubjectClaim, ClientClaim: c.ClientClaim, RolesClaim: c.RolesClaim,
		OperatorRole: c.OperatorRole, Leeway: c.Leeway, Algorithms: algs, JWKSRefresh: c.JWKSRefresh,
		JWKSMaxAge: c.JWKSMaxAge, UnknownKIDInterval: c.UnknownKIDInterval, Logger: logger,
	}
	for _, alg := range algs {
		if alg == "none" || strings.HasPrefix(alg, "HS") {
			return cfg, fmt.Errorf("ONCEGATE_OIDC_ALGORITHMS: %q is refused: an issuer's keys are public, so only asymmetric algorithms verify its tokens", alg)
		}
	}
	return cfg, nil
}

// OIDCAuthenticators builds the OIDC authenticators of cfg: one for the
// REST API's audience and one for the MCP endpoint's resource, sharing the
// issuers' keys, which are discovered in the background until ctx ends.
// Both are nil when OIDC is not configured.
func OIDCAuthenticators(ctx context.Context, cfg Config, logger *slog.Logger) (rest, mcp *auth.OIDC, err error) {
	if !cfg.OIDC.Enabled() {
		return nil, nil, nil
	}
	ac, err := cfg.OIDC.authConfig(logger)
	if err != nil {
		return nil, nil, err
	}
	rest, err = auth.NewOIDC(ctx, ac)
	if err != nil {
		return nil, nil, fmt.Errorf("ONCEGATE_OIDC_*: %w", err)
	}
	return rest, rest.ForAudience(cfg.withDefaults(cfg.Gateway.WithDefaults()).OIDC.MCPResource), nil
}
