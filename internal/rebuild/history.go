package rebuild

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// history is what an operation's workflow history says: its input, the
// owner of its truth claim, why it waits for a person, and its outcome.
type history struct {
	// input is the workflow's input (the gateway's start), resolved as
	// today's code reads it (its Ownership from the fields of an older
	// input).
	input operation.Input
	// claimOwner is the owner the ClaimTruth activity returned (empty when
	// the gateway's claim was the workflow's: input.Owner).
	claimOwner string
	// review says the workflow marked the operation for review (or found
	// it so), with reviewReason.
	review       bool
	reviewReason string
	// final is a completed workflow's outcome; completed says there is one.
	final     operation.Final
	completed bool
}

// owner is the owner the workflow finalizes the truth as: the owner its
// ClaimTruth found, else its input's (operation.Ownership).
func (h history) owner() string {
	if h.claimOwner != "" {
		return h.claimOwner
	}
	return h.input.Ownership.Owner()
}

// readHistory reads the history of the workflow id/runID.
func readHistory(ctx context.Context, tc Temporal, id, runID string) (history, error) {
	var h history
	dc := converter.GetDefaultDataConverter()
	decode := func(p *commonpb.Payloads, into any) error {
		if p == nil {
			return nil
		}
		return dc.FromPayloads(p, into)
	}
	type scheduled struct {
		activity string
		input    *commonpb.Payloads
	}
	activities := map[int64]scheduled{}
	started := false
	it := tc.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return h, fmt.Errorf("history of %s: %w", id, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			var in operation.Input
			if err := decode(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
				return h, fmt.Errorf("history of %s: its input: %w", id, err)
			}
			resolved, err := in.Resolved(catalog.PlanOf)
			if err != nil {
				return h, fmt.Errorf("history of %s: its input: %w", id, err)
			}
			h.input, started = resolved, true
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			activities[ev.GetEventId()] = scheduled{activity: a.GetActivityType().GetName(), input: a.GetInput()}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := ev.GetActivityTaskCompletedEventAttributes()
			s := activities[a.GetScheduledEventId()]
			switch s.activity {
			case workflows.ActivityClaimTruth:
				var claim operation.ClaimResult
				if err := decode(a.GetResult(), &claim); err != nil {
					return h, fmt.Errorf("history of %s: its claim: %w", id, err)
				}
				h.claimOwner = claim.Owner
				if claim.State == operation.StateNeedsReview {
					h.review, h.reviewReason = true, claim.Reason
				}
			case workflows.ActivityMarkNeedsReview:
				var in operation.MarkNeedsReviewInput
				if err := decode(s.input, &in); err != nil {
					return h, fmt.Errorf("history of %s: its review: %w", id, err)
				}
				h.review, h.reviewReason = true, in.Reason
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			if err := decode(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &h.final); err != nil {
				return h, fmt.Errorf("history of %s: its outcome: %w", id, err)
			}
			h.completed = true
		default:
		}
	}
	if !started {
		return h, fmt.Errorf("history of %s: no start event", id)
	}
	return h, nil
}

// workflowOf is the Workflow Decide reads, from the execution's status and
// its history.
func workflowOf(status enumspb.WorkflowExecutionStatus, h history) Workflow {
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		if h.review {
			return Workflow{State: operation.StateNeedsReview}
		}
		return Workflow{State: operation.StateInFlight}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if h.completed && h.final.State.Terminal() {
			return Workflow{State: h.final.State, Final: h.final}
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
	}
	return Workflow{}
}
