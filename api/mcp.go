package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/api/mcpserver"
	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/status"
)

// mcpTools answers the MCP server's tool calls with the service's use
// cases, called directly, each answer rendered as its REST route renders
// it: the same authentication, the same body rules, the same texts.
type mcpTools struct{ s *Server }

var _ mcpserver.Gateway = mcpTools{}

// Authenticate implements mcpserver.Gateway: the MCP resource's
// authenticator judges the token, unless the gateway's gate in front of the
// endpoint (mcpGate) verified it already.
func (m mcpTools) Authenticate(ctx context.Context, token string) error {
	if _, ok := auth.IdentityFrom(ctx); ok {
		return nil
	}
	_, err := m.s.mcpAuthn.Authenticate(ctx, token)
	return err
}

// Preview implements mcpserver.Gateway.
func (m mcpTools) Preview(ctx context.Context, header http.Header, scope string, args []byte) mcpserver.Reply {
	return mcpAction(m, ctx, header, "/preview", scope, args, previewOf, m.s.svc.Preview)
}

// Confirm implements mcpserver.Gateway.
func (m mcpTools) Confirm(ctx context.Context, header http.Header, scope string, args []byte) mcpserver.Reply {
	return mcpAction(m, ctx, header, "/confirm", scope, args, confirmOf, m.s.svc.Confirm)
}

// mcpAction answers a tool call of action scope as its route (the action's
// path ending in suffix) would: unknown_action when the catalog lacks it,
// else actionCall over the tool's arguments.
func mcpAction[R any](m mcpTools, ctx context.Context, header http.Header, suffix, scope string, args []byte, of requestOf[R],
	use func(context.Context, R) gateway.Answer) mcpserver.Reply {
	path := "/v1/actions/" + url.PathEscape(scope) + suffix
	return m.answer(ctx, header, http.MethodPost, path, func(ctx context.Context, caller gateway.Caller) gateway.Answer {
		if _, ok := m.s.svc.Catalog().Lookup(scope); !ok {
			return gateway.UnknownActionAnswer(scope)
		}
		return actionCall(ctx, scope, caller, args, of, use)
	})
}

// Status implements mcpserver.Gateway.
func (m mcpTools) Status(ctx context.Context, header http.Header, opID string) mcpserver.Reply {
	return m.answer(ctx, header, http.MethodGet, "/v1/operations/"+opID, func(ctx context.Context, caller gateway.Caller) gateway.Answer {
		return m.s.svc.Status(ctx, gateway.StatusRequest{Caller: caller, OperationID: opID})
	})
}

// answer continues the call's trace, takes its caller (the identity the
// gate verified, else the bearer token judged again), lets only an agent's
// identity act (decideAccess, as on the agent's routes), asks use, and
// renders its answer (method and path name the REST route the texts speak
// of).
func (m mcpTools) answer(ctx context.Context, header http.Header, method, path string,
	use func(ctx context.Context, caller gateway.Caller) gateway.Answer) mcpserver.Reply {
	ctx = telemetry.Continue(ctx, header)
	q := asked{ctx: ctx, traceID: telemetry.TraceID(ctx), lang: messages.ParseAcceptLanguage(header.Get("Accept-Language")),
		method: method, path: path}
	id, verified := auth.IdentityFrom(ctx)
	var err error
	if !verified {
		token, ok := bearerToken(header.Get("Authorization"))
		err = errNoBearer
		if ok {
			id, err = m.s.mcpAuthn.Authenticate(ctx, token)
		}
	}
	var a gateway.Answer
	switch access := decideAccess(id, agentRoute, m.s.cfg.OIDC.OperatorScope()); {
	case err != nil:
		m.s.log.InfoContext(ctx, "unauthenticated", "trace_id", q.traceID, "err", fmt.Errorf("mcp tool call: %w", err))
		a = gateway.NewAnswer(status.Unauthenticated)
	case access.refusal != "":
		a = gateway.NewAnswer(access.refusal)
		a.Detail = access.detail
	default:
		a = use(ctx, callerFrom(id))
	}
	body := borrowBuffer()
	defer giveBackBuffer(body)
	code := m.s.renderInto(body, http.Header{}, a, q)
	return mcpserver.Reply{Code: code, Body: append([]byte(nil), body.Bytes()...)}
}
