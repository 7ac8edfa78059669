package client

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// TestRequestsAreTheCalls: the built requests are exactly what Preview,
// Confirm and Status send: route, body and headers.
func TestRequestsAreTheCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	params := map[string]any{"amount": "12.50", "currency": "USD"}
	calls := []struct {
		name  string
		send  func(*Client) error
		build func(*Client) (*http.Request, error)
	}{
		{"preview",
			func(c *Client) error { _, err := c.Preview(ctx, "payments.transfer", params); return err },
			func(c *Client) (*http.Request, error) { return c.PreviewRequest(ctx, "payments.transfer", params) }},
		{"confirm",
			func(c *Client) error {
				_, err := c.Confirm(ctx, "payments.transfer", "fp", params, AcknowledgeRepeatOf("op0"))
				return err
			},
			func(c *Client) (*http.Request, error) {
				return c.ConfirmRequest(ctx, "payments.transfer", "fp", params, AcknowledgeRepeatOf("op0"))
			}},
		{"status",
			func(c *Client) error { _, err := c.Status(ctx, "op1"); return err },
			func(c *Client) (*http.Request, error) { return c.StatusRequest(ctx, "op1") }},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			done := reply(200, status.Completed, nil)
			c, f, _ := setup(t, done, done)
			c.lang = "zh"
			require.NoError(t, tt.send(c))
			req, err := tt.build(c)
			require.NoError(t, err)
			assert.Equal(t, "Bearer dev-alice", req.Header.Get("Authorization"))
			assert.Equal(t, "zh", req.Header.Get("Accept-Language"))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Len(t, f.paths, 2)
			assert.Equal(t, f.paths[0], f.paths[1], "the same route")
			assert.Equal(t, f.bodies[0], f.bodies[1], "the same body")
		})
	}
}
