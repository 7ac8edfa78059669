package api

import (
	"errors"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// This file decides who may call which route (an agent acts for its
// subject; an operator only on the ops routes) and answers a refused
// bearer token truthfully: 401 unauthenticated with RFC 6750's
// WWW-Authenticate, naming why; 503 temporarily_unavailable when the
// token's identity provider cannot be reached to verify it (the token may
// be good: the same request can succeed); 403 insufficient_scope naming
// the scope.

// routeKind is whom a route is for.
type routeKind int

const (
	// agentRoute acts for the caller's subject: preview, confirm, status.
	agentRoute routeKind = iota
	// opsRoute is an operator's: list, show, resolve, limits, passkeys.
	opsRoute
)

// access is what decideAccess decided: allowed (the zero value), or the
// refusal's status with its detail and the scope it names.
type access struct {
	// refusal is the status of the refusal; empty: allowed.
	refusal status.Status
	// detail is the refusal's detail fragment, if any.
	detail string
	// scope is the scope an insufficient_scope refusal names.
	scope string
}

// Details of the refusals of this file.
const (
	detailOperatorNotAgent = "detail.operator_not_agent"
	detailNoToken          = "detail.no_token"
	detailIdentityProvider = "detail.identity_provider"
)

// decideAccess decides whether id may call a route of kind. operatorScope
// is the scope an identity provider grants operators when roles are read
// from the granted scopes (OIDCConfig.OperatorScope), else empty.
func decideAccess(id auth.Identity, kind routeKind, operatorScope string) access {
	switch {
	case kind == agentRoute && id.IsOperator():
		return access{refusal: status.Forbidden, detail: detailOperatorNotAgent}
	case kind == opsRoute && !id.IsOperator() && operatorScope != "" && id.Scoped():
		return access{refusal: status.InsufficientScope, scope: operatorScope}
	case kind == opsRoute && !id.IsOperator():
		return access{refusal: status.Forbidden}
	}
	return access{}
}

// routeFor returns the middleware that lets only the identities
// decideAccess allows on a route of kind through.
func (s *Server) routeFor(kind routeKind) echo.MiddlewareFunc {
	operatorScope := s.cfg.OIDC.OperatorScope()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			a := decideAccess(identityOf(c), kind, operatorScope)
			if a.refusal == "" {
				return next(c)
			}
			if a.refusal == status.InsufficientScope {
				return s.render(c, insufficientScopeReply(c.Response().Header(), []string{a.scope}, ""))
			}
			r := gateway.NewAnswer(a.refusal)
			r.Detail = a.detail
			return s.render(c, r)
		}
	}
}

// insufficientScopeReply is the 403 insufficient_scope of scopes, with its
// WWW-Authenticate challenge set on h (RFC 6750 §3.1); the challenge names resourceMetadata when set (RFC 9728 §5.1).
func insufficientScopeReply(h interface{ Set(string, string) }, scopes []string, resourceMetadata string) gateway.Answer {
	want := strings.Join(scopes, " ")
	h.Set(echo.HeaderWWWAuthenticate, challenge(resourceMetadata, "insufficient_scope",
		"the token lacks the scope this request needs", want))
	r := gateway.NewAnswer(status.InsufficientScope)
	r.Words = gateway.Words{Expected: want}
	return r
}

// refuseToken answers a bearer token the authenticator refused (err), or
// its absence (presented false): 503 when the token's identity provider
// cannot be reached, else 401 with the reason. resourceMetadata, when set,
// is named in the challenge (the MCP endpoint's protected-resource
// metadata, RFC 9728 §5.1).
func refuseToken(h interface{ Set(string, string) }, err error, presented bool, resourceMetadata string) gateway.Answer {
	if presented && errors.Is(err, auth.ErrProviderUnavailable) {
		return gateway.UnavailableAnswer("", detailIdentityProvider)
	}
	r := gateway.NewAnswer(status.Unauthenticated)
	if !presented {
		// RFC 6750 §3.1: no error code when the request had no token.
		h.Set(echo.HeaderWWWAuthenticate, challenge(resourceMetadata, "", "", ""))
		r.Detail = detailNoToken
		return r
	}
	reason := auth.Explain(err)
	h.Set(echo.HeaderWWWAuthenticate, challenge(resourceMetadata, "invalid_token", reason.Description(), ""))
	r.Detail = tokenDetails[reason]
	return r
}

// tokenDetails are the detail fragments of the reasons a token is refused.
var tokenDetails = map[auth.Reason]string{
	auth.ReasonUnknown:     "detail.token_unknown",
	auth.ReasonMalformed:   "detail.token_malformed",
	auth.ReasonIssuer:      "detail.token_wrong_issuer",
	auth.ReasonAlgorithm:   "detail.token_algorithm_not_accepted",
	auth.ReasonUnknownKey:  "detail.token_unknown_key",
	auth.ReasonSignature:   "detail.token_bad_signature",
	auth.ReasonAudience:    "detail.token_wrong_audience",
	auth.ReasonExpired:     "detail.token_expired",
	auth.ReasonNotYetValid: "detail.token_not_yet_valid",
	auth.ReasonClaims:      "detail.token_claims",
}

// challenge is a Bearer WWW-Authenticate challenge (RFC 6750 §3, RFC 9728
// §5.1): the realm, then the parameters that are set. Every value is a
// quoted string of the gateway's own making, without quotes or
// backslashes.
func challenge(resourceMetadata, errCode, description, scope string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="oncegate"`)
	for _, p := range [][2]string{
		{"resource_metadata", resourceMetadata}, {"error", errCode}, {"error_description", description}, {"scope", scope},
	} {
		if p[1] != "" {
			b.WriteString(", " + p[0] + `="` + p[1] + `"`)
		}
	}
	return b.String()
}

// keysNotReady is not_ready for an identity provider whose keys are not at
// hand (auth.Ready): the truth answers, the tokens of that provider cannot
// be verified.
func keysNotReady(redis string) gateway.Answer {
	r := gateway.NewAnswer(status.NotReady).With("postgres", "ok").With("redis", redis).With("identity_provider", "unreachable")
	r.Detail = "detail.identity_provider_keys"
	return r
}
