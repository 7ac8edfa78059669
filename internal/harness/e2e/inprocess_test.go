package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/internal/harness/testenv"
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

	var types []enumspb.EventType
	var firstTaskBy string
	var eager bool
	var startedAt time.Time
	for _, ev := range history(t, s.Temporal.Client(t), id) {
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
