package e2e

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestPreviewQuoteAnswersOverHTTP drives the quote endpoint's answers
// through the real simulator: its validation refusal is downstream_refused
// (not retryable, the downstream's reason quoted), its injected 503s
// (quote_fail_next) and a latency past the quote timeout are
// temporarily_unavailable with bounded-retry advice. Nothing is executed.
func TestPreviewQuoteAnswersOverHTTP(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{
		"ONCEGATE_CATALOG=" + filepath.Join(root, "harness", "e2e", "testdata", "catalog.quote.yaml"),
	}})
	su, gw := newSurface(t, s)
	const scope = "payments.quoted"
	path := "/v1/actions/" + scope + "/preview"
	run := randomHex(4)
	zh := []string{"Accept-Language", "zh"}

	for _, amount := range []string{"-5", "0"} {
		params := map[string]any{"amount": amount, "currency": "USD", "payee_id": "p-" + run}
		a := su.check(preview(t, gw, "dev-alice", scope, params), http.MethodPost, path, "downstream_refused")
		assert.Contains(t, a.str("reason"), "amount must be a positive decimal number", amount)
		assert.Contains(t, a.str("meaning"), "amount must be a positive decimal number", amount)
		assert.Contains(t, a.str("instruction"), "Do not send the same params again", amount)
		z := su.check(call(t, http.MethodPost, gw.GatewayURL+path, "dev-alice", map[string]any{"params": params}, zh...),
			http.MethodPost, path, "downstream_refused")
		su.checkZH(z, "downstream_refused")
	}

	ok := map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-" + run}
	setFaults(t, s, map[string]any{"quote_fail_next": 2})
	a := su.check(preview(t, gw, "dev-alice", scope, ok), http.MethodPost, path, "temporarily_unavailable")
	assert.Contains(t, a.str("meaning"), "answered HTTP 503")
	assert.Contains(t, a.str("instruction"), "payments_quoted_preview again with exactly the same params")
	z := su.check(call(t, http.MethodPost, gw.GatewayURL+path, "dev-alice", map[string]any{"params": ok}, zh...),
		http.MethodPost, path, "temporarily_unavailable")
	su.checkZH(z, "temporarily_unavailable")
	// The faults are used up: the same request now succeeds.
	p := su.check(preview(t, gw, "dev-alice", scope, ok), http.MethodPost, path, "preview_ready")
	quote, _ := p.Body["preview"].(map[string]any)["quote"].(map[string]any)
	assert.Equal(t, "0.25", quote["fee"])

	setFaults(t, s, map[string]any{"latency_ms": 1500})
	a = su.check(preview(t, gw, "dev-alice", scope, ok), http.MethodPost, path, "temporarily_unavailable")
	assert.Contains(t, a.str("meaning"), "did not answer in time")
	setFaults(t, s, noFaults)

	assert.Equal(t, 0, executions(t, s, p.str("operation_id")), "a preview executes nothing")
}
