package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

// TestExecuteFinalizedSurvivesACrashBeforeItsCompletion: the Execute
// activity finalizes a DONE outcome itself (truth, then fast path, whose
// announcement answers the confirm), then its worker is killed before the
// activity's completion reaches Temporal. The agent was answered
// completed; the workflow has not heard of it. The activity times out and
// runs again on the next worker: the downstream answers the same
// Idempotency-Key with the same transfer, the finalize accepts the same
// outcome again, and the workflow ends DONE. The downstream executed it
// once, and every answer of it (the first, a replay, the status) carries
// the receipt of the first finalize.
func TestExecuteFinalizedSurvivesACrashBeforeItsCompletion(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraWorkerEnv: []string{"ONCEGATE_FAILPOINT=" + worker.FailpointAfterExecuteFinalized}})
	params := transferParams("54.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	first := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, "completed", first.str("status"), "the outcome feed answered before the crash: %s", first.String())
	require.NoError(t, testenv.WaitFor(context.Background(), time.Minute, func(context.Context) error {
		if s.Worker.Running() {
			return os.ErrDeadlineExceeded
		}
		return nil
	}), "the failpoint kills the worker after Execute finalized")

	tc := s.Temporal.Client(t)
	for _, ev := range history(t, tc, id) {
		require.NotEqual(t, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, ev.GetEventType(), "Execute's completion never reached Temporal")
	}
	st := status(t, s, "dev-alice", id)
	require.Equal(t, "completed", st.str("status"), st.String())
	assert.Equal(t, first.str("receipt"), st.str("receipt"), "the status names the first finalize")

	s.Worker.SetEnv(s.Env)
	require.NoError(t, s.Worker.Start())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out operation.Final
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, &out))
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, first.str("result_ref"), out.ResultRef)

	var executeAttempts int
	for _, ev := range history(t, tc, id) {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			executeAttempts = int(a.GetAttempt())
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			assert.Equal(t, workflows.ActivityExecute, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(),
				"no activity but Execute (the workflow did not finalize)")
		}
	}
	assert.GreaterOrEqual(t, executeAttempts, 2, "Execute ran again after the crash")
	assert.Equal(t, 1, executions(t, s, id), "the downstream executed it once")
	replay := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, "already_completed", replay.str("status"), replay.String())
	for name, answer := range map[string]answer{"replay": replay, "status": status(t, s, "dev-alice", id)} {
		assert.Equal(t, first.str("receipt"), answer.str("receipt"), "the %s names the first finalize", name)
	}
	claims, err := client.VerifyReceipt(first.str("receipt"), gatewayJWKS(t, s))
	require.NoError(t, err)
	assert.Equal(t, first.str("result_ref"), claims.ResultRef)
}
