package mcpserver

import (
	"context"
	"net/http"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/api/auth"
)

// identityExtra keys the verified identity in the SDK's TokenInfo.Extra.
const identityExtra = "oncegate.identity"

// carryIdentity hands the identity the gateway verified for an MCP request
// (auth.WithIdentity in the request's context, put there by the gateway's
// resource-server gate in front of this handler) to the SDK as the
// request's TokenInfo, by the SDK's own RequireBearerToken: the SDK then
// gives it to every tool call of the request (CallToolRequest.Extra) and,
// in stateful mode, refuses a session's requests from another user (its
// UserID). A request without such an identity (no gate in front: the tool
// calls forward the bearer token, judged again by the gateway) goes to
// plain as it is.
func carryIdentity(streamable http.Handler) http.Handler {
	withToken := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		id, _ := auth.IdentityFrom(ctx)
		return &sdkauth.TokenInfo{Scopes: id.Scopes, UserID: id.Issuer + "|" + id.Subject, Extra: map[string]any{identityExtra: id}}, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable) // the gate checked exp
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := auth.IdentityFrom(r.Context()); ok {
			withToken.ServeHTTP(w, r)
			return
		}
		streamable.ServeHTTP(w, r)
	})
}

// callerContext is ctx carrying the identity of the tool call's request,
// when the gateway verified it: the gateway's handler then acts with that
// identity (for the MCP resource's audience) instead of authenticating the
// forwarded token again (for the REST API's).
func callerContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return ctx
	}
	if id, ok := req.Extra.TokenInfo.Extra[identityExtra].(auth.Identity); ok {
		return auth.WithIdentity(ctx, id)
	}
	return ctx
}
