package api

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/status"
)

// fakeFeed is an idemstore.OutcomeFeed the test drives: it tells, loses or
// says nothing; ready false refuses every watch.
type fakeFeed struct {
	mu      sync.Mutex
	ready   bool
	watches map[string]*fakeWatch
	// calls counts the calls of Watch.
	calls int
	// onWatch runs inside Watch (for what the test checks at that moment).
	onWatch func(opID string)
}

// fakeWatch is one watch's channels.
type fakeWatch struct {
	outcome chan operation.Final
	lost    chan struct{}
	stopped bool
}

func (f *fakeFeed) Watch(opID string) (idemstore.OutcomeWatch, bool) {
	if f.onWatch != nil {
		f.onWatch(opID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if !f.ready {
		return idemstore.OutcomeWatch{}, false
	}
	w := &fakeWatch{outcome: make(chan operation.Final, 1), lost: make(chan struct{})}
	f.watches[opID] = w
	return idemstore.OutcomeWatch{Outcome: w.outcome, Lost: w.lost, Stop: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.stopped = true
	}}, true
}

// watch returns opID's watch.
func (f *fakeFeed) watch(t *testing.T, opID string) *fakeWatch {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.watches[opID]
	require.True(t, ok, "a watch of %s", opID)
	return w
}

// setupFeed is setup with feed as the gateway's outcome feed.
func setupFeed(t *testing.T, feed *fakeFeed) *bundle {
	t.Helper()
	feed.watches = map[string]*fakeWatch{}
	return setup(t, func(d *gateway.Deps) { d.Outcomes = feed })
}

// TestConfirmWaitsOnTheOutcomeFeed: a confirm that starts its workflow
// watches the outcome feed before the start, and answers the outcome the
// feed tells while the workflow still runs; a lost watch falls back to the
// workflow's result, a silent feed to the store's record after the wait,
// and a feed that cannot watch (not subscribed) to the workflow's result.
// Each wait is counted by how it ended.
func TestConfirmWaitsOnTheOutcomeFeed(t *testing.T) {
	t.Parallel()
	const slow = `{"amount":"12.50","currency":"USD","payee_id":"slow"}`
	waits := func(b *bundle, by string) float64 { return b.metric(t, "oncegate_confirm_waits_total", by) }

	t.Run("told", func(t *testing.T) {
		feed := &fakeFeed{ready: true}
		b := setupFeed(t, feed)
		startedAtWatch := -1
		feed.onWatch = func(string) {
			startedAtWatch = b.started()
		}
		p := b.preview(t, "dev-alice", "payments.legacy_transfer", slow)
		id := p.str("operation_id")
		told := done(id)
		told.CompletedAt = b.clock.Now()
		go func() {
			// The workflow ("slow") never ends in this test: only the feed
			// can tell the outcome, once the workflow was started.
			for {
				if b.started() == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			// What the workflow's finalize wrote under the confirm's claim, then announced.
			_ = b.store.Finalize(context.Background(), idemstore.Finalization{OperationID: id,
				Owner: b.engine.Starts()[0].Input.Ownership.Owner(), Final: told, TerminalTTL: time.Hour})
			feed.watch(t, id).outcome <- told
		}()
		r := b.confirm(t, "dev-alice", "payments.legacy_transfer", p.str("fingerprint"), slow)
		require.Equal(t, status.Completed, r.status(), r.raw)
		assert.Equal(t, told.ResultRef, r.str("result_ref"))
		assert.NotEmpty(t, r.str("receipt"))
		assert.Zero(t, startedAtWatch, "the watch began before the start")
		assert.True(t, feed.watch(t, id).stopped, "the watch ends with the confirm")
		assert.Equal(t, 1.0, waits(b, "feed"))
		assert.Zero(t, waits(b, "workflow")+waits(b, "store"))
	})

	t.Run("lost", func(t *testing.T) {
		feed := &fakeFeed{ready: true}
		b := setupFeed(t, feed)
		p := b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams)
		id := p.str("operation_id")
		// Lost as soon as it began: the workflow's result tells.
		go func() {
			for {
				feed.mu.Lock()
				w := feed.watches[id]
				feed.mu.Unlock()
				if w != nil {
					close(w.lost)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		r := b.confirm(t, "dev-alice", "payments.legacy_transfer", p.str("fingerprint"), transferParams)
		require.Equal(t, status.Completed, r.status(), r.raw)
		assert.Equal(t, 1.0, waits(b, "workflow"))
		assert.Zero(t, waits(b, "feed"))
	})

	// previewAndConfirm previews params on b and confirms them, as dev-alice.
	previewAndConfirm := func(t *testing.T, b *bundle, params string) resp {
		t.Helper()
		p := b.preview(t, "dev-alice", "payments.legacy_transfer", params)
		return b.confirm(t, "dev-alice", "payments.legacy_transfer", p.str("fingerprint"), params)
	}

	t.Run("silent", func(t *testing.T) {
		b := setupFeed(t, &fakeFeed{ready: true})
		r := previewAndConfirm(t, b, slow)
		require.Equal(t, status.InProgress, r.status(), r.raw)
		assert.Equal(t, 1.0, waits(b, "store"), "the store's record answered after the wait")
		assert.Zero(t, waits(b, "workflow"), "no long poll after a silent feed")
	})

	t.Run("not ready", func(t *testing.T) {
		b := setupFeed(t, &fakeFeed{ready: false})
		r := previewAndConfirm(t, b, transferParams)
		require.Equal(t, status.Completed, r.status(), r.raw)
		assert.Equal(t, 1.0, waits(b, "workflow"))
	})

	t.Run("degraded", func(t *testing.T) {
		feed := &fakeFeed{ready: true}
		b := setupFeed(t, feed)
		b.store.SetDegraded(true) // the store bypasses Redis: no one announces
		r := previewAndConfirm(t, b, transferParams)
		require.Equal(t, status.Completed, r.status(), r.raw)
		assert.Zero(t, feed.calls, "no watch while the store is degraded")
		assert.Equal(t, 1.0, waits(b, "workflow"))
	})

	t.Run("an attaching confirm waits on the workflow", func(t *testing.T) {
		feed := &fakeFeed{ready: true}
		b := setupFeed(t, feed)
		p := b.preview(t, "dev-alice", "payments.legacy_transfer", slow)
		first := b.confirm(t, "dev-alice", "payments.legacy_transfer", p.str("fingerprint"), slow)
		require.Equal(t, status.InProgress, first.status(), first.raw)
		again := b.confirm(t, "dev-alice", "payments.legacy_transfer", p.str("fingerprint"), slow)
		require.Equal(t, status.InProgress, again.status(), again.raw)
		assert.Equal(t, 1, feed.calls, "only the confirm that started the workflow watched the feed")
		assert.Equal(t, 2.0, waits(b, "store"))
	})
}
