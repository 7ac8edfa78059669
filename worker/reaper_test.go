package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/worker"
)

// fakeReaper answers each ReapBounded from a script (the last entry
// repeats) and reports every call's now on calls and its limits on limits.
type fakeReaper struct {
	script []reapAnswer
	n      atomic.Int64
	calls  chan time.Time
	limits atomic.Pointer[pgstore.ReapLimits]
}

type reapAnswer struct {
	removed, backlog int64
	err              error
}

func (f *fakeReaper) ReapBounded(ctx context.Context, now time.Time, limits pgstore.ReapLimits) (pgstore.ReapResult, error) {
	i := int(f.n.Add(1)) - 1
	a := f.script[min(i, len(f.script)-1)]
	f.limits.Store(&limits)
	select {
	case f.calls <- now:
	case <-ctx.Done():
		return pgstore.ReapResult{}, ctx.Err()
	}
	return pgstore.ReapResult{Removed: a.removed, Backlog: a.backlog}, a.err
}

// syncBuffer is a bytes.Buffer safe for the reaper's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nextCall waits for the next Reap call.
func nextCall(t *testing.T, calls <-chan time.Time) time.Time {
	t.Helper()
	select {
	case now := <-calls:
		return now
	case <-time.After(5 * time.Second):
		t.Fatal("Reap was not called")
		return time.Time{}
	}
}

func TestRunReaperCallsEveryTickAndSurvivesErrors(t *testing.T) {
	f := &fakeReaper{
		script: []reapAnswer{{removed: 3, backlog: 9}, {removed: 2, err: errors.New("database away")}, {removed: 0}, {removed: 7, backlog: 4}},
		calls:  make(chan time.Time),
	}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ticks atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Minute) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metrics, err := worker.NewReaperMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	limits := pgstore.ReapLimits{BatchRows: 5, MaxRows: 50}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		worker.RunReaper(ctx, f, time.Millisecond, limits, now, logger, metrics)
	}()

	// Each pass gets the clock's time of that pass; the error of the second
	// does not stop the third and fourth.
	for i := 1; i <= 4; i++ {
		assert.Equal(t, base.Add(time.Duration(i)*time.Minute), nextCall(t, f.calls), "call %d", i)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("RunReaper did not return after cancel")
	}
	calls := f.n.Load()
	select {
	case <-f.calls:
		t.Fatal("Reap called after RunReaper returned")
	default:
	}
	assert.Equal(t, calls, f.n.Load())
	assert.Equal(t, limits, *f.limits.Load(), "the configured limits reach the store")
	// 3+2+0+7: a fifth call finds no receiver and returns the cancel with
	// nothing removed; the backlog is the last good pass's.
	assert.Equal(t, 12.0, metricValue(t, metrics.Removed()), "removed records counted, a failed pass's too")
	assert.Equal(t, 4.0, metricValue(t, metrics.Backlog()), "the backlog of the last good pass")

	out := logs.String()
	assert.Contains(t, out, "removed=3")
	assert.Contains(t, out, "removed=7")
	assert.Contains(t, out, "reap failed")
	assert.Contains(t, out, "database away")
}

func TestRunReaperStopsWhenCanceledBeforeFirstTick(t *testing.T) {
	f := &fakeReaper{script: []reapAnswer{{}}, calls: make(chan time.Time, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		worker.RunReaper(ctx, f, time.Hour, pgstore.ReapLimits{}, time.Now, slog.New(slog.DiscardHandler), nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunReaper did not return on a canceled context")
	}
	require.Zero(t, f.n.Load())
}

func TestRunReaperWaitsOneIntervalBeforeTheFirstPass(t *testing.T) {
	f := &fakeReaper{script: []reapAnswer{{}}, calls: make(chan time.Time, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		worker.RunReaper(ctx, f, time.Hour, pgstore.ReapLimits{}, time.Now, slog.New(slog.DiscardHandler), nil)
	}()
	select {
	case <-f.calls:
		t.Fatal("Reap called before the first interval elapsed")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-done
	assert.Zero(t, f.n.Load())
}

// metricValue reads a counter's or a gauge's value.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}
