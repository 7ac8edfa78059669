package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// StatusArgumentOperationID is the value of a status_arguments entry that
// stands for the operation id.
const StatusArgumentOperationID = "operation_id"

func init() { Register(plan.KindMCP, MCP{}) }

// MCP is the kind of a tool on another MCP server (streamable HTTP).
type MCP struct{}

// Check requires the tool, derives whether the downstream honours the key
// (exactly when the tool names the argument that takes it) and its status
// endpoint (the status tool is on the same server), and refuses the HTTP
// kind's status URL and quote.
func (MCP) Check(d *plan.Source, honors *bool) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if d.Tool == "" {
		add("downstream.tool is required for kind mcp (the tool that executes the operation)")
	}
	d.HonorsIdempotencyKey = d.IdempotencyArgument != ""
	if honors != nil && *honors != d.HonorsIdempotencyKey {
		add("downstream.honors_idempotency_key %t contradicts idempotency_argument %q: for kind mcp the tool honours the key exactly when it names the argument that takes it",
			*honors, d.IdempotencyArgument)
	}
	if d.Status != "" {
		add("downstream.status is for kind http: name status_tool for kind mcp")
	}
	if d.StatusTool != "" {
		d.Status = d.Execute // the status tool is on the same server
	} else if len(d.StatusArguments) > 0 {
		add("downstream.status_arguments needs downstream.status_tool")
	}
	if d.Quote != "" {
		add("downstream.quote is for kind http")
	}
	if d.AuthEnv != "" && !envconfig.ValidName(d.AuthEnv) {
		add("downstream.auth_env %q must name an environment variable", d.AuthEnv)
	}
	return problems
}

// Execute calls the catalog's tool with the params and client_reference as
// arguments, and the operation id in its idempotency argument when it takes
// one. A result with isError is a *Refusal; a transport failure, a timeout
// or a JSON-RPC error is an unknown outcome.
func (MCP) Execute(ctx context.Context, c Call) (Answer, error) {
	body, err := withClientReference(c.Params, c.OperationID)
	if err != nil {
		return Answer{}, err
	}
	args := map[string]any{}
	if err := json.Unmarshal(body, &args); err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if c.Downstream.Endpoint.IdempotencyArgument != "" {
		args[c.Downstream.Endpoint.IdempotencyArgument] = c.OperationID
	}
	res, err := callTool(ctx, c, c.Downstream.Endpoint.Tool, args)
	if err != nil {
		return Answer{}, err
	}
	result := toolResult(res)
	if res.IsError {
		refusal := refusalOf(0, result)
		if refusal.Code == "" && refusal.Message == "" {
			refusal.Message = toolText(res)
		}
		return Answer{StatusCode: http.StatusUnprocessableEntity}, refusal
	}
	return Answer{StatusCode: http.StatusOK, Result: result}, nil
}

// Reconcile calls the status tool with its mapped arguments: a result
// holding the catalog's result_ref field is found, one without it not
// found; isError or no answer proves nothing.
func (MCP) Reconcile(ctx context.Context, c Call) (Answer, error) {
	if c.Downstream.Endpoint.StatusTool == "" {
		return Answer{}, ErrNoStatus
	}
	args := make(map[string]any, len(c.Downstream.Endpoint.StatusArguments))
	for k, v := range c.Downstream.Endpoint.StatusArguments {
		if v == StatusArgumentOperationID {
			args[k] = c.OperationID
		} else {
			args[k] = v
		}
	}
	res, err := callTool(ctx, c, c.Downstream.Endpoint.StatusTool, args)
	if err != nil {
		return Answer{}, err
	}
	if res.IsError {
		return Answer{StatusCode: http.StatusUnprocessableEntity},
			fmt.Errorf("status tool %s answered an error: %s", c.Downstream.Endpoint.StatusTool, toolText(res))
	}
	result := toolResult(res)
	found := operation.ExtractResultRef(result, c.Downstream.ResultRef) != ""
	return Answer{StatusCode: http.StatusOK, Found: found, Result: result}, nil
}

// callTool opens a session to the MCP server (with the bearer token of
// auth_env, if any), calls tool with args and closes the session.
func callTool(ctx context.Context, c Call, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if c.Downstream.Endpoint.AuthEnv != "" {
		if token := os.Getenv(c.Downstream.Endpoint.AuthEnv); token != "" {
			authed := *hc
			authed.Transport = bearer{token: token, next: transportOf(hc)}
			hc = &authed
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "oncegate", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.Downstream.Endpoint.Execute, HTTPClient: hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", c.Downstream.Endpoint.Execute, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	return res, nil
}

// toolResult is a tool result's JSON: its structured content, else its
// first text content when that is JSON, else that text as a JSON string.
func toolResult(res *mcp.CallToolResult) json.RawMessage {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b
		}
	}
	return asJSON([]byte(toolText(res)))
}

// toolText is the first text content of a tool result.
func toolText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends r with the bearer token.
func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// transportOf is c's transport, or the default one.
func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
