package combined

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// TestOutcomeOfFast: only a terminal record Redis answered is a status's
// answer on its own; every other answer of Redis leads to Get.
func TestOutcomeOfFast(t *testing.T) {
	t.Parallel()
	rec := func(st operation.State) idemstore.Record { return idemstore.Record{OperationID: "op-1", State: st} }
	for name, tc := range map[string]struct {
		fast  answer
		final bool
	}{
		"DONE":         {fast: answerOf(rec(operation.StateDone), nil), final: true},
		"FAILED":       {fast: answerOf(rec(operation.StateFailed), nil), final: true},
		"IN_FLIGHT":    {fast: answerOf(rec(operation.StateInFlight), nil)},
		"NEEDS_REVIEW": {fast: answerOf(rec(operation.StateNeedsReview), nil)},
		"not found":    {fast: answerOf(idemstore.Record{}, idemstore.ErrNotFound)},
		"unavailable":  {fast: answerOf(idemstore.Record{}, idemstore.ErrUnavailable)},
		"failed":       {fast: answerOf(idemstore.Record{}, errors.New("disk full"))},
		"skipped":      {fast: answer{Reply: replySkipped}},
	} {
		t.Run(name, func(t *testing.T) {
			got, final := outcomeOfFast(tc.fast)
			assert.Equal(t, tc.final, final)
			if final {
				assert.Equal(t, tc.fast.Record, got)
			}
		})
	}
}
