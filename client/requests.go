package client

import (
	"context"
	"net/http"
)

// The requests of Preview, Confirm and Status, built but not sent, for a
// caller that sends them itself and reads the gateway's answer as it is: a
// load generator measuring the gateway (harness/benche2e). Such a caller
// gets none of the client's retries or judgement; everyone else calls
// Preview, Confirm and Status. Each request carries the client's token,
// language and JSON headers, and a body its transport can send again
// (GetBody).

// PreviewRequest is the request Preview sends.
func (c *Client) PreviewRequest(ctx context.Context, scope string, params any) (*http.Request, error) {
	return c.build(ctx, http.MethodPost, previewPath(scope), previewBody(params))
}

// ConfirmRequest is the request Confirm sends.
func (c *Client) ConfirmRequest(ctx context.Context, scope, fingerprint string, params any, opts ...ConfirmOption) (*http.Request, error) {
	return c.build(ctx, http.MethodPost, confirmPath(scope), newConfirmBody(fingerprint, params, opts))
}

// StatusRequest is the request Status sends.
func (c *Client) StatusRequest(ctx context.Context, operationID string) (*http.Request, error) {
	return c.build(ctx, http.MethodGet, statusPath(operationID), nil)
}

// build encodes body (nil: none) and builds the request method path.
func (c *Client) build(ctx context.Context, method, path string, body any) (*http.Request, error) {
	raw, err := encode(method, path, body)
	if err != nil {
		return nil, err
	}
	return c.request(ctx, method, path, raw)
}
