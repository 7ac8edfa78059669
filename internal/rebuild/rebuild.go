package rebuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// Temporal is what the rebuild asks Temporal (a client.Client).
type Temporal interface {
	// ListWorkflow lists workflow executions by a visibility query.
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	// GetWorkflowHistory iterates over a workflow's events.
	GetWorkflowHistory(ctx context.Context, workflowID string, runID string, isLongPoll bool,
		filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator
}

// TruthStore is the restored truth the rebuild reads and writes (a
// *pgstore.Store).
type TruthStore interface {
	// Get reads an operation's record; idemstore.ErrNotFound when none.
	Get(ctx context.Context, opID string) (idemstore.Record, error)
	// Acquire claims an operation (inserts its record IN_FLIGHT).
	Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error)
	// MarkNeedsReview moves an IN_FLIGHT record to NEEDS_REVIEW.
	MarkNeedsReview(ctx context.Context, p idemstore.MarkNeedsReviewParams) error
	// Finalize records a terminal outcome, owner-checked.
	Finalize(ctx context.Context, f idemstore.Finalization) error
}

// Options are a run's options.
type Options struct {
	// Since is the time the backup was taken: the workflows read are those
	// still running and those closed at or after it.
	Since time.Time
	// Namespace is the Temporal namespace of the workflows.
	Namespace string
	// DryRun decides and reports without writing.
	DryRun bool
	// Logger receives one line per operation written or reported.
	Logger *slog.Logger
}

// Item is one operation the report names.
type Item struct {
	// OperationID is the operation (its workflow's ID).
	OperationID string `json:"operation_id"`
	// Action is what the rebuild decided.
	Action Action `json:"action"`
	// Detail says what the workflow and the truth hold.
	Detail string `json:"detail"`
}

// Report is what a run read and did.
type Report struct {
	// Workflows is the number of workflows read.
	Workflows int `json:"workflows"`
	// Actions counts the decisions by action.
	Actions map[Action]int `json:"actions"`
	// Attention lists the conflicts and the workflows closed without an
	// outcome: a person looks at them.
	Attention []Item `json:"attention"`
}

// Query is the visibility query of the workflows a run reads.
func Query(since time.Time) string {
	return fmt.Sprintf("WorkflowType = '%s' AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')",
		workflows.OperationWorkflowName, since.UTC().Format(time.RFC3339))
}

// Run reads every operation workflow still running or closed since
// o.Since, decides for each (Decide) against the truth and acts; it stops
// at the first error of Temporal or the truth (running it again is safe:
// what was written already decides ActionNone).
func Run(ctx context.Context, tc Temporal, truth TruthStore, o Options) (Report, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := Report{Actions: map[Action]int{}, Attention: []Item{}}
	req := &workflowservice.ListWorkflowExecutionsRequest{Namespace: o.Namespace, Query: Query(o.Since), PageSize: 200}
	for {
		page, err := tc.ListWorkflow(ctx, req)
		if err != nil {
			return r, fmt.Errorf("list workflows: %w", err)
		}
		for _, ex := range page.GetExecutions() {
			id, runID := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			h, err := readHistory(ctx, tc, id, runID)
			if err != nil {
				return r, err
			}
			w := workflowOf(ex.GetStatus(), h)
			t := Truth{}
			rec, err := truth.Get(ctx, id)
			switch {
			case err == nil:
				t = Truth{Found: true, Record: rec}
			case !errors.Is(err, idemstore.ErrNotFound):
				return r, fmt.Errorf("read the truth of %s: %w", id, err)
			}
			action := Decide(w, t)
			r.Workflows++
			r.Actions[action]++
			detail := fmt.Sprintf("workflow %s (%s), truth %s", ex.GetStatus(), w.State, truthState(t))
			switch action {
			case ActionNone:
				continue
			case ActionConflict, ActionNoOutcome:
				r.Attention = append(r.Attention, Item{OperationID: id, Action: action, Detail: detail})
				log.Warn("needs a person", "operation_id", id, "action", action, "detail", detail)
				continue
			case ActionInsert, ActionFinalize, ActionMarkReview:
			}
			log.Info("rebuilt", "operation_id", id, "action", action, "detail", detail, "dry_run", o.DryRun)
			if o.DryRun {
				continue
			}
			if err := act(ctx, truth, action, id, w, h, t); err != nil {
				return r, fmt.Errorf("%s %s: %w", action, id, err)
			}
		}
		if len(page.GetNextPageToken()) == 0 {
			return r, nil
		}
		req.NextPageToken = page.GetNextPageToken()
	}
}

// truthState names the truth's state for a report.
func truthState(t Truth) string {
	if !t.Found {
		return "missing"
	}
	return string(t.Record.State)
}

// act does what action names for operation id.
func act(ctx context.Context, truth TruthStore, action Action, id string, w Workflow, h history, t Truth) error {
	in := h.input
	switch action {
	case ActionInsert:
		owner := h.owner()
		d, err := truth.Acquire(ctx, idemstore.Claim{
			OperationID: id, ParamHash: in.ParamHash, Owner: owner, Subject: in.Subject, Scope: in.Scope,
			InFlightTTL: in.InFlightTTL, TerminalTTL: in.TerminalTTL, FingerprintExp: in.FingerprintExp, BoundParams: in.BoundParams,
			ApprovalSHA256: in.ApprovalSHA256, ActingClient: in.ActingClient, Charge: reserveOnly(in.Charge),
		})
		if err != nil {
			return err
		}
		if d.Outcome != idemstore.OutcomeAcquired {
			return fmt.Errorf("the truth got a record meanwhile (%s): run the rebuild again", d.Outcome)
		}
		switch {
		case w.State == operation.StateNeedsReview:
			return truth.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: id, Reason: h.reviewReason})
		case w.State.Terminal():
			return truth.Finalize(ctx, finalization(id, owner, w.Final, in.TerminalTTL))
		}
		return nil
	case ActionFinalize:
		return truth.Finalize(ctx, finalization(id, t.Record.Owner, w.Final, in.TerminalTTL))
	case ActionMarkReview:
		return truth.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: id, Reason: h.reviewReason})
	case ActionNone, ActionConflict, ActionNoOutcome:
	}
	return nil
}

// finalization is the truth's write of the workflow's outcome f.
// reserveOnly is an operation's charge written back without its windows:
// the operation was claimed within its budgets before the truth was lost, so
// its amount is reserved again (and released by Finalize when its outcome
// proves nothing was executed) but never refused over budget now.
func reserveOnly(c *operation.Charge) *operation.Charge {
	if c == nil {
		return nil
	}
	r := *c
	r.Windows = nil
	return &r
}

func finalization(id, owner string, f operation.Final, terminalTTL time.Duration) idemstore.Finalization {
	return idemstore.Finalization{OperationID: id, Owner: owner, Final: f, TerminalTTL: terminalTTL}
}
