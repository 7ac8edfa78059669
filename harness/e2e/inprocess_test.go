package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestInProcessWorkerEagerStart: a gateway with ONCEGATE_INPROCESS_WORKER
// (no worker process at all) completes a first confirm through its own
// worker, and starts the workflow eagerly: the start's history event says
// the server accepted the eager execution (the first workflow task came
// back in the start's answer, no poll), and the gateway's process ran it.
func TestInProcessWorkerEagerStart(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{Worker: testenv.InProcessWorker})
	require.Nil(t, s.Worker, "no worker process")
	params := transferParams("91.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", done.str("status"), done.String())

	// The answer came from the outcome feed: the workflow may still be
	// closing.
	tc := s.Temporal.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil))
	var types []enumspb.EventType
	var firstTaskBy string
	var eager bool
	var startedAt time.Time
	for _, ev := range history(t, tc, id) {
		types = append(types, ev.GetEventType())
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			startedAt, eager = ev.GetEventTime().AsTime(), a.GetEagerExecutionAccepted()
		}
		if a := ev.GetWorkflowTaskStartedEventAttributes(); a != nil && firstTaskBy == "" {
			firstTaskBy = a.GetIdentity()
			t.Logf("first workflow task: event %d, started %s after the start, by %s", ev.GetEventId(),
				ev.GetEventTime().AsTime().Sub(startedAt), firstTaskBy)
		}
	}
	require.GreaterOrEqual(t, len(types), 3, "%v", types)
	assert.True(t, eager, "the server accepted the eager start (its first workflow task came back in the start's answer)")
	assert.Equal(t, []enumspb.EventType{enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
		enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED}, types[:3])
	assert.True(t, strings.HasPrefix(firstTaskBy, strconv.Itoa(s.Gateway.Pid())+"@"),
		"the gateway's process ran the first workflow task: %q", firstTaskBy)
	assert.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, types[len(types)-1])
}

// TestFirstConfirmActivityRunsEagerly: on the dev server the tests and the
// dev stack run (testenv.DevServerDynamicConfig, scripts/stack.sh), the
// worker that completes a first confirm's first workflow task is handed the
// Execute activity in that completion's answer: the server counts one eager
// activity execution on the stack's task queue per first confirm, so the
// activity skips its dispatch through matching.
func TestFirstConfirmActivityRunsEagerly(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	// The server's Prometheus reporter writes label values with '_' for '-'
	// and publishes its counters about once a second.
	queue := `taskqueue="` + strings.ReplaceAll(s.TaskQueue, "-", "_") + `"`
	eager := func() float64 { return metricValue(t, s.Temporal.MetricsURL, "activity_eager_execution", queue) }
	require.Zero(t, eager(), "a fresh task queue")
	for i, amount := range []string{"93.00", "93.01"} {
		params := transferParams(amount)
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
		require.Equal(t, "completed", done.str("status"), done.String())
		want := float64(i + 1)
		err := testenv.WaitFor(context.Background(), 10*time.Second, func(context.Context) error {
			if got := eager(); got != want {
				return fmt.Errorf("%v eager activity executions on %s, want %v", got, queue, want)
			}
			return nil
		})
		require.NoError(t, err, "after %d first confirms", i+1)
	}
}
