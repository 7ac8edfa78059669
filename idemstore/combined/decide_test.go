package combined

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// TestQueryFor checks what the truth is asked after each fast-path answer.
func TestQueryFor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fast fastAnswer
		want truthQuery
	}{
		{fastAnswer{Unavailable: true}, queryClaim},
		{fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired}}, queryClaim},
		{fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight}}, queryLookup},
		{fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone}}, queryNone},
		{fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeFailed}}, queryNone},
		{fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}}, queryNone},
	} {
		assert.Equal(t, tt.want, queryFor(tt.fast), "%+v", tt.fast)
	}
}

// TestDecide covers every fast-path answer against every truth answer.
func TestDecide(t *testing.T) {
	t.Parallel()
	const me, earlier, fastOwner = "gw-1:me", "gw-2:earlier", "gw-3:fast"
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) // the truth's claimed_at
	t1 := t0.Add(time.Second)                           // Redis's claimed_at
	c := idemstore.Claim{OperationID: "op-1", ParamHash: "hash-1", Owner: me, InFlightTTL: time.Minute, TerminalTTL: time.Hour}
	rec := func(state operation.State, hash, owner string) idemstore.Record {
		return idemstore.Record{OperationID: c.OperationID, ParamHash: hash, State: state, Owner: owner, ClaimedAt: t0, ResultRef: "ref-" + string(state)}
	}
	truths := map[string]truthAnswer{
		"not asked":            {Kind: truthNotAsked},
		"claimed":              {Kind: truthClaimed, Record: rec(operation.StateInFlight, c.ParamHash, me)},
		"absent":               {Kind: truthAbsent},
		"other hash, terminal": {Kind: truthFound, Record: rec(operation.StateDone, "hash-2", earlier)},
		"other hash, running":  {Kind: truthFound, Record: rec(operation.StateInFlight, "hash-2", earlier)},
		"done":                 {Kind: truthFound, Record: rec(operation.StateDone, c.ParamHash, earlier)},
		"failed":               {Kind: truthFound, Record: rec(operation.StateFailed, c.ParamHash, earlier)},
		"in flight, earlier":   {Kind: truthFound, Record: rec(operation.StateInFlight, c.ParamHash, earlier)},
		"in flight, mine":      {Kind: truthFound, Record: rec(operation.StateInFlight, c.ParamHash, me)},
		"needs review":         {Kind: truthFound, Record: rec(operation.StateNeedsReview, c.ParamHash, earlier)},
		"unavailable":          {Kind: truthFailed, Err: fmt.Errorf("get: %w", idemstore.ErrUnavailable)},
		"over budget":          {Kind: truthRefused, Usage: []operation.WindowUsage{{FreesAt: t0}}},
	}
	fastRec := idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateInFlight, Owner: fastOwner, ClaimedAt: t1}
	fasts := map[string]fastAnswer{
		"unavailable": {Unavailable: true},
		"ACQUIRED": {Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: me, ClaimedAt: t1,
			Record: idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateInFlight, Owner: me}}},
		"IN_FLIGHT": {Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: fastOwner, ClaimedAt: t1, Record: fastRec}},
		"DONE": {Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone,
			Record: idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateDone, ResultRef: "ref-fast"}}},
		"FAILED": {Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeFailed,
			Record: idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateFailed, Reason: "refused"}}},
		"PARAM_MISMATCH": {Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}},
	}

	// want is the expected plan: the answer's fields, or the error, and the repairs.
	type want struct {
		outcome    idemstore.ClaimOutcome // "" when an error is expected
		err        error                  // errors.Is target
		owner      string
		claimedAt  time.Time
		record     string // "truth", "fast" or "" (none)
		truthFound bool
		release    bool
		refill     bool // always of the truth's record
		mirror     string
		usage      bool // the truth's usage is answered
	}
	var (
		mismatch      = want{outcome: idemstore.OutcomeParamMismatch, truthFound: true}
		replayTruth   = func(o idemstore.ClaimOutcome) want { return want{outcome: o, record: "truth", truthFound: true} }
		runningTruth  = want{outcome: idemstore.OutcomeInFlight, owner: earlier, claimedAt: t0, record: "truth", truthFound: true}
		unexpected    = want{err: errTruthAnswer}
		unavailable   = want{err: idemstore.ErrUnavailable}
		withRefill    = func(w want) want { w.refill = true; return w }
		withRelease   = func(w want) want { w.release = true; return w }
		withMirror    = func(w want) want { w.mirror = earlier; return w }
		fastOwnerRuns = want{outcome: idemstore.OutcomeInFlight, owner: fastOwner, claimedAt: t1, record: "truth", truthFound: true}
		overBudget    = want{outcome: idemstore.OutcomeLimitExceeded, truthFound: true, usage: true}
	)
	tests := map[[2]string]want{
		// Redis cannot answer: the truth's claim is the answer, nothing is repaired on Redis.
		{"unavailable", "not asked"}:            unexpected,
		{"unavailable", "claimed"}:              {outcome: idemstore.OutcomeAcquired, owner: me, claimedAt: t0, record: "truth", truthFound: true},
		{"unavailable", "absent"}:               unexpected,
		{"unavailable", "other hash, terminal"}: mismatch,
		{"unavailable", "other hash, running"}:  mismatch,
		{"unavailable", "done"}:                 replayTruth(idemstore.OutcomeDone),
		{"unavailable", "failed"}:               replayTruth(idemstore.OutcomeFailed),
		{"unavailable", "in flight, earlier"}:   runningTruth,
		{"unavailable", "in flight, mine"}:      {outcome: idemstore.OutcomeInFlight, owner: me, claimedAt: t0, record: "truth", truthFound: true},
		{"unavailable", "needs review"}:         runningTruth,
		{"unavailable", "unavailable"}:          unavailable,
		{"unavailable", "over budget"}:          overBudget,

		// Redis ACQUIRED: the truth's claim decides; a refused Redis claim is released.
		{"ACQUIRED", "not asked"}:            withRelease(unexpected),
		{"ACQUIRED", "claimed"}:              {outcome: idemstore.OutcomeAcquired, owner: me, claimedAt: t1, record: "truth", truthFound: true},
		{"ACQUIRED", "absent"}:               withRelease(unexpected),
		{"ACQUIRED", "other hash, terminal"}: withRefill(withRelease(mismatch)),
		{"ACQUIRED", "other hash, running"}:  withRelease(mismatch),
		{"ACQUIRED", "done"}:                 withRefill(replayTruth(idemstore.OutcomeDone)),
		{"ACQUIRED", "failed"}:               withRefill(replayTruth(idemstore.OutcomeFailed)),
		{"ACQUIRED", "in flight, earlier"}:   withMirror(runningTruth),
		{"ACQUIRED", "in flight, mine"}:      {outcome: idemstore.OutcomeInFlight, owner: me, claimedAt: t0, record: "truth", truthFound: true},
		{"ACQUIRED", "needs review"}:         withMirror(runningTruth),
		{"ACQUIRED", "unavailable"}:          withRelease(unavailable),
		{"ACQUIRED", "over budget"}:          withRelease(overBudget),

		// Redis IN_FLIGHT: the truth may know the outcome Redis lost.
		{"IN_FLIGHT", "not asked"}:            unexpected,
		{"IN_FLIGHT", "claimed"}:              unexpected,
		{"IN_FLIGHT", "absent"}:               {outcome: idemstore.OutcomeInFlight, owner: fastOwner, claimedAt: t1, record: "fast"},
		{"IN_FLIGHT", "other hash, terminal"}: withRefill(mismatch),
		{"IN_FLIGHT", "other hash, running"}:  mismatch,
		{"IN_FLIGHT", "done"}:                 withRefill(replayTruth(idemstore.OutcomeDone)),
		{"IN_FLIGHT", "failed"}:               withRefill(replayTruth(idemstore.OutcomeFailed)),
		{"IN_FLIGHT", "in flight, earlier"}:   fastOwnerRuns,
		{"IN_FLIGHT", "in flight, mine"}:      fastOwnerRuns,
		{"IN_FLIGHT", "needs review"}:         fastOwnerRuns,
		{"IN_FLIGHT", "unavailable"}:          unavailable,
		{"IN_FLIGHT", "over budget"}:          unexpected,
	}
	// Redis DONE, FAILED and PARAM_MISMATCH are final (Redis is finalized
	// only after the truth): whatever the truth would say, the answer is Redis's.
	for _, f := range []string{"DONE", "FAILED", "PARAM_MISMATCH"} {
		for tr := range truths {
			w := want{outcome: fasts[f].Decision.Outcome}
			if f != "PARAM_MISMATCH" {
				w.record = "fast"
			}
			tests[[2]string{f, tr}] = w
		}
	}
	require.Len(t, tests, len(fasts)*len(truths), "every combination")

	for key, w := range tests {
		fast, ok := fasts[key[0]]
		require.True(t, ok, key[0])
		truth, ok := truths[key[1]]
		require.True(t, ok, key[1])
		t.Run(key[0]+" × "+key[1], func(t *testing.T) {
			t.Parallel()
			p := decide(c, fast, truth)
			assert.Equal(t, w.release, p.ReleaseFast, "release")
			assert.Equal(t, w.refill, p.Refill, "refill")
			if w.refill {
				assert.Equal(t, truth.Record, p.RefillRecord, "refill the truth's record")
			}
			assert.Equal(t, w.mirror, p.MirrorOwner, "mirror owner")
			if w.err != nil {
				require.ErrorIs(t, p.Err, w.err)
				assert.Zero(t, p.Answer, "no answer with an error")
				return
			}
			require.NoError(t, p.Err)
			d := p.Answer
			assert.Equal(t, w.outcome, d.Outcome)
			assert.Equal(t, w.truthFound, d.TruthFound, "truth found")
			switch w.record {
			case "truth":
				assert.Equal(t, truth.Record, d.Record)
			case "fast":
				assert.Equal(t, fast.Decision.Record, d.Record)
			default:
				assert.Zero(t, d.Record)
			}
			if w.usage {
				assert.Equal(t, truth.Usage, d.Usage, "the truth's usage")
			}
			if w.outcome == idemstore.OutcomeInFlight || w.outcome == idemstore.OutcomeAcquired {
				assert.Equal(t, w.owner, d.Owner, "owner")
				assert.Equal(t, w.claimedAt, d.ClaimedAt, "claimed at")
			}
		})
	}
}

// TestDecideWrapsTheTruthsError keeps the truth's own error in the chain.
func TestDecideWrapsTheTruthsError(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk full")
	p := decide(idemstore.Claim{OperationID: "k"}, fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired}},
		truthAnswer{Kind: truthFailed, Err: cause})
	require.ErrorIs(t, p.Err, cause)
	assert.True(t, p.ReleaseFast)
}
