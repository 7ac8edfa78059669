package soak

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// component is one process of the stack under a supervisor: whatever is
// not running is started again (as systemd's Restart=always would), except
// while a fault holds it down.
type component struct {
	name    string
	start   func() error
	stop    func()
	running func() bool

	mu        sync.Mutex
	heldUntil time.Time
	lastStart time.Time
	restarts  int
}

const (
	// supervisorTick is how often a supervisor looks at its component.
	supervisorTick = 200 * time.Millisecond
	// restartBackoff is the least time between two starts of a component
	// (one that exits at once, because what it needs is down, is not
	// started in a tight loop).
	restartBackoff = time.Second
)

// takeDown stops the component and keeps it down for d.
func (c *component) takeDown(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heldUntil = time.Now().Add(d)
	c.stop()
}

// release ends a hold, so that the supervisor starts the component at once.
func (c *component) release() {
	c.mu.Lock()
	c.heldUntil = time.Time{}
	c.mu.Unlock()
}

// up reports whether the component runs and is not held down.
func (c *component) up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().After(c.heldUntil) && c.running()
}

// supervise starts the component whenever it is not running and not held,
// until ctx ends.
func (c *component) supervise(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(supervisorTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		if now := time.Now(); now.After(c.heldUntil) && now.Sub(c.lastStart) >= restartBackoff && !c.running() {
			c.lastStart = now
			if err := c.start(); err != nil {
				log.Warn("restart failed; trying again", "component", c.name, "err", err)
			} else {
				c.restarts++
				log.Debug("restarted", "component", c.name)
			}
		}
		c.mu.Unlock()
	}
}
