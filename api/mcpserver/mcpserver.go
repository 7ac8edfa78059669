// Package mcpserver serves the gateway's tools over the Model Context
// Protocol (streamable HTTP) with the official Go SDK. It holds no logic of
// its own: every tool call is one call of its Gateway (preview, confirm,
// status: the same use cases the REST routes call, with the caller's
// bearer token, language and trace), and the gateway's JSON answer becomes
// the tool result. So there is one implementation of the protocol.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/status"
)

// Options configures the MCP endpoint. The zero value is usable.
type Options struct {
	// Name is the server name announced to clients (default "oncegate").
	Name string
	// Version is the server version announced to clients (default "dev").
	Version string
	// Stateful keeps MCP sessions (Mcp-Session-Id) in this process's memory.
	// The default, stateless, lets any gateway replica answer any request:
	// the tools need no session.
	Stateful bool
	// JSONResponse answers with application/json instead of an SSE stream.
	JSONResponse bool
	// SessionTimeout closes idle sessions when Stateful (zero: never).
	SessionTimeout time.Duration
	// Logger logs the SDK's activity (nil: no logging).
	Logger *slog.Logger
	// DisableLocalhostProtection turns off the SDK's DNS rebinding
	// protection (requests to a localhost address with a foreign Host).
	DisableLocalhostProtection bool
	// ApprovalWait bounds how long a confirm tool waits for a person to
	// decide after the client's host opened the approval link (URL-mode
	// elicitation); default DefaultApprovalWait, which stays within the
	// gateway's request timeout. Not decided by then: approval_required.
	ApprovalWait time.Duration
	// ApprovalPoll is how often the confirm is asked again while it waits
	// (default DefaultApprovalPoll).
	ApprovalPoll time.Duration
}

// Defaults of the approval wait of Options.
const (
	// DefaultApprovalWait is how long a confirm tool waits for a person.
	DefaultApprovalWait = 20 * time.Second
	// DefaultApprovalPoll is how often it asks the confirm again meanwhile.
	DefaultApprovalPoll = 500 * time.Millisecond
)

// Gateway answers the tools: each method is the use case of the REST route
// of the same name, its answer the JSON body and HTTP code that route
// answers. header is the MCP request's (its bearer token, Accept-Language,
// trace context).
type Gateway interface {
	// Authenticate checks a bearer token before MCP starts: an error is a 401.
	Authenticate(ctx context.Context, token string) error
	// Preview previews the action scope with args, the preview's body.
	Preview(ctx context.Context, header http.Header, scope string, args []byte) Reply
	// Confirm confirms the action scope with args, the confirm's body.
	Confirm(ctx context.Context, header http.Header, scope string, args []byte) Reply
	// Status answers the operation opID's status.
	Status(ctx context.Context, header http.Header, opID string) Reply
}

// Reply is a gateway's answer as its REST route renders it.
type Reply struct {
	// Code is the HTTP status code.
	Code int
	// Body is the JSON body.
	Body []byte
}

// New returns the MCP endpoint (mount it at /mcp for every method: POST,
// GET and DELETE). Each tool call is answered by gw. A request without a
// valid bearer token is refused with a 401 JSON answer before MCP starts.
func New(cat *catalog.Catalog, gw Gateway, opts Options) http.Handler {
	if opts.Name == "" {
		opts.Name = "oncegate"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	msgs, err := messages.Load()
	if err != nil {
		msgs = nil // fall back to the built-in English text
	}
	server := mcp.NewServer(&mcp.Implementation{
		Name:    opts.Name,
		Title:   "oncegate: exactly-once actions for agents",
		Version: opts.Version,
	}, &mcp.ServerOptions{
		Instructions: tools.Protocol,
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	if opts.ApprovalWait <= 0 {
		opts.ApprovalWait = DefaultApprovalWait
	}
	if opts.ApprovalPoll <= 0 {
		opts.ApprovalPoll = DefaultApprovalPoll
	}
	c := &caller{gw: gw, msgs: msgs, stateful: opts.Stateful, wait: opts.ApprovalWait, poll: opts.ApprovalPoll}
	for _, t := range tools.Tools(cat) {
		server.AddTool(&mcp.Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Annotations: annotations(t),
		}, c.handler(t))
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			Stateless:                  !opts.Stateful,
			JSONResponse:               opts.JSONResponse,
			Logger:                     opts.Logger,
			SessionTimeout:             opts.SessionTimeout,
			DisableLocalhostProtection: opts.DisableLocalhostProtection,
		})
	return &authGate{next: carryIdentity(streamable), authenticate: gw.Authenticate, msgs: msgs}
}

// annotations returns the MCP hints of a tool: confirm tools are
// destructive (and idempotent per fingerprint), the others read-only.
func annotations(t tools.Tool) *mcp.ToolAnnotations {
	yes, no := true, false
	switch t.Kind {
	case tools.KindConfirm:
		return &mcp.ToolAnnotations{
			Title:           "Confirm and execute " + t.Scope,
			DestructiveHint: &yes,
			IdempotentHint:  true,
			ReadOnlyHint:    false,
			OpenWorldHint:   &yes,
		}
	case tools.KindPreview:
		return &mcp.ToolAnnotations{Title: "Preview " + t.Scope, ReadOnlyHint: true, OpenWorldHint: &yes}
	case tools.KindStatus:
		fallthrough
	default:
		return &mcp.ToolAnnotations{Title: "Get operation status", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}
	}
}

// caller executes tool calls with the gateway.
type caller struct {
	gw       Gateway
	msgs     *messages.Catalog
	stateful bool
	wait     time.Duration
	poll     time.Duration
}

// handler returns the MCP handler of tool t.
func (c *caller) handler(t tools.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx = callerContext(ctx, req)
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		args := []byte(req.Params.Arguments)
		if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
			args = []byte("{}")
		}
		switch t.Kind {
		case tools.KindPreview:
			// The arguments are the gateway's request body as they are,
			// byte for byte: decimals keep their exact text.
			r := c.gw.Preview(ctx, header, t.Scope, args)
			return result(r.Code, r.Body), nil
		case tools.KindConfirm:
			return c.confirm(ctx, req, header, t.Scope, args), nil
		case tools.KindStatus:
			fallthrough
		default:
			var in struct {
				OperationID string `json:"operation_id"`
			}
			if err := json.Unmarshal(args, &in); err != nil || !fingerprint.IsNonce(in.OperationID) {
				return c.invalidOperationID(header), nil
			}
			r := c.gw.Status(ctx, header, in.OperationID)
			return result(r.Code, r.Body), nil
		}
	}
}

// result turns a gateway answer into a tool result: the JSON body both as
// structured content and as text; an error for HTTP >= 400 and for every
// status that is not a normal outcome.
func result(code int, body []byte) *mcp.CallToolResult {
	var probe struct {
		Status string `json:"status"`
	}
	isJSONObject := json.Unmarshal(body, &probe) == nil && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{"))
	if !isJSONObject {
		wrapped, _ := json.Marshal(map[string]any{
			"status":      status.InternalError,
			"meaning":     fmt.Sprintf("The gateway answered HTTP %d without a JSON answer; the outcome of this call is unknown.", code),
			"instruction": "Do not call a confirm tool again to find out. If you have an operation_id, call get_operation_status with it; otherwise tell the user the gateway failed.",
			"retryable":   false,
			"http_status": code,
			"body":        truncate(string(body), 2000),
		})
		body = wrapped
		probe.Status = string(status.InternalError)
		if code < 400 {
			code = http.StatusBadGateway
		}
	}
	isError := code >= 400 || (probe.Status != "" && !isOutcome(status.Status(probe.Status)))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           isError,
	}
}

// isOutcome reports whether an answer with s did what its call is for
// (the registry's status.Outcome), so that its tool result is not an error.
func isOutcome(s status.Status) bool {
	info, ok := status.Lookup(s)
	return ok && info.Kind == status.Outcome
}

// invalidOperationID answers a status call without a well-formed
// operation_id, without asking the gateway.
func (c *caller) invalidOperationID(header http.Header) *mcp.CallToolResult {
	lang := messages.ParseAcceptLanguage(header.Get("Accept-Language"))
	meaning, instruction := "The operation_id is missing or malformed; nothing was looked up.",
		"Call get_operation_status again with the operation_id copied exactly from an earlier answer (32 lowercase hex characters). Never invent one."
	problem := "required: 32 lowercase hex characters copied from an earlier answer"
	if c.msgs != nil {
		if m, i, err := c.msgs.Render(lang, string(status.InvalidParams), messages.Data{PollWith: tools.StatusToolName}); err == nil {
			meaning, instruction = m, i
		}
		if p, err := c.msgs.Fragment(lang, messages.FragmentPrefix+"operation_id_required", messages.Data{}); err == nil {
			problem = p
		}
	}
	body, _ := json.Marshal(map[string]any{
		"status":      status.InvalidParams,
		"meaning":     meaning,
		"instruction": instruction,
		"retryable":   false, // docs/contract.md §4: only temporarily_unavailable is retryable
		"trace_id":    traceID(header),
		"errors": []map[string]string{{
			"field":    "operation_id",
			"rule":     "pattern",
			"problem":  problem,
			"expected": tools.OperationIDPattern,
		}},
	})
	return result(http.StatusBadRequest, body)
}

// traceID returns the trace id of the MCP request's headers.
func traceID(h http.Header) string {
	r := &http.Request{Header: h}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	return tools.TraceID(nil, r)
}

// truncate shortens s to n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// authGate refuses requests without a bearer token before MCP starts.
type authGate struct {
	next         http.Handler
	authenticate func(ctx context.Context, token string) error
	msgs         *messages.Catalog
}

// ServeHTTP implements http.Handler.
func (g *authGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if ok && g.authenticate(r.Context(), token) != nil {
		ok = false
	}
	if !ok {
		g.unauthenticated(w, r)
		return
	}
	tw := &transportErrors{ResponseWriter: w}
	g.next.ServeHTTP(tw, r)
	tw.finish(r, g.msgs)
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(h string) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(h), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// unauthenticated writes the 401 answer.
func (g *authGate) unauthenticated(w http.ResponseWriter, r *http.Request) {
	lang := messages.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	tid := tools.TraceID(w, r)
	meaning, instruction := "The request carries no valid bearer token. Nothing was executed.",
		"Do not retry with the same credentials. Send Authorization: Bearer <token> with a valid token."
	if g.msgs != nil {
		if m, i, err := g.msgs.Render(lang, string(status.Unauthenticated), messages.Data{TraceID: tid, Method: r.Method, Path: r.URL.Path}); err == nil {
			meaning, instruction = m, i
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("WWW-Authenticate", `Bearer realm="oncegate"`)
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status":      status.Unauthenticated,
		"meaning":     meaning,
		"instruction": instruction,
		"retryable":   false, // docs/contract.md §4: only temporarily_unavailable is retryable
		"trace_id":    tid,
	})
}
