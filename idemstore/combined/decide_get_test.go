package combined

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
	"github.com/oncegate/oncegate/operation"
)

// TestDecideGet covers every path of Get: every answer of the truth, and
// every answer of Redis where the truth leads to it.
func TestDecideGet(t *testing.T) {
	t.Parallel()
	truthRec := idemstore.Record{OperationID: "op-1", State: operation.StateDone, Owner: "gw-1", ResultRef: "ref-truth"}
	fastRec := idemstore.Record{OperationID: "op-1", State: operation.StateInFlight, Owner: "gw-2"}
	names := map[getCall]string{getAskTruth: "truth.Get", getAskFast: "fast.Get"}
	paths := decidetest.Explore(t,
		func(in getFacts) (getCall, bool) { p := decideGet(in); return p.Ask, p.Ask == getDecided },
		func(in getFacts, c getCall, a answer) getFacts {
			switch c {
			case getAskTruth:
				in.Truth = a
			case getAskFast:
				in.Fast = a
			case getDecided:
			}
			return in
		},
		func(c getCall) (string, []option) {
			if c == getAskTruth {
				return names[c], callAnswers(names[c], false, option{Name: "found", Answer: answerOf(truthRec, nil)})
			}
			return names[c], callAnswers(names[c], true, option{Name: "found", Answer: answerOf(fastRec, nil)})
		})

	// want is Get's answer: the record, or the error's whole text.
	type want struct {
		record idemstore.Record
		err    string
	}
	truthErr := func(text string) want { return want{err: "truth: truth.Get: " + text} }
	fastErr := func(text string) want { return want{err: "fast path: fast.Get: " + text} }
	tests := map[string]want{
		// The truth holds the record, or fails in a way Redis cannot make up for.
		"truth.Get=found":            {record: truthRec},
		"truth.Get=not owner":        truthErr(textNotOwner),
		"truth.Get=already terminal": truthErr(textTerminal),
		"truth.Get=failed":           truthErr(textDiskFull),

		// The truth has no record: a claim only Redis knows, or nothing.
		"truth.Get=not found → fast.Get=found":            {record: fastRec},
		"truth.Get=not found → fast.Get=skipped":          truthErr(textNotFound),
		"truth.Get=not found → fast.Get=not found":        fastErr(textNotFound),
		"truth.Get=not found → fast.Get=not owner":        fastErr(textNotOwner),
		"truth.Get=not found → fast.Get=already terminal": fastErr(textTerminal),
		"truth.Get=not found → fast.Get=unavailable":      fastErr(textUnavailable),
		"truth.Get=not found → fast.Get=failed":           fastErr(textDiskFull),

		// The truth cannot answer: Redis's record, or an error wrapping
		// ErrUnavailable unless Redis failed otherwise.
		"truth.Get=unavailable → fast.Get=found":            {record: fastRec},
		"truth.Get=unavailable → fast.Get=skipped":          truthErr(textUnavailable),
		"truth.Get=unavailable → fast.Get=not found":        truthErr(textUnavailable),
		"truth.Get=unavailable → fast.Get=not owner":        fastErr(textNotOwner),
		"truth.Get=unavailable → fast.Get=already terminal": fastErr(textTerminal),
		"truth.Get=unavailable → fast.Get=unavailable":      fastErr(textUnavailable),
		"truth.Get=unavailable → fast.Get=failed":           fastErr(textDiskFull),
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, in := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			p := decideGet(in)
			require.Equal(t, getDecided, p.Ask)
			assert.Equal(t, w.record, p.Record)
			if w.err == "" {
				assert.NoError(t, p.Err)
				return
			}
			require.EqualError(t, p.Err, w.err)
			assert.True(t, wraps(p.Err, in.Truth, in.Fast), "the backend's error stays in the chain")
			if in.Truth.Reply == replyNotFound && in.Fast.Reply == replyUnavailable {
				assert.NotErrorIs(t, p.Err, idemstore.ErrNotFound, "a claim only Redis knows may exist")
			}
		})
	}
}

// wraps reports whether err wraps the error of one of the answers.
func wraps(err error, answers ...answer) bool {
	for _, a := range answers {
		if a.Err != nil && errors.Is(err, a.Err) {
			return true
		}
	}
	return false
}
