package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/workflows"
)

// statusArgumentOperationID is the value of a status_arguments entry that
// stands for the operation id.
const statusArgumentOperationID = "operation_id"

// executeMCP calls the downstream's tool (kind mcp): the params and
// client_reference as arguments, and the operation id in the tool's
// idempotency argument when it takes one. A result with isError is a
// definite refusal (non-retryable ErrTypeBusinessRefusal); a transport
// failure, a timeout or a JSON-RPC error is unknown (retryable
// ErrTypeDownstreamUnavailable).
func (a *Activities) executeMCP(ctx context.Context, in workflows.OperationInput) (workflows.ExecuteResult, error) {
	ds := in.Downstream
	body, err := withClientReference(in.Params, in.OperationID)
	if err != nil {
		return workflows.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), ErrTypeNotSent, err)
	}
	args := map[string]any{}
	if err := json.Unmarshal(body, &args); err != nil {
		return workflows.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), ErrTypeNotSent, err)
	}
	if ds.IdempotencyArgument != "" {
		args[ds.IdempotencyArgument] = in.OperationID
	}
	log := a.logger().With("operation_id", in.OperationID, "tool", ds.Tool)
	began := time.Now()
	res, err := a.callTool(ctx, ds, ds.Tool, args)
	a.Metrics.observeDownstream(in.Scope, "execute", toolStatus(res, err), time.Since(began))
	if err != nil {
		log.Warn("execute: no answer from the tool", "error", err)
		return workflows.ExecuteResult{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("execute %s: %v", in.OperationID, err), ErrTypeDownstreamUnavailable, err)
	}
	result := toolResult(res)
	if res.IsError {
		refusal := refusalOf(http.StatusUnprocessableEntity, result)
		refusal.StatusCode = 0
		if refusal.Code == "" && refusal.Message == "" {
			refusal.Message = toolText(res)
		}
		log.Info("execute: the tool refused", "code", refusal.Code)
		return workflows.ExecuteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("execute %s: tool %s refused: %s", in.OperationID, ds.Tool, refusal.Reason()),
			ErrTypeBusinessRefusal, nil, refusal)
	}
	log.Info("execute: done")
	return workflows.ExecuteResult{Result: result, ResultRef: workflows.ExtractResultRef(result, ds.ResultRef)}, nil
}

// reconcileMCP calls the downstream's status tool with its mapped
// arguments: a result holding the result_ref field is found, one without
// it is not found; isError or no answer is a retryable
// ErrTypeDownstreamUnavailable (it proves nothing).
func (a *Activities) reconcileMCP(ctx context.Context, in workflows.OperationInput) (workflows.ReconcileResult, error) {
	ds := in.Downstream
	args := make(map[string]any, len(ds.StatusArguments))
	for k, v := range ds.StatusArguments {
		if v == statusArgumentOperationID {
			args[k] = in.OperationID
		} else {
			args[k] = v
		}
	}
	log := a.logger().With("operation_id", in.OperationID, "tool", ds.StatusTool)
	began := time.Now()
	res, err := a.callTool(ctx, ds, ds.StatusTool, args)
	a.Metrics.observeDownstream(in.Scope, "reconcile", toolStatus(res, err), time.Since(began))
	if err == nil && res.IsError {
		err = fmt.Errorf("status tool %s answered an error: %s", ds.StatusTool, toolText(res))
	}
	if err != nil {
		a.Metrics.observeReconcile(in.Scope, "error")
		log.Warn("reconcile: no answer from the status tool", "error", err)
		return workflows.ReconcileResult{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("reconcile %s: %v", in.OperationID, err), ErrTypeDownstreamUnavailable, err)
	}
	result := toolResult(res)
	ref := workflows.ExtractResultRef(result, ds.ResultRef)
	if ref == "" {
		a.Metrics.observeReconcile(in.Scope, "not_found")
		log.Info("reconcile: not found")
		return workflows.ReconcileResult{Found: false}, nil
	}
	a.Metrics.observeReconcile(in.Scope, "found")
	log.Info("reconcile: found")
	return workflows.ReconcileResult{Found: true, Result: result, ResultRef: ref}, nil
}

// callTool opens a session to the downstream's MCP server (with the bearer
// token of auth_env, if any), calls tool with args and closes the session.
func (a *Activities) callTool(ctx context.Context, ds catalog.Downstream, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	stop := heartbeat(ctx)
	defer stop()
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if ds.AuthEnv != "" {
		if token := os.Getenv(ds.AuthEnv); token != "" {
			c := *hc
			c.Transport = bearer{token: token, next: transportOf(hc)}
			hc = &c
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "oncegate", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ds.Execute, HTTPClient: hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", ds.Execute, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	return res, nil
}

// toolStatus labels a tool call for the downstream-latency metric as an
// HTTP status would: 200 a result, 422 a refusal (isError), 0 no answer.
func toolStatus(res *mcp.CallToolResult, err error) int {
	switch {
	case err != nil || res == nil:
		return 0
	case res.IsError:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusOK
	}
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
