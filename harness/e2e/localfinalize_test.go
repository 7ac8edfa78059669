package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

// TestLocalFinalizeRerunsAfterACrashBeforeItsMarker: Finalize runs as a
// local activity, so its outcome reaches the history only as a marker in
// the workflow task that ran it. A worker killed after Finalize wrote the
// truth and Redis, but before that task completed, leaves no marker; the
// task times out, the next worker replays the history and runs Finalize
// again, which accepts the same outcome a second time (owner-checked,
// idempotent). The operation executed once and completes once. The worker
// holds execute-finalizes back, so that the workflow finalizes the DONE
// outcome itself, as it does every outcome the Execute activity does not.
func TestLocalFinalizeRerunsAfterACrashBeforeItsMarker(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraWorkerEnv: []string{"ONCEGATE_FAILPOINT=" + worker.FailpointAfterFinalize,
		"ONCEGATE_HOLD_WORKFLOW_CHANGES=" + workflows.ChangeExecuteFinalizes}})
	id, first := finalizeCrashThenRerun(t, s, "53.00")

	tc := s.Temporal.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out operation.Final
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, &out))
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, first.ResultRef, out.ResultRef, "the rerun recorded the outcome the first run wrote")

	events := history(t, tc, id)
	var timedOut, markers int
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if markers == 0 {
				timedOut++
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
				markers++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			assert.NotEqual(t, workflows.ActivityFinalize, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(),
				"Finalize is never a regular activity here")
		}
	}
	assert.Positive(t, timedOut, "the killed worker's workflow task timed out before any marker")
	assert.Equal(t, 1, markers, "one local activity marker: the rerun's")
	finalized := 0
	for _, line := range strings.Split(s.Worker.Log(), "\n") {
		if strings.Contains(line, `"msg":"finalized"`) && strings.Contains(line, id) {
			finalized++
		}
	}
	assert.Equal(t, 2, finalized, "Finalize ran twice: before the crash and after the replay")
	assert.Equal(t, 1, executions(t, s, id), "the downstream executed it once")
	st := call(t, "GET", s.GatewayURL+"/v1/operations/"+id, "dev-alice", nil)
	assert.Equal(t, "completed", st.str("status"), st.String())
}

// localActivityMarker is the marker name the SDK records a local
// activity's result under.
const localActivityMarker = "LocalActivity"

// finalizeCrashThenRerun confirms a transfer on s, whose worker runs with
// the after_finalize failpoint: it waits until the worker killed itself
// after Finalize, checks that the truth holds the outcome while the
// history holds no marker yet, and starts the worker again without the
// failpoint. It returns the operation id and the truth's record.
func finalizeCrashThenRerun(t *testing.T, s *testenv.Stack, amount string) (string, idemstore.Record) {
	t.Helper()
	params := transferParams(amount)
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	c := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Contains(t, []string{"completed", "in_progress"}, c.str("status"), c.String())
	require.NoError(t, testenv.WaitFor(context.Background(), time.Minute, func(context.Context) error {
		if s.Worker.Running() {
			return os.ErrDeadlineExceeded
		}
		return nil
	}), "the failpoint kills the worker after Finalize")

	st := call(t, "GET", s.GatewayURL+"/v1/operations/"+id, "dev-alice", nil)
	require.Equal(t, "completed", st.str("status"), "the first run's Finalize wrote the truth: %s", st.String())
	tc := s.Temporal.Client(t)
	for _, ev := range history(t, tc, id) {
		require.NotEqual(t, enumspb.EVENT_TYPE_MARKER_RECORDED.String()+localActivityMarker,
			ev.GetEventType().String()+ev.GetMarkerRecordedEventAttributes().GetMarkerName(), "no marker before the crash")
		require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, ev.GetEventType())
	}

	s.Worker.SetEnv(s.Env)
	require.NoError(t, s.Worker.Start())
	return id, idemstore.Record{OperationID: id, State: operation.StateDone, ResultRef: st.str("result_ref")}
}

// history reads workflow id's events so far.
func history(t *testing.T, tc client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var events []*historypb.HistoryEvent
	iter := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}
