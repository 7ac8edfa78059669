package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestGracefulShutdown: SIGTERM under load loses nothing. The gateway
// drains: every confirm in flight gets its whole answer before the process
// exits. The worker stops polling and lets the downstream call it is in
// finish: the activity's result is recorded on its first attempt, not
// abandoned to a timeout and a retry.
func TestGracefulShutdown(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})

	t.Run("gateway drains in-flight confirms", func(t *testing.T) {
		// Each transfer takes ~1.5s downstream, so the confirms are waiting
		// on their workflows when SIGTERM arrives.
		setFaults(t, s, map[string]any{"latency_ms": 1500})
		defer clearFaults(t, s)
		const n = 12
		type op struct {
			fp, id string
			params map[string]any
		}
		ops := make([]op, n)
		for i := range ops {
			params := transferParams("6" + string(rune('0'+i%10)) + ".0" + string(rune('0'+i/10)))
			ops[i].params = params
			ops[i].fp, ops[i].id = previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		}
		answers := make([]answer, n)
		var wg sync.WaitGroup
		for i := range ops {
			wg.Go(func() { answers[i] = confirm(t, s, "dev-alice", "payments.legacy_transfer", ops[i].fp, ops[i].params) })
		}
		time.Sleep(300 * time.Millisecond) // the confirms are in the gateway
		exited := s.Gateway.Terminate(30 * time.Second)
		wg.Wait()
		require.True(t, exited, "the gateway exits by itself once drained")
		for i, a := range answers {
			assert.Contains(t, []string{"in_progress", "completed"}, a.str("status"), "answer %d arrived whole: %s", i, a)
		}
		require.NoError(t, s.Gateway.Start())
		s.WaitHealthy(t, s.GatewayURL+"/healthz", s.Gateway)
		for _, o := range ops {
			done := waitStatus(t, s, "dev-alice", o.id, "completed", "failed")
			assert.Equal(t, "completed", done.str("status"), done.String())
			assert.Equal(t, 1, executions(t, s, o.id))
		}
	})

	t.Run("worker lets the running downstream call finish", func(t *testing.T) {
		// The transfer commits at once and its answer is held 3s: the
		// Execute activity is inside the HTTP call when SIGTERM arrives.
		setFaults(t, s, map[string]any{"hang_after_commit_ms": 3000})
		defer clearFaults(t, s)
		params := transferParams("71.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
		c := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
		require.Equal(t, "in_progress", c.str("status"), c.String())
		waitExecutions(t, s, id, 1)
		start := time.Now()
		require.True(t, s.Worker.Terminate(30*time.Second), "the worker exits by itself within its stop timeout")
		assert.Less(t, time.Since(start), 25*time.Second)
		require.NoError(t, s.Worker.Start())
		done := waitStatus(t, s, "dev-alice", id, "completed", "failed")
		require.Equal(t, "completed", done.str("status"), done.String())
		assert.Equal(t, 1, executions(t, s, id))

		// The Execute activity completed on its first attempt: its result
		// was recorded by the stopping worker, not lost to a timeout.
		tc := s.Temporal.Client(t)
		iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var executeStarted []int32
		completed := 0
		scheduled := map[int64]string{}
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
				scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
			}
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == "Execute" {
				executeStarted = append(executeStarted, a.GetAttempt())
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == "Execute" {
				completed++
			}
		}
		assert.Equal(t, []int32{1}, executeStarted, "one attempt")
		assert.Equal(t, 1, completed)
	})
}
