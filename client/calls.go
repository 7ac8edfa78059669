package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/oncegate/oncegate/status"
)

// Preview validates params for the action scope and returns the answer
// with the Fingerprint to confirm (status preview_ready). It writes
// nothing: previewing again is harmless, and each preview is a new
// fingerprint, a new operation.
func (c *Client) Preview(ctx context.Context, scope string, params any) (*Answer, error) {
	return c.do(ctx, http.MethodPost, previewPath(scope), previewBody(params), agentCalls)
}

// previewPath is the route of a preview of scope.
func previewPath(scope string) string { return "/v1/actions/" + url.PathEscape(scope) + "/preview" }

// previewBody is the body of a preview of params.
func previewBody(params any) any { return map[string]any{"params": params} }

// ConfirmOption adds to a confirm.
type ConfirmOption func(*confirmBody)

// confirmBody is the body of a confirm.
type confirmBody struct {
	Fingerprint         string `json:"fingerprint"`
	Params              any    `json:"params"`
	AcknowledgeRepeatOf string `json:"acknowledge_repeat_of,omitempty"`
}

// AcknowledgeRepeatOf confirms a preview that named an identical recent
// operation (RecentOperation.OperationID): the user asked to do it again.
func AcknowledgeRepeatOf(operationID string) ConfirmOption {
	return func(b *confirmBody) { b.AcknowledgeRepeatOf = operationID }
}

// Confirm executes, at most once, the operation that fingerprint was issued
// for; params must bind to what was previewed. It answers completed, failed,
// in_progress or needs_manual_review (or a replay of the first outcome, on
// any later confirm of the same fingerprint); call Wait when the outcome is
// not final yet. A lost answer and temporarily_unavailable are retried with
// the same fingerprint.
func (c *Client) Confirm(ctx context.Context, scope, fingerprint string, params any, opts ...ConfirmOption) (*Answer, error) {
	return c.do(ctx, http.MethodPost, confirmPath(scope), newConfirmBody(fingerprint, params, opts), agentCalls)
}

// confirmPath is the route of a confirm of scope.
func confirmPath(scope string) string { return "/v1/actions/" + url.PathEscape(scope) + "/confirm" }

// newConfirmBody is the body of a confirm of fingerprint with params.
func newConfirmBody(fingerprint string, params any, opts []ConfirmOption) confirmBody {
	b := confirmBody{Fingerprint: fingerprint, Params: params}
	for _, o := range opts {
		o(&b)
	}
	return b
}

// Status asks the current state of one of the caller's operations:
// completed, failed, in_progress or needs_manual_review.
func (c *Client) Status(ctx context.Context, operationID string) (*Answer, error) {
	return c.do(ctx, http.MethodGet, statusPath(operationID), nil, agentCalls)
}

// statusPath is the route of the status of operationID.
func statusPath(operationID string) string { return "/v1/operations/" + url.PathEscape(operationID) }

// Wait polls Status, waiting poll_after_ms between polls, until the
// operation is completed or failed, and returns that answer. It stops early
// with the last answer and an error that matches ErrNeedsManualReview when a
// person has to decide, and with ctx's error when ctx is done. A poll that
// fails transiently (after the client's retries) is polled again.
func (c *Client) Wait(ctx context.Context, operationID string) (*Answer, error) {
	var last *Answer
	for {
		a, err := c.Status(ctx, operationID)
		switch {
		case err == nil:
			last = a
		case isTransient(err) && ctx.Err() == nil:
		default:
			return last, fmt.Errorf("wait %s: %w", operationID, err)
		}
		if last != nil && last.Status.Terminal() {
			return last, nil
		}
		if last != nil && last.Status == status.NeedsManualReview {
			return last, fmt.Errorf("wait %s: %w", operationID, &Error{Answer: *last, class: ClassOf(last.Status)})
		}
		pause := DefaultPollAfter
		if last != nil && last.PollAfterMS > 0 {
			pause = last.PollAfter()
		}
		if err := c.sleep(ctx, pause); err != nil {
			return last, fmt.Errorf("wait %s: %w", operationID, err)
		}
	}
}

// Formats of the tool definitions (Tools).
const (
	// ToolsOpenAI is OpenAI's function-calling format.
	ToolsOpenAI = "openai"
	// ToolsAnthropic is Anthropic's tool-use format.
	ToolsAnthropic = "anthropic"
)

// Tools returns the gateway's tool definitions in format (ToolsOpenAI or
// ToolsAnthropic), built from its catalog, as the gateway sends them: a
// JSON array of tools, each with its JSON Schema, ready for an LLM's
// function calling. An unknown format is an error matching ErrBadRequest.
func (c *Client) Tools(ctx context.Context, format string) (json.RawMessage, error) {
	a, err := c.do(ctx, http.MethodGet, "/v1/tools?"+url.Values{"format": {format}}.Encode(), nil, policy{byCode: true})
	if err != nil {
		return nil, err
	}
	return a.Raw, nil
}
