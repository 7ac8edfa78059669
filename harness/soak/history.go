package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oncegate/oncegate/harness/history"
)

// historyOf is every confirm and status answer the agents received, as
// history events (a preview says nothing of an operation's state; a
// request without an answer has no output to check).
func historyOf(ops []*opRecord) []history.Event {
	var out []history.Event
	for _, op := range ops {
		for _, s := range op.Answers {
			if s.Request == "preview" {
				continue
			}
			out = append(out, history.Event{Op: op.ID, Client: s.Agent, Kind: s.Request, Call: s.Sent.UnixNano(), Return: s.At.UnixNano(),
				Status: s.Status, ResultRef: s.ResultRef, FailureKind: s.FailureKind})
		}
	}
	return out
}

// checkHistory judges every operation's history — the agents' answers,
// the simulator's executions and the truth's final record — with
// porcupine against harness/history's model, beside the audit's own
// checks; each operation that is not linearizable is a violation that
// prints its history and the seed that replays the run. With dir set, the
// visualization is written there.
func (a *auditor) checkHistory(led *ledger, r *Report, dir string) error {
	ctx := context.Background()
	ops := led.snapshot()
	ids := make([]string, 0, len(ops))
	for _, op := range ops {
		ids = append(ids, op.ID)
	}
	events := historyOf(ops)
	execs, err := history.Executions(ctx, a.sim, ids)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	finals, err := history.Finals(ctx, a.pool, ids, time.Now())
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	events = append(append(events, execs...), finals...)
	res := history.Check(events, 0)
	r.History = HistorySummary{Operations: res.Operations, Events: res.Events, Answers: len(events) - len(execs) - len(finals),
		Executions: len(execs), Linearizable: res.Ok()}
	if res.Unknown {
		r.Violations = append(r.Violations, violation("", checkHistory, "porcupine could not decide within %s", history.DefaultTimeout))
	}
	for _, id := range res.Illegal {
		r.Violations = append(r.Violations, violation(id, checkHistory,
			"the answers, executions and final record are not linearizable (replay: %s):\n%s", r.Replay, res.Describe(id)))
	}
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("soak-%d-history.html", r.Seed))
	if err := res.Visualize(path); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	r.History.Visualization = path
	return nil
}
