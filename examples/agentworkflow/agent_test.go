package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/client/temporaltool"
	"github.com/oncegate/oncegate/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPlannerScript(t *testing.T) {
	t.Parallel()
	steps, err := (&Planner{}).Plan(context.Background(), Task{Request: "pay 12.50 usd to p-1; Pay 3 EUR to p-2 for lunch at noon;"})
	require.NoError(t, err)
	assert.Equal(t, []Step{
		{Scope: "payments.transfer", Params: map[string]any{"amount": "12.50", "currency": "usd", "payee_id": "p-1"}},
		{Scope: "payments.transfer", Params: map[string]any{"amount": "3", "currency": "EUR", "payee_id": "p-2", "memo": "lunch at noon"}},
	}, steps)
	_, err = (&Planner{}).Plan(context.Background(), Task{Request: "buy a boat"})
	assert.ErrorContains(t, err, "buy a boat")
	_, err = (&Planner{}).Plan(context.Background(), Task{Request: " ; "})
	assert.ErrorContains(t, err, "nothing to do")
}

// agentHarness is a stack, the agent's worker as its own process, and a
// Temporal client that drives the agent as its user would.
type agentHarness struct {
	stack  *testenv.Stack
	worker *testenv.Process
	tc     tclient.Client
	queue  string
}

// startAgent builds this example, starts its worker on a task queue of its
// own on the stack's Temporal server, and stops it at the end.
func startAgent(t *testing.T, s *testenv.Stack) *agentHarness {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "agentworkflow"), "./examples/agentworkflow")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	h := &agentHarness{stack: s, tc: s.Temporal.Client(t), queue: "agent-test-" + hex.EncodeToString(suffix)}
	h.worker, err = testenv.StartProcess("agent-worker", filepath.Join(dir, "agent-worker.log"),
		[]string{filepath.Join(dir, "agentworkflow"), "worker"},
		[]string{"GATEWAY_URL=" + s.GatewayURL, "ONCEGATE_TOKEN=dev-alice", "TEMPORAL_ADDRESS=" + s.Temporal.Address,
			"TEMPORAL_NAMESPACE=" + s.Temporal.Namespace, "AGENT_TASK_QUEUE=" + h.queue}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		h.worker.Stop()
		if t.Failed() {
			t.Logf("--- agent worker log (tail) ---\n%s", h.worker.Log())
		}
	})
	return h
}

// killWorker kills the agent's worker with SIGKILL and starts a new one.
func (h *agentHarness) killWorker(t *testing.T) {
	t.Helper()
	h.worker.Kill()
	require.NoError(t, h.worker.Start())
}

// start starts an agent on request.
func (h *agentHarness) start(t *testing.T, request string) tclient.WorkflowRun {
	t.Helper()
	run, err := h.tc.ExecuteWorkflow(context.Background(), tclient.StartWorkflowOptions{ID: "agent-" + t.Name(), TaskQueue: h.queue},
		AgentWorkflowName, Task{Request: request})
	require.NoError(t, err)
	return run
}

// awaitPending waits until the agent shows a preview waiting for approval.
func (h *agentHarness) awaitPending(t *testing.T, id string) temporaltool.Preview {
	t.Helper()
	var p temporaltool.Preview
	require.NoError(t, testenv.WaitFor(context.Background(), 60*time.Second, func(ctx context.Context) error {
		var ok bool
		if p, ok = pending(ctx, h.tc, id); !ok {
			return fmt.Errorf("no preview waits for approval yet")
		}
		return nil
	}))
	return p
}

func (h *agentHarness) approve(t *testing.T, id string, p temporaltool.Preview) {
	t.Helper()
	require.NoError(t, h.tc.SignalWorkflow(context.Background(), id, "", temporaltool.SignalApproval,
		temporaltool.Approval{OperationID: p.OperationID, Approved: true, By: "test"}))
}

// awaitConfirmInFlight waits until the Confirm activity is running and the
// downstream has executed the transfer (and holds its answer).
func (h *agentHarness) awaitConfirmInFlight(t *testing.T, id, opID string) {
	t.Helper()
	require.NoError(t, testenv.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) error {
		if n := h.executions(t, opID); n != 1 {
			return fmt.Errorf("%d executions", n)
		}
		desc, err := h.tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return err
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityType().GetName() == temporaltool.ActivityConfirm {
				return nil
			}
		}
		return fmt.Errorf("the confirm activity is not running")
	}))
}

// executions asks the simulator how many transfers ran for the operation.
func (h *agentHarness) executions(t *testing.T, opID string) int {
	t.Helper()
	resp, err := http.Get(h.stack.DownstreamURL + "/_sim/executions?ref=" + opID)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Count *int `json:"count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotNil(t, out.Count)
	return *out.Count
}

// faults sets (body non-empty) or clears the simulator's faults.
func (h *agentHarness) faults(t *testing.T, body string) {
	t.Helper()
	method := http.MethodDelete
	if body != "" {
		method = http.MethodPut
	}
	req, err := http.NewRequest(method, h.stack.DownstreamURL+"/_sim/faults", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
}

// scheduled counts the activities of type name the agent's history
// scheduled, and returns the attempt that last started one of them.
func (h *agentHarness) scheduled(t *testing.T, id, name string) (n int, attempt int32) {
	t.Helper()
	ids := map[int64]bool{}
	it := h.tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == name {
			n++
			ids[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && ids[a.GetScheduledEventId()] {
			attempt = a.GetAttempt()
		}
	}
	return n, attempt
}

// TestAgentSurvivesWorkerKills kills the agent's worker (SIGKILL) after the
// preview, after the approval and while the confirm is in flight: each time
// the transfer is executed exactly once and the agent reports it completed.
func TestAgentSurvivesWorkerKills(t *testing.T) {
	// The gateway's confirm waits 10s for the outcome, so that a confirm
	// whose downstream holds its answer is still in flight when killed.
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{"ONCEGATE_CONFIRM_WAIT=10s"}})
	h := startAgent(t, s)

	cases := []struct {
		name  string
		payee string
		// confirmRetried is true when the kill interrupts the Confirm activity.
		confirmRetried bool
		approve        func(t *testing.T, id string, p temporaltool.Preview)
	}{
		{"after_preview", "p-agent-1", false, func(t *testing.T, id string, p temporaltool.Preview) {
			h.killWorker(t)
			h.approve(t, id, p)
		}},
		{"after_approval", "p-agent-2", false, func(t *testing.T, id string, p temporaltool.Preview) {
			h.approve(t, id, p)
			h.killWorker(t)
		}},
		{"during_confirm", "p-agent-3", true, func(t *testing.T, id string, p temporaltool.Preview) {
			h.faults(t, `{"hang_after_commit_ms":15000}`)
			h.approve(t, id, p)
			h.awaitConfirmInFlight(t, id, p.OperationID)
			h.killWorker(t)
			h.faults(t, "")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := h.start(t, "pay 42.50 USD to "+tc.payee+" for rent")
			p := h.awaitPending(t, run.GetID())
			require.NotEmpty(t, p.Fingerprint)
			tc.approve(t, run.GetID(), p)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var rep Report
			require.NoError(t, run.Get(ctx, &rep))
			require.Len(t, rep.Calls, 1)
			call := rep.Calls[0]
			assert.Empty(t, call.Error)
			// completed, or already_completed when a retried confirm got the replay.
			assert.True(t, client.Status(call.Status).Succeeded(), call.Status)
			assert.Equal(t, p.OperationID, call.OperationID)
			assert.NotEmpty(t, call.ResultRef)
			assert.Equal(t, 1, h.executions(t, p.OperationID), "exactly one transfer")
			previews, _ := h.scheduled(t, run.GetID(), temporaltool.ActivityPreview)
			assert.Equal(t, 1, previews, "never a new preview")
			confirms, attempt := h.scheduled(t, run.GetID(), temporaltool.ActivityConfirm)
			assert.Equal(t, 1, confirms, "one confirm activity, its attempts all with the recorded fingerprint")
			if tc.confirmRetried {
				assert.GreaterOrEqual(t, attempt, int32(2), "the killed confirm was attempted again")
			}
		})
	}

	// The example's driver, as a user runs it: it shows the preview, reads
	// the answer and signals it.
	t.Run("driver", func(t *testing.T) {
		var out bytes.Buffer
		d := &driver{tc: h.tc, cfg: config{TaskQueue: h.queue}, in: bufio.NewReader(strings.NewReader("y\n")), out: &out}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := d.run(ctx, "pay 5 USD to p-agent-4")
		require.NoError(t, err, out.String())
		require.Len(t, rep.Calls, 1)
		assert.Equal(t, "completed", rep.Calls[0].Status, out.String())
		assert.Contains(t, out.String(), "payments.transfer")
		assert.Contains(t, out.String(), "Approve? [y/N]")
		assert.Equal(t, 1, h.executions(t, rep.Calls[0].OperationID))
	})
}
