package watch

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOneWatcherPerKeyAndABound(t *testing.T) {
	t.Parallel()
	g := New[string](1, Metrics{})
	var runs atomic.Int32
	release := make(chan struct{})
	watch := func(context.Context) (string, error) {
		runs.Add(1)
		<-release
		return "done", nil
	}
	started := make(chan struct{})
	go func() {
		// The first caller starts the watcher; wait until it runs.
		for runs.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		close(started)
	}()
	var wg sync.WaitGroup
	var entered atomic.Int32
	results := make(chan string, 100)
	for range 100 {
		wg.Go(func() {
			entered.Add(1)
			v, _, err := g.Do(context.Background(), "op-1", watch)
			assert.NoError(t, err)
			results <- v
		})
	}
	<-started
	_, _, err := g.Do(context.Background(), "op-2", watch)
	assert.ErrorIs(t, err, ErrBusy, "a second watcher exceeds the bound of 1")
	for entered.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	// Every caller is past its count and joins the running watcher within
	// microseconds; one that joined after it ended would start a second.
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	close(results)
	for v := range results {
		assert.Equal(t, "done", v)
	}
	assert.Equal(t, int32(1), runs.Load(), "100 concurrent callers of one key: one watcher")

	v, _, err := g.Do(context.Background(), "op-2", func(context.Context) (string, error) { return "again", nil })
	require.NoError(t, err, "the slot is free again")
	assert.Equal(t, "again", v)
}

func TestACallerThatLeavesDoesNotEndTheWatch(t *testing.T) {
	t.Parallel()
	g := New[string](4, Metrics{})
	release := make(chan struct{})
	var watchErr atomic.Value
	watch := func(ctx context.Context) (string, error) {
		<-release
		watchErr.Store(ctx.Err() == nil)
		return "done", nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, _, err := g.Do(ctx, "op", watch); first <- err }()
	time.Sleep(20 * time.Millisecond)
	second := make(chan string, 1)
	go func() { v, _, _ := g.Do(context.Background(), "op", watch); second <- v }()
	cancel()
	assert.ErrorIs(t, <-first, context.Canceled)
	close(release)
	assert.Equal(t, "done", <-second)
	assert.Equal(t, true, watchErr.Load(), "the watcher's context outlives its first caller")
}
