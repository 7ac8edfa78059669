package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ApprovalInput is the key of the approval's URL elicitation among a
// confirm tool's input requests.
const ApprovalInput = "oncegate_approval"

// protocolMultiRoundTrip is the first MCP version whose clients answer a
// tool's input requests themselves (SEP-2322): a stateless server can ask.
const protocolMultiRoundTrip = "2026-07-28"

// approvalAsked is what a confirm's approval_required answer says.
type approvalAsked struct {
	Status      string `json:"status"`
	OperationID string `json:"operation_id"`
	Approval    struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"approval"`
}

// approvalRequired reads body: ok when it is approval_required with a link.
func approvalRequired(body []byte) (approvalAsked, bool) {
	var a approvalAsked
	if json.Unmarshal(body, &a) != nil || a.Status != "approval_required" || a.Approval.URL == "" {
		return approvalAsked{}, false
	}
	return a, true
}

// canElicitURL reports whether the client declared URL-mode elicitation
// and can be asked on this request: it answers input requests itself (the
// 2026-07-28 protocol), or the session is stateful (the SDK then sends
// elicitation/create on the session).
func (c *caller) canElicitURL(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return false
	}
	return c.stateful || req.ProtocolVersion() >= protocolMultiRoundTrip
}

// confirm runs a confirm tool call. When the action asks a person to
// approve and the client declared URL-mode elicitation, the client's host
// is asked to open the approval link (elicitation/create, mode url); once
// the user accepted to open it, the confirm is asked again until the
// person decided (at most the approval wait) and that answer is the
// result. Otherwise, and when the user did not open the link, the result
// is approval_required with the link, for the agent to give the user.
func (c *caller) confirm(ctx context.Context, req *mcp.CallToolRequest, header http.Header, scope string, args []byte) *mcp.CallToolResult {
	first := c.gw.Confirm(ctx, header, scope, args)
	code, body := first.Code, first.Body
	asked, ok := approvalRequired(body)
	if !ok || !c.canElicitURL(req) {
		return result(code, body)
	}
	answer, answered := req.Params.InputResponses[ApprovalInput]
	if !answered {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{ApprovalInput: &mcp.ElicitParams{
			Mode:          "url",
			Message:       "Approve or decline this operation with your passkey on the page that opens. Check the amount and the payee it shows.",
			URL:           asked.Approval.URL,
			ElicitationID: asked.OperationID,
		}}}
	}
	if er, ok := answer.(*mcp.ElicitResult); !ok || er.Action != "accept" {
		return result(code, body) // the user did not open the link: the agent gives it to them
	}
	deadline := time.Now().Add(c.wait)
	if !asked.Approval.ExpiresAt.IsZero() && asked.Approval.ExpiresAt.Before(deadline) {
		deadline = asked.Approval.ExpiresAt
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return result(code, body)
		case <-time.After(c.poll):
		}
		next := c.gw.Confirm(ctx, header, scope, args)
		code, body = next.Code, next.Body
		if _, still := approvalRequired(body); !still {
			break
		}
	}
	return result(code, body)
}
