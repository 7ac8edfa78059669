// Package gatewaytest holds what tests of the gateway use in place of its
// real ports: Engine, a gateway.Engine in memory whose workflows are Go
// functions, and ExerciseEngine, the suite every gateway.Engine passes
// (the Temporal engine of package engine, and Engine), so that the fake
// is held to the real port's behaviour.
package gatewaytest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/operation"
)

// Workflow is an operation's workflow in Engine: it runs on its own
// goroutine from the start, waits for an operator's decision when it needs
// one (Review.Wait), and returns the operation's terminal outcome.
type Workflow func(ctx context.Context, in operation.Input, review *Review) operation.Final

// Review is a workflow's wait for an operator's decision.
type Review struct {
	mu        sync.Mutex
	awaiting  bool
	decisions chan operation.Resolution
}

// Wait marks the workflow as awaiting review and returns the decision, the
// first the engine was sent while it waited.
func (r *Review) Wait() operation.Resolution {
	r.mu.Lock()
	r.awaiting = true
	r.mu.Unlock()
	return <-r.decisions
}

// waiting reports whether the workflow awaits a decision.
func (r *Review) waiting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.awaiting
}

// Engine is a gateway.Engine in memory. It is safe for concurrent use; its
// zero value is not: make one with NewEngine.
type Engine struct {
	workflow Workflow
	mu       sync.Mutex
	runs     map[string]*run
	starts   []Start
	events   []operation.DownstreamEvent
	// startErr, when set, refuses the next startErrTimes starts (every
	// start when 0).
	startErr      error
	startErrTimes int
}

var _ gateway.Engine = (*Engine)(nil)

// Start is one workflow start an Engine saw.
type Start struct {
	// Input is the workflow's input.
	Input operation.Input
	// Options are the start's options.
	Options gateway.StartOptions
}

// run is one workflow in an Engine.
type run struct {
	id     string
	done   chan struct{}
	res    operation.Final
	review *Review
	// decided is the first decision sent, once one was.
	decided *operation.OperatorDecision
}

// NewEngine returns an Engine whose workflows run w.
func NewEngine(w Workflow) *Engine {
	return &Engine{workflow: w, runs: map[string]*run{}}
}

// FailStarts makes the next times starts fail with err (every start when
// times is 0; a nil err stops failing them).
func (e *Engine) FailStarts(err error, times int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.startErr, e.startErrTimes = err, times
}

// Starts lists the starts that began a workflow, in order.
func (e *Engine) Starts() []Start {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Start(nil), e.starts...)
}

// Events lists the downstream events delivered, in order.
func (e *Engine) Events() []operation.DownstreamEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]operation.DownstreamEvent(nil), e.events...)
}

// Start implements gateway.Engine.
func (e *Engine) Start(_ context.Context, in operation.Input, opts gateway.StartOptions) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.startErr != nil {
		err := e.startErr
		if e.startErrTimes > 0 {
			if e.startErrTimes--; e.startErrTimes == 0 {
				e.startErr = nil
			}
		}
		return "", fmt.Errorf("start %s: %w", in.OperationID, err)
	}
	if _, ok := e.runs[in.OperationID]; ok {
		return "", fmt.Errorf("start %s: %w", in.OperationID, gateway.ErrAlreadyStarted)
	}
	e.starts = append(e.starts, Start{Input: in, Options: opts})
	r := &run{id: in.OperationID, done: make(chan struct{}), review: &Review{decisions: make(chan operation.Resolution, 1)}}
	e.runs[in.OperationID] = r
	go func() {
		r.res = e.workflow(context.Background(), in, r.review)
		if r.res.CompletedAt.IsZero() {
			r.res.CompletedAt = time.Now().UTC().Truncate(time.Millisecond)
		}
		close(r.done)
	}()
	return "run-" + in.OperationID, nil
}

// lookup is opID's run, or ErrNoWorkflow.
func (e *Engine) lookup(opID, step string) (*run, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.runs[opID]
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", step, opID, gateway.ErrNoWorkflow)
	}
	return r, nil
}

// Describe implements gateway.Engine.
func (e *Engine) Describe(_ context.Context, opID string) error {
	_, err := e.lookup(opID, "describe")
	return err
}

// Await implements gateway.Engine.
func (e *Engine) Await(ctx context.Context, opID, _ string, deadline time.Time) (operation.Final, error) {
	r, err := e.lookup(opID, "await")
	if err != nil {
		return operation.Final{}, err
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-r.done:
		return r.res, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return operation.Final{}, fmt.Errorf("await %s: %w", opID, gateway.ErrNoOutcome)
}

// Resolve implements gateway.Engine as the operation workflow's resolve
// Update does: the first decision made while the workflow awaits review is
// the decision, every later one is refused with it; a running workflow
// that does not await review refuses it; a closed one is gone.
func (e *Engine) Resolve(ctx context.Context, opID string, res operation.Resolution, wait time.Duration) (operation.ResolveAnswer, error) {
	r, err := e.lookup(opID, "resolve")
	if err != nil {
		return operation.ResolveAnswer{}, err
	}
	e.mu.Lock()
	switch {
	case r.decided != nil:
		d := *r.decided
		e.mu.Unlock()
		return operation.ResolveAnswer{}, &gateway.AlreadyResolvedError{Decision: d}
	case r.closed():
		e.mu.Unlock()
		return operation.ResolveAnswer{}, fmt.Errorf("resolve %s: %w", opID, gateway.ErrNoWorkflow)
	case !r.review.waiting():
		e.mu.Unlock()
		return operation.ResolveAnswer{}, &gateway.NotAwaitingReviewError{State: operation.StateInFlight}
	}
	d := operation.OperatorDecision{Outcome: res.Outcome, Operator: res.Operator, DecidedAt: time.Now().UTC(),
		Via: operation.ViaUpdate, Note: res.Note, EvidenceURL: res.EvidenceURL}
	r.decided = &d
	r.review.decisions <- res
	e.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-r.done:
		return operation.ResolveAnswer{Result: r.res, Decision: d}, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return operation.ResolveAnswer{}, fmt.Errorf("resolve %s: %w", opID, gateway.ErrResolutionPending)
}

// closed reports whether the run's workflow has ended.
func (r *run) closed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Deliver implements gateway.Engine: the event is kept (Events) while the
// workflow runs.
func (e *Engine) Deliver(_ context.Context, opID string, ev operation.DownstreamEvent) error {
	r, err := e.lookup(opID, "signal")
	if err != nil {
		return err
	}
	if r.closed() {
		return fmt.Errorf("signal %s: %w", opID, gateway.ErrNoWorkflow)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
	return nil
}

// Timeline implements gateway.Engine: a workflow started, and completed
// once it has.
func (e *Engine) Timeline(_ context.Context, opID string) ([]operation.TimelineEntry, error) {
	r, err := e.lookup(opID, "timeline")
	if err != nil {
		return nil, err
	}
	out := []operation.TimelineEntry{{Source: "workflow", Event: "workflow_started", Detail: "started"}}
	if r.closed() {
		out = append(out, operation.TimelineEntry{At: r.res.CompletedAt, Source: "workflow", Event: "workflow_completed",
			Detail: string(r.res.State)})
	}
	return out, nil
}
