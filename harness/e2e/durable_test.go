package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// waitExecutions waits until the simulator has executed ref n times.
func waitExecutions(t testing.TB, s *testenv.Stack, ref string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for executions(t, s, ref) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %d executions", ref, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func clearFaults(t testing.TB, s *testenv.Stack) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.DownstreamURL+"/_sim/faults", nil)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
}

// confirmThenKillWorker sets the simulator's faults (hang_after_commit_ms
// among them), confirms — the answer is in_progress — waits until the
// simulator has executed the operation and is holding its answer, then kills
// the worker with SIGKILL and starts a new one.
func confirmThenKillWorker(t testing.TB, s *testenv.Stack, scope, fp, id string, params, faults map[string]any) {
	t.Helper()
	setFaults(t, s, faults)
	c := confirm(t, s, "dev-alice", scope, fp, params)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	waitExecutions(t, s, id, 1)
	s.RestartWorker(t)
}

// TestWorkerKilledDuringHold: the simulator commits and holds its answer; the
// worker dies; a new worker retries with the same Idempotency-Key and gets the
// simulator's original transfer.
func TestWorkerKilledDuringHold(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("250.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	confirmThenKillWorker(t, s, "payments.transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000})
	clearFaults(t, s)

	done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
	require.Equal(t, "completed", done.str("status"), done.String())
	assert.Equal(t, 1, executions(t, s, id))
	var result struct {
		ID              string `json:"id"`
		ClientReference string `json:"client_reference"`
	}
	raw, _ := json.Marshal(done.Body["result"])
	require.NoError(t, json.Unmarshal(raw, &result))
	assert.Equal(t, done.str("result_ref"), result.ID)
	assert.Equal(t, id, result.ClientReference)
}

// TestLegacyWorkerKilledReconciles: a downstream that ignores the key is not
// called again; reconciliation finds the transfer.
func TestLegacyWorkerKilledReconciles(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("260.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	confirmThenKillWorker(t, s, "payments.legacy_transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000})
	clearFaults(t, s)

	done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
	require.Equal(t, "completed", done.str("status"), done.String())
	assert.NotEmpty(t, done.str("result_ref"))
	assert.Equal(t, 1, executions(t, s, id))
}

// TestLegacyNeedsManualReview: status endpoint down and the worker lost: the
// operation waits for a person, who resolves it; the agent then gets the
// operator's result.
func TestLegacyNeedsManualReview(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("270.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	confirmThenKillWorker(t, s, "payments.legacy_transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})

	review := waitStatus(t, s, "dev-alice", id, "needs_manual_review")
	assert.Equal(t, http.StatusAccepted, review.Code)
	again := confirm(t, s, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, "needs_manual_review", again.str("status"), again.String())
	assert.Equal(t, false, again.Body["retryable"])

	// Visible to operators in Temporal, by search attribute.
	require.NoError(t, testenv.WaitFor(context.Background(), 20*time.Second, func(context.Context) error {
		out, err := s.TemporalCLI(t, "workflow", "list", "--query", `IdemState="NEEDS_REVIEW"`)
		if err != nil || !strings.Contains(out, id) {
			return assert.AnError
		}
		return nil
	}))
	// The workflow's state query answers while it waits for a person.
	q, err := s.Temporal.Client(t).QueryWorkflow(context.Background(), id, "", workflows.QueryState)
	require.NoError(t, err)
	var view workflows.StateView
	require.NoError(t, q.Get(&view))
	assert.Equal(t, "NEEDS_REVIEW", string(view.State))

	list := call(t, http.MethodGet, s.GatewayURL+"/v1/ops/operations?state=needs_manual_review", "dev-ops", nil)
	require.Equal(t, http.StatusOK, list.Code, list.String())
	assert.Contains(t, string(list.Raw), id)
	forbidden := call(t, http.MethodGet, s.GatewayURL+"/v1/ops/operations?state=needs_manual_review", "dev-alice", nil)
	assert.Equal(t, http.StatusForbidden, forbidden.Code)

	clearFaults(t, s)
	out, err := s.OpsCLI(t, "resolve", id, "--outcome", "completed", "--result", `{"id":"tr_manual_1","status":"succeeded"}`, "--note", "found in the bank statement")
	require.NoError(t, err, out)

	done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
	assert.Equal(t, "completed", done.str("status"))
	assert.Equal(t, "tr_manual_1", done.str("result_ref"))
	replay := confirm(t, s, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, "already_completed", replay.str("status"), replay.String())
	assert.Equal(t, "tr_manual_1", replay.str("result_ref"))
	assert.Equal(t, 1, executions(t, s, id))
}

// TestBusinessRefusal: insufficient_funds is a definite failure after one attempt.
func TestBusinessRefusal(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("10000.01")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "failed", done.str("status"), done.String())
	assert.Contains(t, done.str("reason"), "insufficient_funds")

	replay := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	assert.Equal(t, "already_failed", replay.str("status"), replay.String())
	assert.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, 0, executions(t, s, id))

	// Exactly one attempt of the Execute activity.
	tc := s.Temporal.Client(t)
	iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	executes := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Execute" {
			executes++
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			assert.Equal(t, int32(1), a.GetAttempt())
		}
	}
	assert.Equal(t, 1, executes)
}

// TestSecondStartSameID: a second start of the same workflow ID (as from a
// second gateway) never runs a second execution.
func TestSecondStartSameID(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("31.40")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", done.str("status"), done.String())

	tc := s.Temporal.Client(t)
	desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	firstRun := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	// Start again with the same input as the gateway would.
	var in operation.Input
	hist := tc.GetWorkflowHistory(context.Background(), id, firstRun, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := hist.Next()
	require.NoError(t, err)
	payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	require.NotEmpty(t, payloads)
	require.NoError(t, json.Unmarshal(payloads[0].GetData(), &in))
	run, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.OperationWorkflowName, in)
	if err == nil {
		// Attached to the same run, never a new one.
		assert.Equal(t, firstRun, run.GetRunID())
	} else {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		assert.ErrorAs(t, err, &already)
	}
	assert.Equal(t, 1, executions(t, s, id))
	replay := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	assert.Equal(t, "already_completed", replay.str("status"))
	assert.Equal(t, done.str("result_ref"), replay.str("result_ref"))
}

// TestGatewayKilledAfterClaim: the gateway dies (SIGKILL) right after its
// claim, before any workflow started; the next confirm of the same
// fingerprint reaches a definite outcome with at most one execution. With
// Redis down the claim was taken in PostgreSQL alone, and the same holds.
func TestGatewayKilledAfterClaim(t *testing.T) {
	for _, redisDown := range []bool{false, true} {
		name := "fast path"
		if redisDown {
			name = "PostgreSQL only"
		}
		t.Run(name, func(t *testing.T) { gatewayKilledAfterClaim(t, redisDown) })
	}
}

func gatewayKilledAfterClaim(t *testing.T, redisDown bool) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{"ONCEGATE_FAILPOINT=after_claim"}})
	params := transferParams("99.99")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	if redisDown {
		s.Redis.Stop()
	}

	body, _ := json.Marshal(map[string]any{"fingerprint": fp, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.GatewayURL+"/v1/actions/payments.transfer/confirm", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer dev-alice")
	req.Header.Set("Content-Type", "application/json")
	_, err := httpClient.Do(req)
	require.Error(t, err, "the gateway must have died without answering")
	require.NoError(t, testenv.WaitFor(context.Background(), 10*time.Second, func(context.Context) error {
		if s.Gateway.Running() {
			return assert.AnError
		}
		return nil
	}))

	// The claim exists, no workflow exists, nothing ran.
	if redisDown {
		assert.Equal(t, 1, truthRows(t, s, id))
	} else {
		rdb := s.Redis.Client()
		defer rdb.Close()
		state, err := rdb.HGet(context.Background(), "idem:{"+id+"}", "state").Result()
		require.NoError(t, err)
		require.Equal(t, "IN_FLIGHT", state)
	}
	_, err = s.Temporal.Client(t).DescribeWorkflowExecution(context.Background(), id, "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound)
	assert.Equal(t, 0, executions(t, s, id))

	s.RestartGatewayWith(t, []string{"ONCEGATE_CLAIM_GRACE=1s"})
	var last answer
	require.NoError(t, testenv.WaitFor(context.Background(), 60*time.Second, func(context.Context) error {
		last = confirm(t, s, "dev-alice", "payments.transfer", fp, params)
		switch last.str("status") {
		case "completed", "already_completed":
			return nil
		case "in_progress":
			return assert.AnError
		}
		t.Fatalf("unexpected answer: %s", last)
		return nil
	}))
	assert.NotEmpty(t, last.str("result_ref"))
	assert.Equal(t, 1, executions(t, s, id))
	assert.Equal(t, 1, truthRows(t, s, id))
}
