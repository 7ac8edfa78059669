package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/operation"
)

// TestSignalVerdicts: each resolve signal of a timeline is marked with
// what the workflow made of it, by its ordinal; other entries stay.
func TestSignalVerdicts(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	entries := func(closed bool, signals int) []operation.TimelineEntry {
		out := []operation.TimelineEntry{{At: at, Source: "workflow", Event: "workflow_started", Detail: "started"}}
		for n := 1; n <= signals; n++ {
			out = append(out, operation.TimelineEntry{At: at, Source: "workflow", Event: "signal", Detail: "signal resolve: x", ResolveSignal: n})
		}
		out = append(out, operation.TimelineEntry{At: at, Source: "workflow", Event: "signal", Detail: "signal downstream_state: y"})
		if closed {
			out = append(out, operation.TimelineEntry{At: at, Source: "workflow", Event: "workflow_completed", Detail: "done"})
		}
		return out
	}
	decided := func(signal int) *operation.OperatorDecision {
		return &operation.OperatorDecision{Outcome: "failed", Operator: "bob", Via: operation.ViaSignal, Signal: signal}
	}
	refused := func(signal int, msg string) RefusedResolution {
		return RefusedResolution{Via: operation.ViaSignal, Signal: signal, Why: ErrTypeAlreadyResolved, Message: msg}
	}
	for _, tc := range []struct {
		name    string
		closed  bool
		signals int
		view    *StateView
		want    []string // events of the resolve signals, in order
		detail  []string // a part of each one's detail
	}{
		{"first accepted, second refused", true, 2,
			&StateView{Decision: decided(1), Refused: []RefusedResolution{refused(2, "already resolved: bob decided failed")}, ResolveSignals: 2},
			[]string{EventSignalAccepted, EventSignalRefused}, []string{"accepted", "refused, changed nothing: already resolved: bob decided failed"}},
		{"refused while in flight, then accepted", false, 2,
			&StateView{Decision: decided(2), Refused: []RefusedResolution{refused(1, "not awaiting review: the operation is IN_FLIGHT")}, ResolveSignals: 2},
			[]string{EventSignalRefused, EventSignalAccepted}, []string{"not awaiting review", "accepted"}},
		{"decided by Update: every signal refused", true, 1,
			&StateView{Decision: &operation.OperatorDecision{Via: operation.ViaUpdate}, Refused: []RefusedResolution{refused(1, "already resolved")}, ResolveSignals: 1},
			[]string{EventSignalRefused}, []string{"already resolved"}},
		{"refusal no longer listed", true, 2,
			&StateView{Decision: decided(2), ResolveSignals: 2},
			[]string{EventSignalRefused, EventSignalAccepted}, []string{"refused, changed nothing", "accepted"}},
		{"not handled yet", false, 2,
			&StateView{Decision: decided(1), ResolveSignals: 1},
			[]string{EventSignalAccepted, EventSignalPending}, []string{"accepted", "not handled by the workflow yet"}},
		{"never handled, closed", true, 2,
			&StateView{Decision: decided(1), ResolveSignals: 1},
			[]string{EventSignalAccepted, EventSignalRefused}, []string{"accepted", "the workflow closed first"}},
		{"no view", true, 1, nil, []string{"signal"}, []string{"unknown, the state query failed: boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := entries(tc.closed, tc.signals)
			got := SignalVerdicts(in, tc.view, errors.New("boom"))
			var events []string
			var details []string
			for _, e := range got {
				if e.ResolveSignal > 0 {
					events = append(events, e.Event)
					details = append(details, e.Detail)
				}
			}
			assert.Equal(t, tc.want, events)
			for i, d := range tc.detail {
				assert.Contains(t, details[i], d)
			}
			assert.Equal(t, "signal", got[len(got)-1-boolInt(tc.closed)].Event, "a downstream_state signal is not judged")
			assert.Equal(t, "signal", in[1].Event, "the input is not changed")
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
