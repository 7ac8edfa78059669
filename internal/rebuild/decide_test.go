package rebuild

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/idemstore"
)

// TestDecide: every workflow state against every truth the restore can
// leave (none, each state; a terminal one with the workflow's outcome or
// another).
func TestDecide(t *testing.T) {
	t.Parallel()
	done := Workflow{State: idemstore.StateDone, Final: idemstore.Final{State: idemstore.StateDone, ResultRef: "tr_1"}}
	failed := Workflow{State: idemstore.StateFailed, Final: idemstore.Final{State: idemstore.StateFailed, FailureKind: idemstore.FailureRefused}}
	running := Workflow{State: idemstore.StateInFlight}
	review := Workflow{State: idemstore.StateNeedsReview}
	closed := Workflow{} // failed, terminated or timed out: no outcome
	rec := func(state idemstore.State, ref string) Truth {
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
		{"closed without outcome, in flight", closed, rec(idemstore.StateInFlight, ""), ActionNoOutcome},

		{"done, in flight at the backup", done, rec(idemstore.StateInFlight, ""), ActionFinalize},
		{"failed, in flight at the backup", failed, rec(idemstore.StateInFlight, ""), ActionFinalize},
		{"done, in review at the backup", done, rec(idemstore.StateNeedsReview, ""), ActionFinalize},
		{"failed, in review at the backup", failed, rec(idemstore.StateNeedsReview, ""), ActionFinalize},
		{"in review, in flight at the backup", review, rec(idemstore.StateInFlight, ""), ActionMarkReview},
		{"running, in flight", running, rec(idemstore.StateInFlight, ""), ActionNone},
		{"running, in review (never moved back)", running, rec(idemstore.StateNeedsReview, ""), ActionNone},
		{"in review, in review", review, rec(idemstore.StateNeedsReview, ""), ActionNone},

		{"done, the same done", done, rec(idemstore.StateDone, "tr_1"), ActionNone},
		{"failed, the same failed", failed, rec(idemstore.StateFailed, ""), ActionNone},
		{"running, finalized (closing)", running, rec(idemstore.StateDone, "tr_1"), ActionNone},
		{"in review, finalized (closing)", review, rec(idemstore.StateFailed, ""), ActionNone},
		{"done, another reference", done, rec(idemstore.StateDone, "tr_2"), ActionConflict},
		{"done, failed in the truth", done, rec(idemstore.StateFailed, ""), ActionConflict},
		{"failed, done in the truth", failed, rec(idemstore.StateDone, "tr_1"), ActionConflict},
		{"done, a state the truth never holds", done, rec("GONE", ""), ActionConflict},
	} {
		assert.Equal(t, tc.want, Decide(tc.w, tc.truth), tc.name)
	}
}
