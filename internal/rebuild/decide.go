// Package rebuild writes back into a restored truth database what Temporal
// knows of the operations that ended or ran after the backup: after
// `scripts/prod.sh restore`, the truth is as old as its dump, while every
// operation's workflow (ID = operation_id) still holds its input, its
// claim and, once it ended, its outcome. For each workflow it reads, a pure
// decision (Decide) compares it with the truth's record and names what to
// do; the runner (Run) only does that. A terminal outcome already in the
// truth is never overwritten: a disagreement is reported for a person.
package rebuild

import (
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// Action is what the rebuild does for one operation.
type Action string

// Actions, as Decide names them and the report counts them.
const (
	// ActionNone: the truth already says what the workflow says.
	ActionNone Action = "none"
	// ActionInsert: the truth has no record (it was made after the
	// backup): write it from the workflow — its claim under the owner the
	// workflow finalizes as, then its review or its outcome.
	ActionInsert Action = "insert"
	// ActionFinalize: the truth holds the operation in flight or in review
	// (as the backup saw it) but the workflow has ended: record its outcome.
	ActionFinalize Action = "finalize"
	// ActionMarkReview: the truth holds the operation in flight but the
	// workflow waits for a person: mark it for review.
	ActionMarkReview Action = "mark_review"
	// ActionConflict: the truth and the workflow hold different terminal
	// outcomes. Never overwritten; reported.
	ActionConflict Action = "conflict"
	// ActionNoOutcome: the workflow closed without an outcome (failed,
	// terminated, timed out): nothing to write back; reported.
	ActionNoOutcome Action = "no_outcome"
)

// Workflow is what Temporal says of an operation: its state — IN_FLIGHT
// or NEEDS_REVIEW while it runs, DONE or FAILED once it completed, empty
// when it closed without an outcome — and, once completed, its outcome.
type Workflow struct {
	// State is the operation's state by the workflow.
	State operation.State
	// Final is the outcome of a completed workflow.
	Final operation.Final
}

// Truth is what the restored truth holds of the operation: nothing
// (Found false) or a record.
type Truth struct {
	// Found says the truth has a record.
	Found bool
	// Record is that record.
	Record idemstore.Record
}

// Decide names what the rebuild does for an operation the workflow w
// describes and the restored truth t holds.
func Decide(w Workflow, t Truth) Action {
	if w.State == "" {
		return ActionNoOutcome
	}
	if !t.Found {
		return ActionInsert
	}
	switch t.Record.State {
	case operation.StateDone, operation.StateFailed:
		if !w.State.Terminal() {
			// Finalized; the workflow is closing (it records its outcome
			// in the truth before it completes).
			return ActionNone
		}
		if w.Final.State != t.Record.State || w.Final.ResultRef != t.Record.ResultRef {
			return ActionConflict
		}
		return ActionNone
	case operation.StateInFlight:
		switch {
		case w.State.Terminal():
			return ActionFinalize
		case w.State == operation.StateNeedsReview:
			return ActionMarkReview
		}
		return ActionNone
	case operation.StateNeedsReview:
		if w.State.Terminal() {
			return ActionFinalize
		}
		return ActionNone // a review is never moved back to in flight
	}
	return ActionConflict // a state the truth never holds
}
