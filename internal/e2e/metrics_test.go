package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/testenv"
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
func TestWorkerMetrics(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("71.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", done.str("status"), done.String())

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
		`oncegate_confirm_duration_seconds_count{outcome=`,
		`oncegate_action_in_flight_ttl_seconds{action="payments.transfer"} 600`,
		`oncegate_claims_total{outcome="ACQUIRED"}`,
	} {
		assert.Contains(t, gateway, want)
	}
	assert.NotContains(t, worker, id, "no operation id in labels")
	assert.NotContains(t, gateway, id, "no operation id in labels")
}
