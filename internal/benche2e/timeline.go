package benche2e

import (
	"context"
	"fmt"
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
	// Events are the history's events in order.
	Events []Event
	// Total is the offset of the last event.
	Total time.Duration
	// WorkflowTasks and Activities count the workflow tasks and the
	// activities the history scheduled.
	WorkflowTasks, Activities int
}

// timelines reads the histories of the last sequential first confirm and
// bare workflow.
func (b *bench) timelines(ctx context.Context) error {
	for _, w := range []struct{ name, id string }{
		{"oncegate first confirm (" + PhaseConfirmSeq + ")", b.lastSeqConfirm},
		{"bare workflow (" + PhaseBareSeq + ")", b.lastSeqBare},
	} {
		if w.id == "" {
			continue
		}
		tl, err := b.timeline(ctx, w.name, w.id)
		if err != nil {
			return err
		}
		b.res.Timelines = append(b.res.Timelines, tl)
	}
	return nil
}

func (b *bench) timeline(ctx context.Context, name, id string) (Timeline, error) {
	it := b.temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	tl := Timeline{Name: name, WorkflowID: id}
	var start time.Time
	activityNames := map[int64]string{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return Timeline{}, fmt.Errorf("history of %s: %w", id, err)
		}
		at := ev.GetEventTime().AsTime()
		if start.IsZero() {
			start = at
		}
		typ := strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
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
	return tl, nil
}
