package workflows

import (
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// TimelineEntry is one step of an operation as an operator reads it.
type TimelineEntry struct {
	// At is when it happened.
	At time.Time `json:"at"`
	// Source is "truth" or "workflow".
	Source string `json:"source"`
	// Event names the step, such as "activity_failed".
	Event string `json:"event"`
	// Detail says what happened, in words.
	Detail string `json:"detail"`
}

// HistoryTimeline reads the steps an operator needs from an operation
// workflow's history: started, each activity attempt's end (with the
// downstream's and the status endpoint's answers), signals and Updates
// (decisions), and how the workflow closed. Timers and bookkeeping events
// are left out.
func HistoryTimeline(events []*historypb.HistoryEvent) []TimelineEntry {
	dc := converter.GetDefaultDataConverter()
	scheduled := map[int64]string{}
	attempts := map[int64]int32{}
	var out []TimelineEntry
	add := func(ev *historypb.HistoryEvent, event, detail string) {
		out = append(out, TimelineEntry{At: ev.GetEventTime().AsTime(), Source: "workflow", Event: event, Detail: detail})
	}
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
			var res idemstore.Final
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
	var r Resolution
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
