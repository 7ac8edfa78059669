package api

import (
	"net/url"

	"github.com/labstack/echo/v4"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/oncegate/oncegate/api/auth"
)

// The MCP endpoint as an OAuth 2.1 resource server (the MCP authorization
// specification of 2025-06-18): its protected-resource metadata (RFC 9728)
// names the identity providers, the scopes and the resource (the MCP
// endpoint's canonical URI); a token is accepted only when issued for that
// resource (RFC 8707: aud), so a token for the REST API is refused here and
// an MCP token on the REST API; a refusal's challenge names the metadata,
// so that a client discovers where to get a token.

// wellKnownPRM is the path of the protected-resource metadata (RFC 9728
// §3); the metadata of a resource with a path is at this path followed by
// the resource's path.
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// mcpResource is the MCP endpoint as a resource server; nil without OIDC.
type mcpResource struct {
	// metadata is the protected-resource metadata.
	metadata *oauthex.ProtectedResourceMetadata
	// metadataURL is where it is served for the resource (RFC 9728 §3.1).
	metadataURL string
	// scopes are the scopes a token needs at the endpoint.
	scopes []string
}

// newMCPResource describes the MCP endpoint of cfg (nil without OIDC).
func newMCPResource(cfg Config) *mcpResource {
	if !cfg.OIDC.Enabled() {
		return nil
	}
	res := cfg.OIDC.MCPResource
	metadataURL := res
	if u, err := url.Parse(res); err == nil {
		u.Path = wellKnownPRM + u.EscapedPath()
		u.RawPath, u.RawQuery = "", ""
		metadataURL = u.String()
	}
	return &mcpResource{
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               res,
			AuthorizationServers:   cfg.OIDC.Issuers,
			ScopesSupported:        cfg.OIDC.MCPScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "oncegate MCP: exactly-once actions for agents",
		},
		metadataURL: metadataURL,
		scopes:      cfg.OIDC.MCPScopes,
	}
}

// metadataPath is the path the metadata is served at for the resource.
func (m *mcpResource) metadataPath() string {
	if u, err := url.Parse(m.metadataURL); err == nil {
		return u.Path
	}
	return wellKnownPRM
}

// routeMCPResource serves the protected-resource metadata, at the
// resource's own well-known path and at the root one, by the SDK's handler.
func (s *Server) routeMCPResource(e *echo.Echo) {
	if s.mcpRes == nil {
		return
	}
	h := echo.WrapHandler(sdkauth.ProtectedResourceMetadataHandler(s.mcpRes.metadata))
	for _, path := range []string{wellKnownPRM, s.mcpRes.metadataPath()} {
		e.GET(path, h)
		e.OPTIONS(path, h) // CORS preflight of browser-based clients
	}
}

// mcpGate authenticates a request to the MCP endpoint with the MCP
// resource's authenticator (Deps.MCPAuthenticator: tokens for the MCP
// resource's audience), checks the scopes it needs (ONCEGATE_MCP_SCOPES,
// for tokens that carry scopes) and hands the identity to the tool calls
// (auth.WithIdentity). A refusal is the gateway's own answer, with a
// challenge naming the metadata.
func (s *Server) mcpGate(next echo.HandlerFunc) echo.HandlerFunc {
	var metadataURL string
	var scopes []string
	if s.mcpRes != nil {
		metadataURL, scopes = s.mcpRes.metadataURL, s.mcpRes.scopes
	}
	return func(c echo.Context) error {
		req := c.Request()
		token, ok := bearerToken(req.Header.Get(echo.HeaderAuthorization))
		var id auth.Identity
		err := errNoBearer
		if ok {
			id, err = s.mcpAuthn.Authenticate(req.Context(), token)
		}
		if err != nil {
			s.log.InfoContext(req.Context(), "unauthenticated", "trace_id", traceIDOf(c), "path", req.URL.Path, "err", err)
			return s.render(c, refuseToken(c.Response().Header(), err, ok, metadataURL))
		}
		if missing := id.MissingScopes(scopes); len(missing) > 0 {
			s.log.InfoContext(req.Context(), "insufficient scope", "trace_id", traceIDOf(c), "subject", id.Subject, "missing", missing)
			return s.render(c, insufficientScopeReply(c.Response().Header(), scopes, metadataURL))
		}
		c.SetRequest(req.WithContext(auth.WithIdentity(req.Context(), id)))
		return next(c)
	}
}
