package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// DefaultTimeout bounds one Check: porcupine's search is exponential in
// the concurrent events of one operation (a handful here), so it ends far
// sooner; past it the result is Unknown, which Check reports, never as a pass.
const DefaultTimeout = 2 * time.Minute

// Result is what Check found.
type Result struct {
	// Operations is how many operations were checked.
	Operations int
	// Events is how many events were checked.
	Events int
	// Illegal lists the operations whose history is not linearizable,
	// sorted.
	Illegal []string
	// Unknown is true when the check timed out before deciding.
	Unknown bool
	// info is porcupine's, for Visualize.
	info porcupine.LinearizationInfo
	// byOp is the history of each operation, in call order.
	byOp map[string][]Event
}

// Ok reports a history that is linearizable, decided within the timeout.
func (r *Result) Ok() bool { return len(r.Illegal) == 0 && !r.Unknown }

// Check judges events against Model within timeout (0: DefaultTimeout).
// Each operation is judged alone (the model is per operation); an
// operation is illegal when its own history is not linearizable.
func Check(events []Event, timeout time.Duration) *Result {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r := &Result{byOp: map[string][]Event{}}
	ops := make([]porcupine.Operation, 0, len(events))
	for _, e := range events {
		ops = append(ops, porcupine.Operation{ClientId: e.Client, Input: e, Call: e.Call, Return: max(e.Return, e.Call)})
		r.byOp[e.Op] = append(r.byOp[e.Op], e)
	}
	for _, h := range r.byOp {
		slices.SortStableFunc(h, func(a, b Event) int { return cmp.Compare(a.Call, b.Call) })
	}
	r.Operations, r.Events = len(r.byOp), len(events)
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	r.info = info
	r.Unknown = res == porcupine.Unknown
	if res == porcupine.Illegal {
		// Judge each operation alone to name the illegal ones (the
		// verbose result says only that some partition is).
		var mu sync.Mutex
		var wg sync.WaitGroup
		for id, h := range r.byOp {
			wg.Go(func() {
				if !legal(h, timeout) {
					mu.Lock()
					r.Illegal = append(r.Illegal, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(r.Illegal)
	}
	return r
}

// legal reports whether one operation's history is linearizable.
func legal(h []Event, timeout time.Duration) bool {
	ops := make([]porcupine.Operation, 0, len(h))
	for _, e := range h {
		ops = append(ops, porcupine.Operation{ClientId: e.Client, Input: e, Call: e.Call, Return: max(e.Return, e.Call)})
	}
	return porcupine.CheckOperationsTimeout(Model, ops, timeout) != porcupine.Illegal
}

// Describe prints op's history, one event a line with its times relative
// to the first call, as a violation's report shows it.
func (r *Result) Describe(op string) string {
	h := r.byOp[op]
	if len(h) == 0 {
		return "(no events)"
	}
	t0 := h[0].Call
	var b strings.Builder
	for _, e := range h {
		who := fmt.Sprintf("agent %d", e.Client)
		switch e.Client {
		case ClientDownstream:
			who = "downstream"
		case ClientAudit:
			who = "audit"
		}
		fmt.Fprintf(&b, "  [%+9.3fs … %+9.3fs] %-10s %s\n", float64(e.Call-t0)/1e9, float64(e.Return-t0)/1e9, who, e)
	}
	return b.String()
}

// Visualize writes porcupine's HTML visualization of the check (every
// operation, the illegal ones marked) to path.
func (r *Result) Visualize(path string) error {
	if err := porcupine.VisualizePath(Model, r.info, path); err != nil {
		return fmt.Errorf("history: visualize: %w", err)
	}
	return nil
}
