package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// recordHistoriesEnv opts in to TestRecordHistories: "1" records every
// path; a comma-separated list of names records only those (so that the
// histories of an older workflow version are kept as they were recorded).
const recordHistoriesEnv = "ONCEGATE_RECORD_HISTORIES"

// recording runs the subtest name of TestRecordHistories when
// recordHistoriesEnv selects it, and skips it otherwise.
func recording(t *testing.T, name string, record func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		if v := os.Getenv(recordHistoriesEnv); v != "1" && !slices.Contains(strings.Split(v, ","), name) {
			t.Skipf("%s=%s does not select %s", recordHistoriesEnv, v, name)
		}
		record(t)
	})
}

// TestRecordHistories drives representative operations through a real stack
// and writes each closed workflow's history to
// workflows/testdata/histories/<name>.json, which workflows.TestReplay
// replays against the current workflow code. It rewrites checked-in files,
// so it only runs with ONCEGATE_RECORD_HISTORIES=1 (see
// workflows/testdata/histories/README).
func TestRecordHistories(t *testing.T) {
	if os.Getenv(recordHistoriesEnv) == "" {
		t.Skip("set " + recordHistoriesEnv + "=1 (or =name,name) to re-record workflows/testdata/histories/*.json")
	}
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "workflows", "testdata", "histories")
	require.NoError(t, os.MkdirAll(dir, 0o755))

	s := testenv.StartStack(t, testenv.StackOptions{})

	// The paths that only need a preview, faults and confirms until the end.
	for _, p := range []struct {
		name, scope, amount, payee string
		faults                     map[string]any
		status, failureKind        string
		reasonHas                  string
		executions                 int // -1: not checked
	}{
		{name: "honouring_completed", scope: "payments.transfer", amount: "41.00", status: "completed", executions: -1},
		{name: "honouring_completed_single_claim", scope: "payments.transfer", amount: "48.00", status: "completed", executions: -1},
		{name: "business_refusal_failed", scope: "payments.transfer", amount: "10000.01", status: "failed",
			reasonHas: "insufficient_funds", executions: -1},
		{name: "legacy_late_commit_completed", scope: "payments.legacy_transfer", amount: "44.00",
			faults: map[string]any{"commit_delay_ms": 8000, "status_lag_ms": 2000}, status: "completed", executions: 1},
		{name: "legacy_not_executed_after_window", scope: "payments.legacy_transfer", amount: "45.00",
			faults: map[string]any{"fail_next": 1}, status: "failed", failureKind: "not_executed", executions: 0},
		{name: "payout_pending_paid", scope: "payments.payout", amount: "46.00", status: "completed", executions: -1},
		{name: "payout_pending_failed", scope: "payments.payout", amount: "47.00", payee: "fail-47", status: "failed", executions: -1},
		// Recorded once the workflow's input carried the downstream plan
		// (downstream_plan) instead of the catalog's configuration.
		{name: "honouring_completed_plan", scope: "payments.transfer", amount: "49.00", status: "completed", executions: -1},
		{name: "legacy_late_commit_completed_plan", scope: "payments.legacy_transfer", amount: "50.00",
			faults: map[string]any{"commit_delay_ms": 8000, "status_lag_ms": 2000}, status: "completed", executions: 1},
		{name: "payout_pending_paid_plan", scope: "payments.payout", amount: "51.00", status: "completed", executions: -1},
		// Recorded with version 1 of single-claim and finalize-local-activity,
		// each behind its own marker (before fast-confirm).
		{name: "honouring_completed_local_finalize", scope: "payments.transfer", amount: "52.00", status: "completed", executions: -1},
		{name: "payout_pending_paid_local_finalize", scope: "payments.payout", amount: "53.00", status: "completed", executions: -1},
		// Recorded with version 1 of fast-confirm: one version marker for
		// every change before it.
		{name: "honouring_completed_fast_confirm", scope: "payments.transfer", amount: "55.00", status: "completed", executions: -1},
		{name: "payout_pending_paid_fast_confirm", scope: "payments.payout", amount: "56.00", status: "completed", executions: -1},
		// Recorded with version 2 of fast-confirm (execute-finalizes): the
		// Execute activity finalized the transfer's DONE itself; the
		// payout's, a business state, the workflow finalizes.
		{name: "honouring_completed_execute_finalizes", scope: "payments.transfer", amount: "58.00", status: "completed", executions: -1},
		{name: "payout_pending_paid_execute_finalizes", scope: "payments.payout", amount: "59.00", status: "completed", executions: -1},
	} {
		recording(t, p.name, func(t *testing.T) {
			params := transferParams(p.amount)
			if p.payee != "" {
				params["payee_id"] = p.payee
			}
			fp, id := previewOK(t, s, "dev-alice", p.scope, params)
			if p.faults != nil {
				setFaults(t, s, p.faults)
				defer clearFaults(t, s)
			}
			done := confirmUntilTerminal(t, s, "dev-alice", p.scope, fp, id, params)
			require.Equal(t, p.status, done.str("status"), done.String())
			if p.failureKind != "" {
				require.Equal(t, p.failureKind, done.str("failure_kind"), done.String())
			}
			require.Contains(t, done.str("reason"), p.reasonHas, done.String())
			if p.executions >= 0 {
				require.Equal(t, p.executions, executions(t, s, id))
			}
			recordHistory(t, s, id, filepath.Join(dir, p.name+".json"))
		})
	}

	recording(t, "legacy_worker_killed_reconciled", func(t *testing.T) {
		params := transferParams("42.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		confirmThenKillWorker(t, s, "payments.legacy_transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000})
		clearFaults(t, s)

		done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
		require.Equal(t, "completed", done.str("status"), done.String())
		require.Equal(t, 1, executions(t, s, id))
		recordHistory(t, s, id, filepath.Join(dir, "legacy_worker_killed_reconciled.json"))
	})

	recording(t, "legacy_needs_review_resolved", func(t *testing.T) {
		params := transferParams("43.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		confirmThenKillWorker(t, s, "payments.legacy_transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})

		waitStatus(t, s, "dev-alice", id, "needs_manual_review")
		clearFaults(t, s)
		res := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops", map[string]any{
			"outcome": "completed",
			"result":  map[string]any{"id": "tr_manual"},
			"note":    "found in the bank statement",
		})
		require.Less(t, res.Code, 300, res.String())

		done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
		require.Equal(t, "completed", done.str("status"), done.String())
		require.Equal(t, "tr_manual", done.str("result_ref"), done.String())
		recordHistory(t, s, id, filepath.Join(dir, "legacy_needs_review_resolved.json"))
	})

	for _, p := range []struct{ name, amount string }{
		{name: "legacy_needs_review_update_resolved", amount: "46.00"},
		// Recorded with version 1 of single-claim and finalize-local-activity
		// (before fast-confirm).
		{name: "legacy_needs_review_update_resolved_local_finalize", amount: "54.00"},
		// Recorded with version 1 of fast-confirm.
		{name: "legacy_needs_review_update_resolved_fast_confirm", amount: "57.00"},
		// Recorded with version 2 of fast-confirm (execute-finalizes).
		{name: "legacy_needs_review_update_resolved_execute_finalizes", amount: "60.00"},
	} {
		recording(t, p.name, func(t *testing.T) {
			id := toNeedsReview(t, s, p.amount)
			res := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops", map[string]any{
				"outcome":      "completed",
				"result":       map[string]any{"id": "tr_manual_2"},
				"note":         "found in the bank statement",
				"evidence_url": "https://tickets.example/42",
			})
			require.Equal(t, http.StatusOK, res.Code, res.String())
			require.Equal(t, "resolved", res.str("status"), res.String())
			again := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops", map[string]any{
				"outcome": "failed", "reason": "second thoughts",
			})
			require.Equal(t, "already_resolved", again.str("status"), again.String())
			// A refused signal inside the grace is in the history too.
			out, err := s.TemporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalResolve,
				"--input", `{"outcome":"failed","reason":"typo","operator":"web-ui-op"}`)
			require.NoError(t, err, out)
			recordHistory(t, s, id, filepath.Join(dir, p.name+".json"))
		})
	}

}

// recordHistory waits until workflow id is closed, writes its full history to
// path in the JSON format the SDK's replayer reads (the one `temporal
// workflow show --output json` prints), and replays it once as a check.
func recordHistory(t *testing.T, s *testenv.Stack, id, path string) {
	t.Helper()
	tc := s.Temporal.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The gateway may answer from the truth before the workflow has closed.
	var out operation.Final
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, &out))

	hist := &historypb.History{}
	iter := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	require.NotEmpty(t, hist.Events)
	last := hist.Events[len(hist.Events)-1].GetEventType()
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, last, "workflow %s did not complete", id)

	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	t.Logf("recorded %s: %d events, %d bytes, outcome %s", filepath.Base(path), len(hist.Events), len(b)+1, out.State)

	replayer := sdkworker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.Operation, workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, path))
}
