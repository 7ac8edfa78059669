// Package watch collapses concurrent waits for the same thing into one:
// one watcher per key (golang.org/x/sync/singleflight) whose result every
// concurrent caller of the key shares, and a bounded number of watchers in
// all. The gateway watches each operation's workflow result through it, so
// that 200 concurrent duplicate confirms of one operation cost Temporal one
// long poll instead of 200.
package watch

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// ErrBusy is returned when a new watcher is needed but Max are running:
// the caller answers at once (in_progress) instead of waiting.
var ErrBusy = errors.New("watch: too many watchers")

// Metrics count the watchers; nil fields count nothing.
type Metrics struct {
	// Active is the number of watchers running.
	Active prometheus.Gauge
	// Started counts the watchers started.
	Started prometheus.Counter
	// Shared counts the callers whose result was shared with other
	// callers (its watcher's own caller included).
	Shared prometheus.Counter
	// Busy counts the callers refused because Max watchers were running.
	Busy prometheus.Counter
}

// Group runs at most one watcher per key and at most Max in all.
type Group[T any] struct {
	flights singleflight.Group
	slots   chan struct{}
	m       Metrics
}

// New returns a group of at most max watchers (max > 0).
func New[T any](max int, m Metrics) *Group[T] {
	return &Group[T]{slots: make(chan struct{}, max), m: m}
}

// Do returns the result of watch for key: the running watcher's when one
// runs (shared), else a new one's, run detached from ctx so that a caller
// that leaves does not end the others' wait (watch bounds itself). The
// caller waits until the result or its own ctx's end. ErrBusy when a new
// watcher would exceed the bound.
func (g *Group[T]) Do(ctx context.Context, key string, watch func(context.Context) (T, error)) (T, bool, error) {
	ch := g.flights.DoChan(key, func() (any, error) {
		select {
		case g.slots <- struct{}{}:
		default:
			return nil, ErrBusy
		}
		defer func() { <-g.slots }()
		inc(g.m.Started)
		if g.m.Active != nil {
			g.m.Active.Inc()
			defer g.m.Active.Dec()
		}
		return watch(context.WithoutCancel(ctx))
	})
	var zero T
	select {
	case <-ctx.Done():
		return zero, false, ctx.Err()
	case res := <-ch:
		if errors.Is(res.Err, ErrBusy) {
			inc(g.m.Busy)
		}
		if res.Shared {
			inc(g.m.Shared)
		}
		v, _ := res.Val.(T)
		return v, res.Shared, res.Err
	}
}

func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}
