package benche2e

import (
	"context"
	"errors"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd count", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of even count is the lower middle (nearest rank)", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p95 of 1..100", ms(hundred...), 0.95, 95 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 1, 100 * time.Millisecond},
		{"tiny q is the min", ms(hundred...), 0.001, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Percentile(tt.sorted, tt.q))
		})
	}
}

func TestSummarize(t *testing.T) {
	s := Sample{
		Latencies: []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		Elapsed:   2 * time.Second,
		Errors:    1,
	}
	got := Summarize(s)
	assert.Equal(t, 4, got.N)
	assert.Equal(t, 1, got.Errors)
	assert.InDelta(t, 2.0, got.Throughput, 1e-9)
	assert.Equal(t, 20*time.Millisecond, got.P50)
	assert.Equal(t, 40*time.Millisecond, got.P99)
	assert.Equal(t, 40*time.Millisecond, got.Max)
	assert.Equal(t, 30*time.Millisecond, s.Latencies[0], "Summarize must not reorder the sample")

	assert.Equal(t, Summary{}, Summarize(Sample{}))
}

func TestMerge(t *testing.T) {
	var s Sample
	s.Merge(Sample{Latencies: []time.Duration{1}, Elapsed: time.Second, Outcomes: map[string]int{"completed": 2}})
	s.Merge(Sample{Latencies: []time.Duration{2, 3}, Elapsed: time.Second, Errors: 1, Outcomes: map[string]int{"completed": 1, "in_progress": 1}})
	assert.Len(t, s.Latencies, 3)
	assert.Equal(t, 2*time.Second, s.Elapsed)
	assert.Equal(t, 1, s.Errors)
	assert.Equal(t, map[string]int{"completed": 3, "in_progress": 1}, s.Outcomes)
}

func TestMedianAndRatio(t *testing.T) {
	assert.Equal(t, 0.0, Median(nil))
	assert.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))
	assert.Equal(t, 0.5, Ratio(1, 2))
	assert.True(t, math.IsNaN(Ratio(1, 0)))
}

func TestLoadRunBounds(t *testing.T) {
	var calls atomic.Int64
	op := func(ctx context.Context, i int) (string, error) {
		calls.Add(1)
		if i%10 == 9 {
			return "", errors.New("wrong answer")
		}
		return "ok", nil
	}
	s, err := Load{Conns: 4, Duration: 10 * time.Second, MaxRequests: 100}.Run(context.Background(), op)
	assert.ErrorContains(t, err, "wrong answer")
	assert.Equal(t, int64(100), calls.Load(), "MaxRequests bounds the phase")
	assert.Len(t, s.Latencies, 90)
	assert.Equal(t, 10, s.Errors)
	assert.Equal(t, map[string]int{"ok": 90}, s.Outcomes)

	start := time.Now()
	s, err = Load{Conns: 2, Duration: 50 * time.Millisecond}.Run(context.Background(), func(ctx context.Context, _ int) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Millisecond):
			return "ok", nil
		}
	})
	assert.NoError(t, err, "an operation cut off by the end of the phase is no error")
	assert.Less(t, time.Since(start), 5*time.Second, "Duration bounds the phase")
	assert.Zero(t, s.Errors)
	assert.NotEmpty(t, s.Latencies)
}

func TestCPUReadings(t *testing.T) {
	busy, err := machineBusy()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	assert.Positive(t, busy)
	self, err := processCPU(os.Getpid())
	assert.NoError(t, err)
	spin := time.Now()
	for time.Since(spin) < 50*time.Millisecond {
	}
	after, err := processCPU(os.Getpid())
	assert.NoError(t, err)
	assert.GreaterOrEqual(t, after, self, "a process's CPU time only grows")
	assert.Equal(t, map[string]time.Duration{"a": 2}, cpuDelta(map[string]time.Duration{"a": 1, "b": 1}, map[string]time.Duration{"a": 3}))
}

func TestTailAfterActivity(t *testing.T) {
	events := []Event{
		{Offset: 0, Type: "WORKFLOW_EXECUTION_STARTED"},
		{Offset: 5 * time.Millisecond, Type: activityDone + " Execute"},
		{Offset: 9 * time.Millisecond, Type: "ActivityTaskCompleted Execute"}, // as the reports show it
		{Offset: 14 * time.Millisecond, Type: "WORKFLOW_TASK_COMPLETED"},
		{Offset: 20 * time.Millisecond, Type: "WORKFLOW_EXECUTION_COMPLETED"},
	}
	assert.Equal(t, 11*time.Millisecond, tailAfterActivity(events, 20*time.Millisecond), "from the last activity's completion")
	assert.Zero(t, tailAfterActivity(events[:1], 0), "no activity")
}

// TestMedianEvents: the events of the most common shape, each at its
// median offset over the histories of that shape only.
func TestMedianEvents(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	shape := func(a, b, c int) []Event {
		return []Event{{Offset: ms(a), Type: "Started"}, {Offset: ms(b), Type: "Activity"}, {Offset: ms(c), Type: "Completed"}}
	}
	odd := []Event{{Offset: 0, Type: "Started"}, {Offset: ms(100), Type: "Failed"}}
	events, n := medianEvents([][]Event{shape(0, 10, 20), odd, shape(0, 30, 40), odd, shape(0, 20, 90)})
	assert.Equal(t, 3, n, "the three histories of the common shape")
	assert.Equal(t, []Event{{Offset: 0, Type: "Started"}, {Offset: ms(20), Type: "Activity"}, {Offset: ms(40), Type: "Completed"}}, events)
	answered := func(a, b int) []Event {
		return []Event{{Offset: ms(a), Type: "Started"}, {Offset: ms(b), Type: "Completed"}, {Offset: ms(b - 5), Type: "Answer"}}
	}
	events, _ = medianEvents([][]Event{answered(0, 10), answered(0, 20)})
	assert.Equal(t, []string{"Started", "Answer", "Completed"}, []string{events[0].Type, events[1].Type, events[2].Type},
		"in the order of their median offsets: an answer before the workflow's end shows before it")
	events, n = medianEvents(nil)
	assert.Nil(t, events)
	assert.Zero(t, n)
}
