package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// scrape returns the Prometheus text a /metrics URL serves.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := httpClient.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestWorkerMetrics: after one confirm, the worker's /metrics exposes the
// Temporal SDK's series and oncegate's own, the gateway's its confirm
// latency and the catalog's TTLs; no operation id appears in any label.
// Every metric the dashboard and the alert rules in deployments/observability
// query is exposed by the gateway or the worker.
func TestWorkerMetrics(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	// The dev limits (bob's budget; this test is alice's): the budget alert's series.
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{
		"ONCEGATE_LIMITS=" + filepath.Join(root, "deployments", "limits.dev.yaml")}})
	params := transferParams("71.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", done.str("status"), done.String())
	// A security event, and a legacy transfer that is IN_FLIGHT while the
	// downstream holds its answer, then reconciled.
	tampered := confirm(t, s, "dev-alice", "payments.transfer", fp, transferParams("71.01"))
	require.Equal(t, "param_mismatch", tampered.str("status"), tampered.String())
	legacyParams := transferParams("72.00")
	legacyFP, legacyID := previewOK(t, s, "dev-alice", "payments.legacy_transfer", legacyParams)
	setFaults(t, s, map[string]any{"hang_after_commit_ms": 6000})
	c := confirm(t, s, "dev-alice", "payments.legacy_transfer", legacyFP, legacyParams)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	inFlight := scrape(t, s.WorkerMetricsURL)
	assert.Contains(t, inFlight, `oncegate_operations{action="payments.legacy_transfer",state="IN_FLIGHT"} 1`)
	waitStatus(t, s, "dev-alice", legacyID, "completed")
	clearFaults(t, s)

	var worker string
	require.NoError(t, testenv.WaitFor(context.Background(), 20*time.Second, func(context.Context) error {
		worker = scrape(t, s.WorkerMetricsURL)
		if !strings.Contains(worker, `oncegate_in_flight_duration_seconds_count{action="payments.transfer",state="DONE"}`) {
			return assert.AnError
		}
		return nil
	}))
	for _, want := range []string{
		"temporal_workflow_task_queue_poll_succeed",
		"temporal_activity_execution_latency",
		`oncegate_downstream_request_duration_seconds_count{action="payments.transfer",call="execute",status="201"}`,
		"oncegate_truth_scrape_success 1",
		"oncegate_idemstore_degraded",
	} {
		assert.Contains(t, worker, want)
	}
	gateway := scrape(t, s.GatewayURL+"/metrics")
	for _, want := range []string{
		`oncegate_confirm_duration_seconds_count{status=`,
		`oncegate_action_in_flight_ttl_seconds{action="payments.transfer"} 600`,
		`oncegate_claims_total{decision="ACQUIRED"}`,
	} {
		assert.Contains(t, gateway, want)
	}
	assert.NotContains(t, worker, id, "no operation id in labels")
	assert.NotContains(t, gateway, id, "no operation id in labels")
	worker = scrape(t, s.WorkerMetricsURL)
	assert.Contains(t, worker, `oncegate_reconcile_answers_total{action="payments.legacy_transfer",answer="found"} 1`)

	exposed := inFlight + worker + gateway
	for _, file := range []string{"alerts.yml", "grafana-dashboard.json"} {
		raw, err := os.ReadFile(filepath.Join(root, "deployments", "observability", file))
		require.NoError(t, err)
		names := queriedMetric.FindAllString(string(raw), -1)
		require.NotEmpty(t, names, file)
		for _, name := range names {
			assert.True(t, strings.Contains(exposed, "\n"+name+"{") || strings.Contains(exposed, "\n"+name+" "),
				"%s queries %s, which neither the gateway nor the worker exposes", file, name)
		}
	}
}

// queriedMetric matches the oncegate and Temporal SDK metric names a query names.
var queriedMetric = regexp.MustCompile(`\b(?:oncegate|temporal)_[a-z0-9_]+\b`)
