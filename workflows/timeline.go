package workflows

import (
	"fmt"
	"slices"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/oncegate/oncegate/operation"
)

// Events of resolve signals in a timeline, once SignalVerdicts judged them.
const (
	// EventSignalAccepted is the resolve signal whose decision counts.
	EventSignalAccepted = "signal_accepted"
	// EventSignalRefused is a resolve signal the workflow refused: it
	// changed nothing.
	EventSignalRefused = "signal_refused"
	// EventSignalPending is a resolve signal the workflow has not handled yet.
	EventSignalPending = "signal_pending"
)

// closingEvents are the timeline events that end a workflow.
var closingEvents = map[string]bool{
	"workflow_completed": true, "workflow_failed": true, "workflow_terminated": true, "workflow_canceled": true,
}

// SignalVerdicts marks each resolve signal of entries (from
// HistoryTimeline) with what the workflow made of it, read from its state
// query's view: the signal whose ordinal the decision carries is
// accepted, one listed under Refused is refused (with the reason), one
// beyond the signals the workflow handled is pending (refused when the
// workflow has closed: it never will be handled); a handled signal no
// longer listed (Refused keeps the latest few) is refused too, since only
// one decision is ever accepted. With no view (the query failed: queryErr)
// every resolve signal says that its verdict is unknown. Other entries
// are returned unchanged.
func SignalVerdicts(entries []operation.TimelineEntry, view *StateView, queryErr error) []operation.TimelineEntry {
	out := make([]operation.TimelineEntry, len(entries))
	copy(out, entries)
	closed := slices.ContainsFunc(out, func(e operation.TimelineEntry) bool { return closingEvents[e.Event] })
	for i, e := range out {
		n := e.ResolveSignal
		if n == 0 {
			continue
		}
		switch {
		case view == nil:
			out[i].Detail += fmt.Sprintf(" (accepted or refused: unknown, the state query failed: %v)", queryErr)
		case view.Decision != nil && view.Decision.Signal == n:
			out[i].Event = EventSignalAccepted
			out[i].Detail += " — accepted: this decision counts"
		case n > view.ResolveSignals && closed:
			out[i].Event = EventSignalRefused
			out[i].Detail += " — never handled: the workflow closed first, so it changed nothing"
		case n > view.ResolveSignals:
			out[i].Event = EventSignalPending
			out[i].Detail += " — not handled by the workflow yet"
		default:
			out[i].Event = EventSignalRefused
			out[i].Detail += " — refused, changed nothing"
			for _, r := range view.Refused {
				if r.Signal == n {
					out[i].Detail += ": " + r.Message
				}
			}
		}
	}
	return out
}

// HistoryTimeline reads the steps an operator needs from an operation
// workflow's history: started, each activity attempt's end (with the
// downstream's and the status endpoint's answers), signals and Updates
// (decisions), and how the workflow closed. Timers and bookkeeping events
// are left out. A history cannot tell whether a resolve signal was the
// decision or refused; SignalVerdicts marks them from the state query.
func HistoryTimeline(events []*historypb.HistoryEvent) []operation.TimelineEntry {
	dc := converter.GetDefaultDataConverter()
	scheduled := map[int64]string{}
	attempts := map[int64]int32{}
	var out []operation.TimelineEntry
	add := func(ev *historypb.HistoryEvent, event, detail string) {
		out = append(out, operation.TimelineEntry{At: ev.GetEventTime().AsTime(), Source: "workflow", Event: event, Detail: detail})
	}
	resolveSignals := 0
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			add(ev, "workflow_started", "workflow "+ev.GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()+" started")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			attempts[a.GetScheduledEventId()] = a.GetAttempt()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := ev.GetActivityTaskCompletedEventAttributes()
			name := scheduled[a.GetScheduledEventId()]
			add(ev, "activity_completed", fmt.Sprintf("%s attempt %d: %s", name, attempts[a.GetScheduledEventId()],
				activityAnswer(dc, name, a.GetResult())))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := ev.GetActivityTaskFailedEventAttributes()
			add(ev, "activity_failed", fmt.Sprintf("%s attempt %d failed: %s", scheduled[a.GetScheduledEventId()],
				attempts[a.GetScheduledEventId()], a.GetFailure().GetMessage()))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			a := ev.GetActivityTaskTimedOutEventAttributes()
			add(ev, "activity_timed_out", fmt.Sprintf("%s attempt %d timed out: %s", scheduled[a.GetScheduledEventId()],
				attempts[a.GetScheduledEventId()], a.GetFailure().GetMessage()))
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			add(ev, "signal", fmt.Sprintf("signal %s: %s", a.GetSignalName(), resolutionText(dc, a.GetInput())))
			if a.GetSignalName() == SignalResolve {
				resolveSignals++
				out[len(out)-1].ResolveSignal = resolveSignals
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes()
			req := a.GetAcceptedRequest()
			add(ev, "update_accepted", fmt.Sprintf("update %s: %s", req.GetInput().GetName(), resolutionText(dc, req.GetInput().GetArgs())))
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			a := ev.GetWorkflowExecutionUpdateCompletedEventAttributes()
			detail := "answered the final state"
			if f := a.GetOutcome().GetFailure(); f != nil {
				detail = "refused: " + f.GetMessage()
			}
			add(ev, "update_completed", detail)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			var res operation.Final
			detail := "workflow completed"
			if err := dc.FromPayloads(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &res); err == nil {
				detail = "workflow completed: " + string(res.State)
				if res.ResultRef != "" {
					detail += " " + res.ResultRef
				}
				if res.Reason != "" {
					detail += ": " + res.Reason
				}
			}
			add(ev, "workflow_completed", detail)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			add(ev, "workflow_failed", ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
			add(ev, "workflow_terminated", ev.GetWorkflowExecutionTerminatedEventAttributes().GetReason())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			add(ev, "workflow_canceled", "workflow canceled")
		}
	}
	return out
}

// activityAnswer describes an activity's result: the downstream's answer
// for Execute, the status endpoint's for Reconcile.
func activityAnswer(dc converter.DataConverter, name string, p *commonpb.Payloads) string {
	switch name {
	case ActivityExecute:
		var r operation.ExecuteResult
		if err := dc.FromPayloads(p, &r); err == nil {
			return fmt.Sprintf("the downstream answered HTTP %d %s", r.StatusCode, r.ResultRef)
		}
	case ActivityReconcile:
		var r operation.ReconcileResult
		if err := dc.FromPayloads(p, &r); err == nil {
			if r.Found {
				return "the status endpoint has it: " + r.ResultRef
			}
			return "the status endpoint has no record of it"
		}
	case ActivityClaimTruth:
		var r operation.ClaimResult
		if err := dc.FromPayloads(p, &r); err == nil {
			return "the truth holds it " + string(r.State)
		}
	}
	return "done"
}

// resolutionText describes a resolve signal's or Update's payload.
func resolutionText(dc converter.DataConverter, p *commonpb.Payloads) string {
	var r operation.Resolution
	if err := dc.FromPayloads(p, &r); err != nil {
		return "undecodable payload"
	}
	s := fmt.Sprintf("%s by %q", r.Outcome, r.Operator)
	if r.Reason != "" {
		s += ", reason " + r.Reason
	}
	if r.Note != "" {
		s += ", note " + r.Note
	}
	if r.EvidenceURL != "" {
		s += ", evidence " + r.EvidenceURL
	}
	return s
}
