package benche2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// Event is one event of a workflow's history, at its offset from the start.
type Event struct {
	// Offset is the time since the workflow's first event.
	Offset time.Duration
	// Type is the event type without its EVENT_TYPE_ prefix, with the
	// activity's name for activity events.
	Type string
}

// Timeline is one workflow's history, to show where a first confirm's
// time goes inside Temporal.
type Timeline struct {
	// Name says which workflow it is.
	Name string
	// WorkflowID is the workflow's ID.
	WorkflowID string
	// Events are the history's events in order; in a Split's Timeline,
	// each at its median offset over the Shaped operations whose history
	// has the most common shape (medianEvents), then the answer.
	Events []Event
	// Shaped is how many operations Events is the median of.
	Shaped int
	// Total is the offset of the last event.
	Total time.Duration
	// WorkflowTasks and Activities count the workflow tasks and the
	// activities the history scheduled.
	WorkflowTasks, Activities int
	// Tail is the time from the last activity's completion to the last
	// event: what the workflow spends after its downstream call (its last
	// workflow task's dispatch and completion; for oncegate with the
	// IdemState update, and the finalize when Execute did not finalize).
	// Zero without an activity.
	Tail time.Duration
	// Split is the median split of every measured sequential operation of
	// the same kind.
	Split Split
}

// Split divides sequential operations' latency by their workflows'
// histories (medians over N operations): Before is from the request to the
// workflow's first event (the gateway's claim and the start call, or the
// bare client's start call), Span the workflow's own first to last event,
// After from the last event to the answer (the result's long poll; for
// oncegate's outcome feed negative: answered before the workflow's end).
type Split struct {
	// N is the number of operations.
	N int
	// Before, Span and After are the medians of the three parts.
	Before, Span, After time.Duration
	// Tail is the median of the histories' Tail (a part of Span).
	Tail time.Duration
	// AnswerAfterActivity is the median time from the last activity's
	// completion event to the answer (each operation's Tail + After).
	AnswerAfterActivity time.Duration
}

// timelines reads the histories of the measured sequential first confirms
// and bare workflows.
func (b *bench) timelines(ctx context.Context) error {
	for _, w := range []struct {
		name string
		ops  []sentOp
	}{
		{"oncegate first confirm (" + PhaseConfirmSeq + ")", b.seqConfirms},
		{"bare workflow (" + PhaseBareSeq + ")", b.seqBares},
	} {
		if len(w.ops) == 0 {
			continue
		}
		var before, span, after, tail, answer []float64
		var tl Timeline
		var histories [][]Event
		for _, op := range w.ops {
			t, start, err := b.timeline(ctx, w.name, op.id)
			if err != nil {
				return err
			}
			histories = append(histories, append(t.Events, Event{Offset: op.answered.Sub(start), Type: answerEvent}))
			before = append(before, float64(start.Sub(op.sent)))
			span = append(span, float64(t.Total))
			after = append(after, float64(op.answered.Sub(start.Add(t.Total))))
			tail = append(tail, float64(t.Tail))
			answer = append(answer, float64(t.Tail)+after[len(after)-1])
			tl = t
		}
		tl.Events, tl.Shaped = medianEvents(histories)
		tl.Total = time.Duration(Median(span))
		tl.Split = Split{N: len(w.ops), Before: time.Duration(Median(before)), Span: time.Duration(Median(span)),
			After: time.Duration(Median(after)), Tail: time.Duration(Median(tail)), AnswerAfterActivity: time.Duration(Median(answer))}
		b.res.Timelines = append(b.res.Timelines, tl)
	}
	return nil
}

// timeline reads one workflow's history and returns it with the time of
// its first event.
func (b *bench) timeline(ctx context.Context, name, id string) (Timeline, time.Time, error) {
	it := b.temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	tl := Timeline{Name: name, WorkflowID: id}
	var start time.Time
	activityNames := map[int64]string{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return Timeline{}, time.Time{}, fmt.Errorf("history of %s: %w", id, err)
		}
		at := ev.GetEventTime().AsTime()
		if start.IsZero() {
			start = at
		}
		typ := eventTypeName(ev.GetEventType())
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			tl.WorkflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			tl.Activities++
			n := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			activityNames[ev.GetEventId()] = n
			typ += " " + n
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			typ += " " + activityNames[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			typ += " " + activityNames[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]
		}
		tl.Events = append(tl.Events, Event{Offset: at.Sub(start), Type: typ})
		tl.Total = at.Sub(start)
	}
	tl.Tail = tailAfterActivity(tl.Events, tl.Total)
	return tl, start, nil
}

// activityDone is the type of an activity's completion event as Event.Type
// writes it, before the activity's name.
var activityDone = eventTypeName(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)

// eventTypeName is an event type as Event.Type writes it.
func eventTypeName(t enumspb.EventType) string {
	return strings.TrimPrefix(t.String(), "EVENT_TYPE_")
}

// tailAfterActivity is the time from the last activity's completion among
// events to total, the last event's offset; zero without one.
func tailAfterActivity(events []Event, total time.Duration) time.Duration {
	for i := len(events) - 1; i >= 0; i-- {
		if strings.HasPrefix(events[i].Type, activityDone) {
			return total - events[i].Offset
		}
	}
	return 0
}

// answerEvent is the pseudo-event of an operation's answer in a Timeline:
// when the benchmark received it, on the same machine's clock.
const answerEvent = "the answer (received by the benchmark)"

// medianEvents returns the events of the most common shape (the same event
// types in the same order) among histories, each at its median offset over
// the histories of that shape, and how many there were.
func medianEvents(histories [][]Event) ([]Event, int) {
	byShape := map[string][][]Event{}
	best := ""
	for _, h := range histories {
		types := make([]string, len(h))
		for i, e := range h {
			types[i] = e.Type
		}
		shape := strings.Join(types, "\n")
		byShape[shape] = append(byShape[shape], h)
		if len(byShape[shape]) > len(byShape[best]) {
			best = shape
		}
	}
	same := byShape[best]
	if len(same) == 0 {
		return nil, 0
	}
	out := make([]Event, len(same[0]))
	for i := range out {
		offsets := make([]float64, len(same))
		for j, h := range same {
			offsets[j] = float64(h[i].Offset)
		}
		out[i] = Event{Type: same[0][i].Type, Offset: time.Duration(Median(offsets))}
	}
	// The answer may come before the workflow's last events.
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.Offset, b.Offset) })
	return out, len(same)
}
