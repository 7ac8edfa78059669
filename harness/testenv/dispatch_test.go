package testenv_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/harness/testenv"
)

// emptyWorkflow is a workflow of one workflow task.
func emptyWorkflow(workflow.Context) error { return nil }

// TestDevServerDispatchesWithoutThrottle runs workflows one after another,
// as fast as they finish, and reads how long each one's workflow task
// waited between scheduled and started. Each workflow asks the transfer
// queue's reader for a few reads (its workflow task, its close), so at the
// server's default of 20 reads a second per shard the dev server's one
// shard runs out of reads after a few workflows and each later task waits
// for one (31-39 ms each here; testenv.DevServerDynamicConfig); unthrottled
// a task waits a few milliseconds (a median of 4 ms here).
func TestDevServerDispatchesWithoutThrottle(t *testing.T) {
	tp := testenv.SharedTemporal(t)
	c := tp.Client(t)
	queue := "dispatch-" + time.Now().Format("150405.000000000")
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(emptyWorkflow)
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const runs, measured = 40, 20
	var waits []time.Duration
	for i := range runs {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, emptyWorkflow)
		require.NoError(t, err)
		require.NoError(t, run.Get(ctx, nil))
		if i < runs-measured {
			continue
		}
		var scheduled time.Time
		it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				scheduled = ev.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				waits = append(waits, ev.GetEventTime().AsTime().Sub(scheduled))
			}
		}
	}
	require.Len(t, waits, measured)
	slices.Sort(waits)
	// The throttle makes every task wait (31-39 ms each here); a loaded
	// machine slows some unthrottled ones (a median of 13 ms beside two
	// busy loops) but leaves the quickest quarter quick.
	quick := waits[measured/4]
	t.Logf("workflow task scheduled to started of the last %d of %d workflows: quickest quarter up to %s, median %s, max %s",
		measured, runs, quick, waits[measured/2], waits[measured-1])
	require.Less(t, quick, 20*time.Millisecond,
		"a quarter of the workflow tasks waited %s or more to start: the dev server's history queue reader is throttled (waits %v)", quick, waits)
}
