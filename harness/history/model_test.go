package history

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev builds an event of operation "op" between call and ret (seconds).
func ev(client int, kind, status string, call, ret int64, extra ...string) Event {
	e := Event{Op: "op", Client: client, Kind: kind, Status: status, Call: call * 1e9, Return: ret * 1e9}
	if len(extra) > 0 {
		e.ResultRef = extra[0]
	}
	if len(extra) > 1 {
		e.FailureKind = extra[1]
	}
	return e
}

func exec(at int64) Event { return ev(ClientDownstream, KindExecute, "", at, at) }

func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     []Event
		legal bool
	}{
		{"a confirm that executed and completed", []Event{
			ev(0, KindConfirm, statusInProgress, 0, 1), exec(2), ev(0, KindStatus, statusCompleted, 3, 4, "tr_1"),
			ev(0, KindConfirm, statusAlreadyCompleted, 5, 6, "tr_1"), ev(ClientAudit, KindFinal, finalDone, 9, 9, "tr_1"),
		}, true},
		{"completed concurrent with the execution linearizes after it", []Event{
			ev(0, KindConfirm, statusCompleted, 0, 3, "tr_1"), exec(2),
		}, true},
		{"in_progress concurrent with a completed answer linearizes before it", []Event{
			exec(1), ev(0, KindStatus, statusCompleted, 2, 3, "tr_1"), ev(1, KindStatus, statusInProgress, 2, 5),
		}, true},
		{"temporarily_unavailable anywhere says nothing", []Event{
			ev(0, KindConfirm, "temporarily_unavailable", 0, 1), exec(2), ev(0, KindConfirm, statusCompleted, 3, 4, "tr_1"),
			ev(0, KindConfirm, "temporarily_unavailable", 5, 6),
		}, true},
		{"a definite refusal: failed downstream_refused, never executed", []Event{
			ev(0, KindConfirm, statusFailed, 0, 1, "", "downstream_refused"), ev(0, KindConfirm, statusAlreadyFailed, 2, 3),
			ev(ClientAudit, KindFinal, finalFailed, 9, 9, "", "downstream_refused"),
		}, true},
		{"a payout the downstream recorded as failed may be refused", []Event{
			{Op: "op", Client: ClientDownstream, Kind: KindExecute, Call: 1e9, Return: 1e9, NoEffect: true},
			ev(0, KindStatus, statusFailed, 2, 3, "", "downstream_refused"),
		}, true},
		{"an operator's failure of an executed operation is the operator's word", []Event{
			exec(1), ev(0, KindStatus, statusReview, 2, 3), ev(0, KindStatus, statusFailed, 4, 5, "", "operator_decision"),
		}, true},
		{"unknown before anyone said it exists", []Event{
			ev(0, KindStatus, statusUnknown, 0, 1), ev(0, KindConfirm, statusInProgress, 2, 3),
		}, true},
		{"an unacknowledged repeat, never claimed", []Event{
			ev(0, KindConfirm, statusRepeat, 0, 1), ev(ClientAudit, KindFinal, FinalNone, 9, 9),
		}, true},

		{"completed before the single execution", []Event{
			ev(0, KindConfirm, statusCompleted, 0, 1, "tr_1"), exec(2),
		}, false},
		{"completed without any execution", []Event{
			ev(0, KindConfirm, statusCompleted, 0, 1, "tr_1"),
		}, false},
		{"not executed for one the downstream executed (after)", []Event{
			ev(0, KindConfirm, statusFailed, 0, 1, "", "not_executed"), exec(5),
		}, false},
		{"not executed for one the downstream executed (before)", []Event{
			exec(0), ev(0, KindStatus, statusFailed, 1, 2, "", "not_executed"),
		}, false},
		{"back from completed to in_progress", []Event{
			exec(0), ev(0, KindStatus, statusCompleted, 1, 2, "tr_1"), ev(0, KindStatus, statusInProgress, 3, 4),
		}, false},
		{"back from failed to in_progress", []Event{
			ev(0, KindStatus, statusFailed, 1, 2, "", "operator_decision"), ev(1, KindStatus, statusInProgress, 3, 4),
		}, false},
		{"completed, then failed", []Event{
			exec(0), ev(0, KindStatus, statusCompleted, 1, 2, "tr_1"), ev(0, KindConfirm, statusAlreadyFailed, 3, 4),
		}, false},
		{"two results", []Event{
			exec(0), ev(0, KindStatus, statusCompleted, 1, 2, "tr_1"), ev(1, KindConfirm, statusAlreadyCompleted, 3, 4, "tr_2"),
		}, false},
		{"two failure kinds", []Event{
			ev(0, KindStatus, statusFailed, 1, 2, "", "not_executed"), ev(1, KindConfirm, statusAlreadyFailed, 3, 4, "", "operator_decision"),
		}, false},
		{"unknown after it was said to exist", []Event{
			ev(0, KindConfirm, statusInProgress, 0, 1), ev(0, KindStatus, statusUnknown, 2, 3),
		}, false},
		{"executed twice", []Event{exec(0), exec(1)}, false},
		{"the truth says FAILED after an agent was told completed", []Event{
			exec(0), ev(0, KindStatus, statusCompleted, 1, 2, "tr_1"), ev(ClientAudit, KindFinal, finalFailed, 9, 9, "", "operator_decision"),
		}, false},
		{"the truth never held one that executed", []Event{
			exec(0), ev(ClientAudit, KindFinal, FinalNone, 9, 9),
		}, false},
		{"an unacknowledged repeat told after it ran", []Event{
			ev(0, KindConfirm, statusInProgress, 0, 1), ev(0, KindConfirm, statusRepeat, 2, 3),
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, 0)
			assert.False(t, r.Unknown)
			assert.Equal(t, tc.legal, r.Ok(), "history:\n%s", r.Describe("op"))
			if !tc.legal {
				assert.Equal(t, []string{"op"}, r.Illegal)
			}
		})
	}
}

// TestCheckNamesTheIllegalOperations: one broken operation among sound ones
// is named alone, its history printed, and the visualization written.
func TestCheckNamesTheIllegalOperations(t *testing.T) {
	var h []Event
	for _, id := range []string{"a", "b", "c"} {
		for _, e := range []Event{exec(1), ev(0, KindConfirm, statusCompleted, 0, 2, "tr_"+id)} {
			e.Op = id
			h = append(h, e)
		}
	}
	bad := ev(1, KindStatus, statusInProgress, 3, 4)
	bad.Op = "b"
	h = append(h, bad)
	r := Check(h, 0)
	require.False(t, r.Ok())
	assert.Equal(t, []string{"b"}, r.Illegal)
	assert.Equal(t, 3, r.Operations)
	assert.Equal(t, 7, r.Events)
	d := r.Describe("b")
	assert.Contains(t, d, "confirm → completed (tr_b)")
	assert.Contains(t, d, "status → in_progress")
	assert.Contains(t, d, "downstream executed it")
	path := filepath.Join(t.TempDir(), "history.html")
	require.NoError(t, r.Visualize(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "in_progress")
}
