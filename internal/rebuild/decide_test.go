package rebuild

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// TestDecide: every workflow state against every truth the restore can
// leave (none, each state; a terminal one with the workflow's outcome or
// another).
func TestDecide(t *testing.T) {
	t.Parallel()
	done := Workflow{State: operation.StateDone, Final: operation.Final{State: operation.StateDone, ResultRef: "tr_1"}}
	failed := Workflow{State: operation.StateFailed, Final: operation.Final{State: operation.StateFailed, FailureKind: operation.FailureRefused}}
	running := Workflow{State: operation.StateInFlight}
	review := Workflow{State: operation.StateNeedsReview}
	closed := Workflow{} // failed, terminated or timed out: no outcome
	rec := func(state operation.State, ref string) Truth {
		return Truth{Found: true, Record: idemstore.Record{State: state, ResultRef: ref}}
	}
	for _, tc := range []struct {
		name  string
		w     Workflow
		truth Truth
		want  Action
	}{
		{"done, lost", done, Truth{}, ActionInsert},
		{"failed, lost", failed, Truth{}, ActionInsert},
		{"running, lost", running, Truth{}, ActionInsert},
		{"in review, lost", review, Truth{}, ActionInsert},
		{"closed without outcome, lost", closed, Truth{}, ActionNoOutcome},
		{"closed without outcome, in flight", closed, rec(operation.StateInFlight, ""), ActionNoOutcome},

		{"done, in flight at the backup", done, rec(operation.StateInFlight, ""), ActionFinalize},
		{"failed, in flight at the backup", failed, rec(operation.StateInFlight, ""), ActionFinalize},
		{"done, in review at the backup", done, rec(operation.StateNeedsReview, ""), ActionFinalize},
		{"failed, in review at the backup", failed, rec(operation.StateNeedsReview, ""), ActionFinalize},
		{"in review, in flight at the backup", review, rec(operation.StateInFlight, ""), ActionMarkReview},
		{"running, in flight", running, rec(operation.StateInFlight, ""), ActionNone},
		{"running, in review (never moved back)", running, rec(operation.StateNeedsReview, ""), ActionNone},
		{"in review, in review", review, rec(operation.StateNeedsReview, ""), ActionNone},

		{"done, the same done", done, rec(operation.StateDone, "tr_1"), ActionNone},
		{"failed, the same failed", failed, rec(operation.StateFailed, ""), ActionNone},
		{"running, finalized (closing)", running, rec(operation.StateDone, "tr_1"), ActionNone},
		{"in review, finalized (closing)", review, rec(operation.StateFailed, ""), ActionNone},
		{"done, another reference", done, rec(operation.StateDone, "tr_2"), ActionConflict},
		{"done, failed in the truth", done, rec(operation.StateFailed, ""), ActionConflict},
		{"failed, done in the truth", failed, rec(operation.StateDone, "tr_1"), ActionConflict},
		{"done, a state the truth never holds", done, rec("GONE", ""), ActionConflict},
	} {
		assert.Equal(t, tc.want, Decide(tc.w, tc.truth), tc.name)
	}
}
