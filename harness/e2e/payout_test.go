package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/harness/testenv"
)

// payoutWebhookSecret signs the simulator's webhook events in these tests.
const payoutWebhookSecret = "e2e-webhook-secret"

// payoutSlowPoll is payments.payout with 2 execute attempts and a status
// poll only every 10 minutes, so that whatever settles it within a test
// came by webhook, or by reconciliation after the attempts ran out.
const payoutSlowPoll = "payments.payout_slow_poll"

// payoutShortDeadline is payments.payout with a 3s completion deadline.
const payoutShortDeadline = "payments.payout_short_deadline"

// payoutCatalog writes the dev catalog plus payoutSlowPoll and
// payoutShortDeadline to a file.
func payoutCatalog(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "deployments", "catalog.dev.yaml"))
	require.NoError(t, err)
	var doc struct {
		Actions map[string]map[string]any `yaml:"actions"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	b, err := yaml.Marshal(doc.Actions["payments.payout"])
	require.NoError(t, err)
	var slow map[string]any
	require.NoError(t, yaml.Unmarshal(b, &slow))
	down := slow["downstream"].(map[string]any)
	down["attempts"] = 2
	down["poll_interval"] = "10m"
	doc.Actions[payoutSlowPoll] = slow
	b, err = yaml.Marshal(doc.Actions["payments.payout"])
	require.NoError(t, err)
	var short map[string]any
	require.NoError(t, yaml.Unmarshal(b, &short))
	short["downstream"].(map[string]any)["completion_deadline"] = "3s"
	doc.Actions[payoutShortDeadline] = short
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "catalog.payout.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

// sendWebhook POSTs event to the gateway's webhook endpoint of scope, signed
// with secret at t.
func sendWebhook(t *testing.T, s *testenv.Stack, scope string, event any, secret string, at time.Time) answer {
	t.Helper()
	body, err := json.Marshal(event)
	require.NoError(t, err)
	return postSigned(t, s, scope, body, simulator.Sign(secret, at, body))
}

// postSigned POSTs body with the signature header sig.
func postSigned(t *testing.T, s *testenv.Stack, scope string, body []byte, sig string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.GatewayURL+"/v1/webhooks/"+scope, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set(simulator.SignatureHeader, sig)
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	a := answer{Code: resp.StatusCode, Header: resp.Header}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a.Body))
	return a
}

// setSimWebhook points the simulator's webhook at the gateway (or clears it).
func setSimWebhook(t *testing.T, s *testenv.Stack, scope string) {
	t.Helper()
	method, body := http.MethodDelete, []byte(nil)
	if scope != "" {
		method = http.MethodPut
		body, _ = json.Marshal(map[string]string{"url": s.GatewayURL + "/v1/webhooks/" + scope, "secret": payoutWebhookSecret})
	}
	req, _ := http.NewRequest(method, s.DownstreamURL+"/_sim/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func payoutParams(payee string) map[string]any {
	return map[string]any{"amount": "25.00", "currency": "EUR", "payee_id": payee, "memo": "e2e payout"}
}

// TestPayouts drives an asynchronous downstream: a 2xx that says pending is
// not done; the operation stays in progress until the payout is paid or
// failed, learned by polling or by a signed webhook.
func TestPayouts(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{
		Catalog:         payoutCatalog(t),
		ExtraGatewayEnv: []string{"ONCEGATE_PAYOUT_WEBHOOK_SECRET=" + payoutWebhookSecret},
	})

	t.Run("paid after pending, by polling", func(t *testing.T) {
		setSimWebhook(t, s, "")
		params := payoutParams("p-paid-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", "payments.payout", params)
		c := confirm(t, s, "dev-alice", "payments.payout", fp, params)
		require.Equal(t, "in_progress", c.str("status"), c.String())
		pending := waitStatus(t, s, "dev-alice", id, "in_progress")
		for pending.str("downstream_state") == "" {
			pending = status(t, s, "dev-alice", id)
		}
		assert.Equal(t, "pending", pending.str("downstream_state"), pending.String())
		assert.Contains(t, pending.str("instruction"), "on its way", pending.String())
		done := waitStatus(t, s, "dev-alice", id, "completed", "failed", "needs_manual_review")
		require.Equal(t, "completed", done.str("status"), done.String())
		assert.Regexp(t, `^po_[0-9a-f]{24}$`, done.str("result_ref"))
		assert.Equal(t, "paid", done.Body["result"].(map[string]any)["status"])
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("a fail- payee ends failed with the downstream's reason", func(t *testing.T) {
		setSimWebhook(t, s, "")
		params := payoutParams("fail-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", "payments.payout", params)
		seen, done := followUntil(t, s, "payments.payout", fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "completed")
		require.Equal(t, "failed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, "account_closed", done.str("reason"))
		assert.Equal(t, "downstream_refused", done.str("failure_kind"))
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("the webhook completes it before the next poll would", func(t *testing.T) {
		setSimWebhook(t, s, payoutSlowPoll)
		defer setSimWebhook(t, s, "")
		params := payoutParams("p-hook-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", payoutSlowPoll, params)
		start := time.Now()
		seen, done := followUntil(t, s, payoutSlowPoll, fp, id, params, "completed", "failed", "needs_manual_review")
		require.Equal(t, "completed", done.str("status"), "told %v; last %s", seen, done)
		assert.Less(t, time.Since(start), 5*time.Minute, "the next poll was 10 minutes away")
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("refused webhooks change nothing", func(t *testing.T) {
		setSimWebhook(t, s, "")
		setFaults(t, s, map[string]any{"payout_settle_ms": 600000}) // stays pending during the test
		defer clearFaults(t, s)
		params := payoutParams("p-forged-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", payoutSlowPoll, params)
		c := confirm(t, s, "dev-alice", payoutSlowPoll, fp, params)
		require.Equal(t, "in_progress", c.str("status"), c.String())
		paid := map[string]any{"type": "payout.paid", "data": map[string]any{"id": "po_forged", "status": "paid", "client_reference": id}}

		for name, a := range map[string]answer{
			"bad signature":     sendWebhook(t, s, payoutSlowPoll, paid, "not-the-secret", time.Now()),
			"stale timestamp":   sendWebhook(t, s, payoutSlowPoll, paid, payoutWebhookSecret, time.Now().Add(-time.Hour)),
			"no signature":      postSigned(t, s, payoutSlowPoll, []byte(`{"type":"payout.paid"}`), ""),
			"unknown reference": sendWebhook(t, s, payoutSlowPoll, map[string]any{"type": "payout.paid", "data": map[string]any{"status": "paid", "client_reference": randomHex(16)}}, payoutWebhookSecret, time.Now()),
		} {
			assert.Equal(t, http.StatusBadRequest, a.Code, "%s: %s", name, a)
			assert.Equal(t, "webhook_refused", a.str("status"), name)
			assert.Equal(t, false, a.Body["retryable"], name)
		}
		st := status(t, s, "dev-alice", id)
		assert.Equal(t, "in_progress", st.str("status"), "nothing changed: %s", st)

		// A valid event is accepted once; its replay is refused.
		body, _ := json.Marshal(map[string]any{"type": "payout.failed", "data": map[string]any{"id": "po_x", "status": "failed", "failure_reason": "test_refusal", "client_reference": id}})
		sig := simulator.Sign(payoutWebhookSecret, time.Now(), body)
		ok := postSigned(t, s, payoutSlowPoll, body, sig)
		require.Equal(t, "webhook_accepted", ok.str("status"), ok.String())
		done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
		assert.Equal(t, "failed", done.str("status"))
		assert.Equal(t, "test_refusal", done.str("reason"))
		replay := postSigned(t, s, payoutSlowPoll, body, sig)
		assert.Equal(t, "webhook_refused", replay.str("status"), replay.String())
		assert.Contains(t, replay.str("reason"), "replayed")
	})

	t.Run("a status that reports failed during reconciliation ends failed", func(t *testing.T) {
		setSimWebhook(t, s, "")
		// Every execute attempt times out (the simulator commits 6s after
		// receipt, the timeout is 5s); the status endpoint then reports the
		// payout, which settles failed.
		setFaults(t, s, map[string]any{"commit_delay_ms": 6000, "payout_settle_ms": 500})
		defer clearFaults(t, s)
		params := payoutParams("fail-rec-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", payoutSlowPoll, params)
		seen, done := followUntil(t, s, payoutSlowPoll, fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "completed")
		require.Equal(t, "failed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, "account_closed", done.str("reason"))
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("still pending at the completion deadline goes to review", func(t *testing.T) {
		setSimWebhook(t, s, "")
		setFaults(t, s, map[string]any{"payout_settle_ms": 600000})
		defer clearFaults(t, s)
		params := payoutParams("p-late-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", payoutShortDeadline, params)
		seen, done := followUntil(t, s, payoutShortDeadline, fp, id, params, "completed", "failed", "needs_manual_review")
		assert.Equal(t, "needs_manual_review", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("a worker killed while the payout is pending", func(t *testing.T) {
		setSimWebhook(t, s, "")
		setFaults(t, s, map[string]any{"payout_settle_ms": 4000})
		defer clearFaults(t, s)
		params := payoutParams("p-kill-" + randomHex(3))
		fp, id := previewOK(t, s, "dev-alice", "payments.payout", params)
		c := confirm(t, s, "dev-alice", "payments.payout", fp, params)
		require.Equal(t, "in_progress", c.str("status"), c.String())
		waitExecutions(t, s, id, 1)
		s.RestartWorker(t)
		done := waitStatus(t, s, "dev-alice", id, "completed", "failed", "needs_manual_review")
		require.Equal(t, "completed", done.str("status"), done.String())
		assert.Equal(t, 1, executions(t, s, id))
	})
}
