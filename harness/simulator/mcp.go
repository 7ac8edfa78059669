package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where the simulator serves its tools over MCP (streamable HTTP).
const MCPPath = "/mcp"

// Tool names of the simulator's MCP server.
const (
	// ToolCreateTransfer executes a transfer once per idempotency_key, as
	// POST /v1/transfers does per Idempotency-Key.
	ToolCreateTransfer = "create_transfer"
	// ToolCreateLegacyTransfer executes a transfer on every call, as POST
	// /legacy/transfers does: it takes no idempotency key.
	ToolCreateLegacyTransfer = "create_legacy_transfer"
	// ToolGetTransfer answers the transfer of a client_reference, or
	// {"found":false}.
	ToolGetTransfer = "get_transfer"
)

// transferArgs is the input schema of the transfer tools.
var transferArgs = json.RawMessage(`{"type":"object","required":["amount","currency","payee_id"],"properties":{
	"amount":{"type":"string","description":"Exact decimal amount, such as \"12.50\"."},
	"currency":{"type":"string"},"payee_id":{"type":"string"},"memo":{"type":"string"},
	"client_reference":{"type":"string"},
	"idempotency_key":{"type":"string","description":"create_transfer only: the same key never executes twice."}}}`)

// mcpHandler serves the simulator's tools over MCP. Each tool call goes
// through the simulator's own HTTP handler, so the faults, the once-per-key
// rule and the executions count are the same over MCP as over HTTP. A
// definite refusal (a 4xx) is a tool result with isError; an unavailable
// simulator (a 5xx, fail_next, fail_after_commit) is a JSON-RPC error, as a
// transport failure would be: the caller cannot know the outcome.
func (s *Server) mcpHandler() http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "oncegate-downstream-simulator", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	yes := true
	server.AddTool(&mcp.Tool{Name: ToolCreateTransfer, Description: "Transfer money; executes once per idempotency_key.",
		InputSchema: transferArgs, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}},
		s.transferTool("/v1/transfers", true))
	server.AddTool(&mcp.Tool{Name: ToolCreateLegacyTransfer, Description: "Transfer money; every call executes anew.",
		InputSchema: transferArgs, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		s.transferTool("/legacy/transfers", false))
	server.AddTool(&mcp.Tool{Name: ToolGetTransfer, Description: "The transfer of a client_reference, or {\"found\":false}.",
		InputSchema: json.RawMessage(`{"type":"object","required":["client_reference"],"properties":{"client_reference":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.getTransferTool)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// transferTool calls POST path with the tool's arguments; withKey sends the
// idempotency_key argument as the Idempotency-Key header.
func (s *Server) transferTool(path string, withKey bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return refusal(http.StatusBadRequest, []byte(`{"error":"invalid_request","message":"arguments are not a JSON object"}`)), nil
		}
		header := http.Header{}
		if withKey {
			var key string
			_ = json.Unmarshal(args["idempotency_key"], &key)
			header.Set(IdempotencyKeyHeader, key)
		}
		delete(args, "idempotency_key")
		body, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		return s.callSelf(ctx, http.MethodPost, path, header, body)
	}
}

// getTransferTool answers GET /legacy/transfers?client_reference=X: the
// transfer, or {"found":false} for none.
func (s *Server) getTransferTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		ClientReference string `json:"client_reference"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.ClientReference == "" {
		return refusal(http.StatusBadRequest, []byte(`{"error":"invalid_request","message":"client_reference is required"}`)), nil
	}
	res, err := s.callSelf(ctx, http.MethodGet, "/legacy/transfers?client_reference="+url.QueryEscape(args.ClientReference), nil, nil)
	if err == nil && res.IsError {
		var e errorBody
		if raw, merr := json.Marshal(res.StructuredContent); merr == nil && json.Unmarshal(raw, &e) == nil && e.Error == CodeNotFound {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"found": false},
				Content: []mcp.Content{&mcp.TextContent{Text: `{"found":false}`}}}, nil
		}
	}
	return res, err
}

// callSelf sends one request through the simulator's HTTP handler and turns
// its answer into a tool result: 2xx is the result, 4xx a refusal (isError),
// anything else a JSON-RPC error.
func (s *Server) callSelf(ctx context.Context, method, target string, header http.Header, body []byte) (*mcp.CallToolResult, error) {
	r := httptest.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	r.Header = header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	out := bytes.TrimSpace(rec.Body.Bytes())
	switch {
	case rec.Code >= 200 && rec.Code < 300:
		var structured any
		if err := json.Unmarshal(out, &structured); err != nil {
			return nil, fmt.Errorf("simulator answered %d with no JSON", rec.Code)
		}
		return &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
	case rec.Code >= 400 && rec.Code < 500:
		return refusal(rec.Code, out), nil
	default:
		return nil, fmt.Errorf("simulator unavailable: HTTP %d: %s", rec.Code, out)
	}
}

// refusal is a tool result with isError carrying the simulator's error body.
func refusal(status int, body []byte) *mcp.CallToolResult {
	var structured any
	if err := json.Unmarshal(body, &structured); err != nil {
		structured = map[string]any{"error": "refused", "message": string(body)}
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: structured,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("HTTP %d: %s", status, body)}}}
}
