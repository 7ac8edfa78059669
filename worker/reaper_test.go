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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/worker"
)

// fakeReaper answers each Reap from a script (the last entry repeats) and
// reports every call's now on calls; the embedded nil idemstore.Store makes
// any other method panic: the reaper must not call it.
type fakeReaper struct {
	idemstore.Store
	script []reapAnswer
	n      atomic.Int64
	calls  chan time.Time
}

type reapAnswer struct {
	removed int64
	err     error
}

func (f *fakeReaper) Reap(ctx context.Context, now time.Time) (int64, error) {
	i := int(f.n.Add(1)) - 1
	a := f.script[min(i, len(f.script)-1)]
	select {
	case f.calls <- now:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return a.removed, a.err
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
		script: []reapAnswer{{removed: 3}, {err: errors.New("database away")}, {removed: 0}, {removed: 7}},
		calls:  make(chan time.Time),
	}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ticks atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Minute) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		worker.RunReaper(ctx, f, time.Millisecond, now, logger)
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
		worker.RunReaper(ctx, f, time.Hour, time.Now, slog.New(slog.DiscardHandler))
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
		worker.RunReaper(ctx, f, time.Hour, time.Now, slog.New(slog.DiscardHandler))
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
