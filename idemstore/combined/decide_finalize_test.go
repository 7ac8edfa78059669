package combined

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
	"github.com/oncegate/oncegate/operation"
)

// finalizeCase is the Finalization of the Finalize tables: owner me.
var finalizeCase = idemstore.Finalization{OperationID: "op-1", Owner: "gw-1:me",
	Final: operation.Final{State: operation.StateDone, ResultRef: "ref-1"}, TerminalTTL: time.Hour}

// finalizeNames names the calls of Finalize in the tables' paths.
var finalizeNames = map[finalizeCall]string{
	finalizeAskTruth:        "truth.Finalize",
	finalizeAskTruthRecord:  "truth.Get",
	finalizeAskFastClaim:    "fast.Get",
	finalizeAskClaimTruth:   "truth.Acquire",
	finalizeAskTruthAgain:   "truth.Finalize again",
	finalizeAskFast:         "fast.Finalize",
	finalizeAskRefillRecord: "truth.Get for refill",
}

// The records the backends answer in the Finalize tables.
var (
	finalizeTruthRec = idemstore.Record{OperationID: "op-1", State: operation.StateDone, Owner: "gw-2:earlier", ResultRef: "ref-truth"}
	finalizeFastMine = idemstore.Record{OperationID: "op-1", ParamHash: "hash-1", State: operation.StateInFlight, Owner: "gw-1:me",
		Subject: "agent-1", Scope: "payments.transfer", FingerprintExp: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC),
		ApprovalSHA256: "approval-1"}
)

// withFinalizeAnswer records a's answer to call c.
func withFinalizeAnswer(in finalizeFacts, c finalizeCall, a answer) finalizeFacts {
	switch c {
	case finalizeAskTruth:
		in.Truth = a
	case finalizeAskTruthRecord:
		in.TruthRecord = a
	case finalizeAskFastClaim:
		in.FastClaim = a
	case finalizeAskClaimTruth:
		in.ClaimTruth = a
	case finalizeAskTruthAgain:
		in.TruthAgain = a
	case finalizeAskFast:
		in.Fast = a
	case finalizeAskRefillRecord:
		in.RefillRecord = a
	case finalizeDecided:
	}
	return in
}

// TestDecideFinalize covers every path of Finalize: every answer of each
// call where the answers before lead to it.
func TestDecideFinalize(t *testing.T) {
	t.Parallel()
	f := finalizeCase
	another, mineDone := finalizeFastMine, finalizeFastMine
	another.Owner = "gw-3:other"
	mineDone.State = operation.StateDone
	paths := decidetest.Explore(t,
		func(in finalizeFacts) (finalizeCall, bool) {
			p := decideFinalize(f, in)
			return p.Ask, p.Ask == finalizeDecided
		},
		withFinalizeAnswer,
		func(c finalizeCall) (string, []option) {
			name := finalizeNames[c]
			switch c {
			case finalizeAskTruthRecord, finalizeAskRefillRecord:
				return name, callAnswers(name, false, option{Name: "found", Answer: answerOf(finalizeTruthRec, nil)})
			case finalizeAskFastClaim:
				return name, callAnswers(name, true, option{Name: "mine", Answer: answerOf(finalizeFastMine, nil)},
					option{Name: "another's", Answer: answerOf(another, nil)}, option{Name: "mine, done", Answer: answerOf(mineDone, nil)})
			case finalizeAskFast:
				return name, callAnswers(name, true)
			case finalizeAskTruth, finalizeAskClaimTruth, finalizeAskTruthAgain, finalizeDecided:
			}
			return name, callAnswers(name, false)
		})

	// want is Finalize's answer: the error's whole text ("" for nil; it
	// wraps the backend's error unless is names the sentinel), the refill
	// of the truth's record, and the text of the Redis error that is only
	// logged.
	type want struct {
		err     string
		is      error // the sentinel of an error Finalize makes itself
		refill  bool
		ignored string
	}
	notMine := want{err: "finalize op-1: " + textNotOwner, is: idemstore.ErrNotOwner}
	tests := map[string]want{
		// The truth refuses the outcome.
		"truth.Finalize=not found":        {err: "truth: truth.Finalize: " + textNotFound},
		"truth.Finalize=already terminal": {err: "truth: truth.Finalize: " + textTerminal},
		"truth.Finalize=unavailable":      {err: "truth: truth.Finalize: " + textUnavailable},
		"truth.Finalize=failed":           {err: "truth: truth.Finalize: " + textDiskFull},

		// Not the truth's owner: another owner's record, or none.
		"truth.Finalize=not owner → truth.Get=found":            {err: "truth: truth.Finalize: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=not owner":        {err: "truth: truth.Get: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=already terminal": {err: "truth: truth.Get: " + textTerminal},
		"truth.Finalize=not owner → truth.Get=unavailable":      {err: "truth: truth.Get: " + textUnavailable},
		"truth.Finalize=not owner → truth.Get=failed":           {err: "truth: truth.Get: " + textDiskFull},

		// The truth has no record: Redis's claim, if it is mine, is claimed on the truth.
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=skipped":          {err: "truth: truth.Finalize: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=not found":        {err: "truth: truth.Finalize: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=unavailable":      {err: "truth: truth.Finalize: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=not owner":        {err: "fast path: fast.Get: " + textNotOwner},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=already terminal": {err: "fast path: fast.Get: " + textTerminal},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=failed":           {err: "fast path: fast.Get: " + textDiskFull},
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=another's":        notMine,
		"truth.Finalize=not owner → truth.Get=not found → fast.Get=mine, done":       notMine,
	}
	const claimed = "truth.Finalize=not owner → truth.Get=not found → fast.Get=mine"
	for _, e := range []struct{ name, text string }{
		{"not found", textNotFound}, {"not owner", textNotOwner}, {"already terminal", textTerminal},
		{"unavailable", textUnavailable}, {"failed", textDiskFull},
	} {
		tests[claimed+" → truth.Acquire="+e.name] = want{err: "truth: truth.Acquire: " + e.text}
		tests[claimed+" → truth.Acquire=ok → truth.Finalize again="+e.name] = want{err: "truth: truth.Finalize again: " + e.text}
	}
	// The truth is written (at once, or after the claim from Redis): Redis follows.
	for _, written := range []string{"truth.Finalize=ok", claimed + " → truth.Acquire=ok → truth.Finalize again=ok"} {
		fast := written + " → fast.Finalize="
		tests[fast+"ok"] = want{}
		tests[fast+"skipped"] = want{}
		tests[fast+"not found"] = want{err: "fast path: fast.Finalize: " + textNotFound}
		tests[fast+"not owner"] = want{err: "finalize op-1: idemstore: truth finalized, fast path held by another owner", is: idemstore.ErrFastPathNotOwner}
		tests[fast+"unavailable"] = want{ignored: "fast.Finalize: " + textUnavailable}
		tests[fast+"failed"] = want{err: "fast path: fast.Finalize: " + textDiskFull}
		// Redis holds another outcome: refilled from the truth, when it answers.
		refill := fast + "already terminal → truth.Get for refill="
		tests[refill+"found"] = want{refill: true}
		for _, e := range []string{"not found", "not owner", "already terminal", "unavailable", "failed"} {
			tests[refill+e] = want{}
		}
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, in := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			p := decideFinalize(f, in)
			require.Equal(t, finalizeDecided, p.Ask)
			assert.Equal(t, w.refill, p.Refill, "refill")
			if w.refill {
				assert.Equal(t, finalizeTruthRec, p.RefillRecord, "refill the truth's record")
			} else {
				assert.Zero(t, p.RefillRecord)
			}
			if w.ignored == "" {
				assert.NoError(t, p.Ignored, "nothing ignored")
			} else {
				assert.Same(t, in.Fast.Err, p.Ignored, "Redis's own error is logged")
				assert.EqualError(t, p.Ignored, w.ignored)
			}
			switch {
			case w.err == "":
				assert.NoError(t, p.Err)
			case w.is != nil:
				require.EqualError(t, p.Err, w.err)
				assert.ErrorIs(t, p.Err, w.is)
			default:
				require.EqualError(t, p.Err, w.err)
				assert.True(t, wraps(p.Err, in.Truth, in.TruthRecord, in.FastClaim, in.ClaimTruth, in.TruthAgain, in.Fast),
					"the backend's error stays in the chain")
			}
		})
	}
}

// TestDecideFinalizeClaimsFromTheFastClaim checks the claim of the truth
// built from Redis's claim of this owner.
func TestDecideFinalizeClaimsFromTheFastClaim(t *testing.T) {
	t.Parallel()
	in := finalizeFacts{}
	for _, step := range []struct {
		call finalizeCall
		a    answer
	}{
		{finalizeAskTruth, replied(idemstore.ErrNotOwner)},
		{finalizeAskTruthRecord, replied(idemstore.ErrNotFound)},
		{finalizeAskFastClaim, answerOf(finalizeFastMine, nil)},
	} {
		require.Equal(t, step.call, decideFinalize(finalizeCase, in).Ask)
		in = withFinalizeAnswer(in, step.call, step.a)
	}
	p := decideFinalize(finalizeCase, in)
	require.Equal(t, finalizeAskClaimTruth, p.Ask)
	c := finalizeFastMine
	assert.Equal(t, idemstore.Claim{OperationID: c.OperationID, ParamHash: c.ParamHash, Owner: c.Owner, Subject: c.Subject, Scope: c.Scope,
		TerminalTTL: finalizeCase.TerminalTTL, FingerprintExp: c.FingerprintExp, ApprovalSHA256: c.ApprovalSHA256}, p.Claim)
}
