package combined

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
	"github.com/oncegate/oncegate/operation"
)

// TestDecideTakeover covers every path of Takeover: every answer of the
// truth's Get, of its Takeover where the record leads to it, and of Redis's
// Takeover where the truth leads to it.
func TestDecideTakeover(t *testing.T) {
	t.Parallel()
	p := idemstore.TakeoverParams{OperationID: "op-1", FromOwner: "gw-1", ToOwner: "gw-2"}
	truthRec := idemstore.Record{OperationID: p.OperationID, State: operation.StateInFlight, Owner: p.FromOwner}
	names := map[takeoverCall]string{takeoverAskTruthRecord: "truth.Get", takeoverAskTruth: "truth.Takeover", takeoverAskFast: "fast.Takeover"}
	paths := decidetest.Explore(t,
		func(in takeoverFacts) (takeoverCall, bool) {
			plan := decideTakeover(p, in)
			return plan.Ask, plan.Ask == takeoverDecided
		},
		func(in takeoverFacts, c takeoverCall, a answer) takeoverFacts {
			switch c {
			case takeoverAskTruthRecord:
				in.TruthRecord = a
			case takeoverAskTruth:
				in.Truth = a
			case takeoverAskFast:
				in.Fast = a
			case takeoverDecided:
			}
			return in
		},
		func(c takeoverCall) (string, []option) {
			switch c {
			case takeoverAskTruthRecord:
				return names[c], callAnswers(names[c], false, option{Name: "found", Answer: answerOf(truthRec, nil)})
			case takeoverAskFast:
				return names[c], callAnswers(names[c], true)
			case takeoverAskTruth, takeoverDecided:
			}
			return names[c], callAnswers(names[c], false)
		})

	// want is Takeover's answer: the error's whole text ("" for nil), and
	// the text of the Redis error that is only logged.
	type want struct {
		err     string
		ignored string
	}
	takenOver := want{}
	ignored := func(text string) want { return want{ignored: "fast.Takeover: " + text} }
	tests := map[string]want{
		// The truth cannot say whether it holds a record.
		"truth.Get=not owner":        {err: "truth: truth.Get: " + textNotOwner},
		"truth.Get=already terminal": {err: "truth: truth.Get: " + textTerminal},
		"truth.Get=unavailable":      {err: "truth: truth.Get: " + textUnavailable},
		"truth.Get=failed":           {err: "truth: truth.Get: " + textDiskFull},

		// The truth holds a record: it decides.
		"truth.Get=found → truth.Takeover=not found":        {err: "truth: truth.Takeover: " + textNotFound},
		"truth.Get=found → truth.Takeover=not owner":        {err: "truth: truth.Takeover: " + textNotOwner},
		"truth.Get=found → truth.Takeover=already terminal": {err: "truth: truth.Takeover: " + textTerminal},
		"truth.Get=found → truth.Takeover=unavailable":      {err: "truth: truth.Takeover: " + textUnavailable},
		"truth.Get=found → truth.Takeover=failed":           {err: "truth: truth.Takeover: " + textDiskFull},
		// Taken over on the truth: Redis follows, or its failure is only logged.
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=ok":               takenOver,
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=skipped":          takenOver,
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=not found":        ignored(textNotFound),
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=not owner":        ignored(textNotOwner),
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=already terminal": ignored(textTerminal),
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=unavailable":      ignored(textUnavailable),
		"truth.Get=found → truth.Takeover=ok → fast.Takeover=failed":           ignored(textDiskFull),

		// The truth has no record: Redis decides; degraded, nobody can.
		"truth.Get=not found → fast.Takeover=ok":               takenOver,
		"truth.Get=not found → fast.Takeover=skipped":          {err: "takeover op-1: " + textNotOwner},
		"truth.Get=not found → fast.Takeover=not found":        {err: "fast path: fast.Takeover: " + textNotFound},
		"truth.Get=not found → fast.Takeover=not owner":        {err: "fast path: fast.Takeover: " + textNotOwner},
		"truth.Get=not found → fast.Takeover=already terminal": {err: "fast path: fast.Takeover: " + textTerminal},
		"truth.Get=not found → fast.Takeover=unavailable":      {err: "fast path: fast.Takeover: " + textUnavailable},
		"truth.Get=not found → fast.Takeover=failed":           {err: "fast path: fast.Takeover: " + textDiskFull},
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, in := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			plan := decideTakeover(p, in)
			require.Equal(t, takeoverDecided, plan.Ask)
			if w.ignored == "" {
				assert.NoError(t, plan.Ignored, "nothing ignored")
			} else {
				assert.Same(t, in.Fast.Err, plan.Ignored, "Redis's own error is logged")
				assert.EqualError(t, plan.Ignored, w.ignored)
			}
			switch {
			case w.err == "":
				assert.NoError(t, plan.Err)
			case key == "truth.Get=not found → fast.Takeover=skipped":
				require.EqualError(t, plan.Err, w.err)
				assert.ErrorIs(t, plan.Err, idemstore.ErrNotOwner)
			default:
				require.EqualError(t, plan.Err, w.err)
				assert.True(t, wraps(plan.Err, in.TruthRecord, in.Truth, in.Fast), "the backend's error stays in the chain")
			}
		})
	}
}
