package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/mcpserver"
)

// TestTransportErrorsAreJSON: what the SDK's transport refuses before any
// tool runs (a wrong method, Accept or Content-Type) answers the gateway's
// JSON body, never plain text, in English and Chinese; a well-formed
// request still streams its JSON-RPC answer.
func TestTransportErrorsAreJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcpserver.New(testCatalog(), &fakeGateway{}, mcpserver.Options{}))
	t.Cleanup(srv.Close)
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	both := "application/json, text/event-stream"
	for _, tc := range []struct {
		name, method, accept, contentType, lang string
		code                                    int
		status, says                            string
	}{
		{"GET in stateless mode", http.MethodGet, "text/event-stream", "", "", 405, "method_not_allowed", "Method Not Allowed"},
		{"DELETE", http.MethodDelete, both, "", "", 405, "method_not_allowed", "Method Not Allowed"},
		{"Accept without event-stream", http.MethodPost, "application/json", "application/json", "", 400, "malformed_request", "Accept must contain both"},
		{"no Accept", http.MethodPost, "", "application/json", "zh", 400, "malformed_request", "Accept must contain both"},
		{"Content-Type text", http.MethodPost, both, "text/plain", "", 400, "malformed_request", "Content-Type must be 'application/json'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := send(t, tc.method, srv.URL, list, "Accept", tc.accept, "Content-Type", tc.contentType, "Accept-Language", tc.lang)
			assert.Equal(t, tc.code, resp.StatusCode, "%s", raw)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var a map[string]any
			require.NoError(t, json.Unmarshal(raw, &a), "not JSON: %s", raw)
			assert.Equal(t, tc.status, a["status"])
			assert.Contains(t, a["meaning"], tc.says)
			assert.Contains(t, a["instruction"], "text/event-stream")
			assert.Equal(t, false, a["retryable"])
			assert.NotEmpty(t, a["trace_id"])
			if tc.code == http.StatusMethodNotAllowed {
				assert.Equal(t, "POST", resp.Header.Get("Allow"))
			}
			if tc.lang == "zh" {
				assert.Contains(t, a["meaning"], "没有执行任何操作")
			}
		})
	}

	t.Run("a well-formed request passes", func(t *testing.T) {
		resp, raw := send(t, http.MethodPost, srv.URL, list, "Accept", both, "Content-Type", "application/json")
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Contains(t, string(raw), `"payments_transfer_preview"`)
	})
}

// send sends body to url as dev-alice with the headers given as name,
// value pairs (an empty value is left out) and returns the answer and its body.
func send(t *testing.T, method, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer dev-alice")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}
