package benche2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counts returns a now function that answers each of seq in turn (the
// last one again after that) and counts its calls.
func counts(seq ...closedOperations) (func(context.Context) (closedOperations, error), *int) {
	calls := 0
	return func(context.Context) (closedOperations, error) {
		i := min(calls, len(seq)-1)
		calls++
		return seq[i], nil
	}, &calls
}

func TestSettleWaitsForThePhasesWorkflowsAndCountsTheirCompletions(t *testing.T) {
	mark := closedOperations{closed: 100, completed: 90}
	now, calls := counts(
		closedOperations{closed: 100, completed: 90},
		closedOperations{closed: 103, completed: 93},
		closedOperations{closed: 105, completed: 94},
		closedOperations{closed: 106, completed: 94},
	)
	got, err := settleFrom(context.Background(), now, mark, 5, time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 4, got, "completions since the mark, when the fifth workflow closed")
	assert.Equal(t, 3, *calls, "it stops asking once n have closed")
}

func TestSettleAnswersAtOnceWhenEveryWorkflowHadClosed(t *testing.T) {
	now, calls := counts(closedOperations{closed: 12, completed: 11})
	got, err := settleFrom(context.Background(), now, closedOperations{closed: 2, completed: 2}, 10, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 9, got)
	assert.Equal(t, 1, *calls)
}

func TestSettleGivesUpWhenItsTimeRunsOut(t *testing.T) {
	now, _ := counts(closedOperations{closed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := settleFrom(ctx, now, closedOperations{}, 4, time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "3 of the phase's 4 workflows closed")
}

func TestSettlePassesOnVisibilitysError(t *testing.T) {
	boom := errors.New("visibility unavailable")
	_, err := settleFrom(context.Background(), func(context.Context) (closedOperations, error) {
		return closedOperations{}, boom
	}, closedOperations{}, 1, time.Millisecond)
	require.ErrorIs(t, err, boom)
}
