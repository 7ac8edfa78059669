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

// recentAnswer is one answer of a FindRecent call in the walk: a
// classified answer and, for the index, what it read.
type recentAnswer struct {
	answer
	read idemstore.IntentRead
}

// TestDecideRecent covers every path of FindRecent: the epoch it starts
// from, every answer of the index, of the entry's record and of the truth.
func TestDecideRecent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	intent := idemstore.FindRecentParams{Subject: "alice", Scope: "payments.transfer", ParamHash: "ph", Since: now.Add(-24 * time.Hour)}
	warm := &idemstore.IndexMarker{Epoch: 3, Horizon: now.Add(-48 * time.Hour)}
	entry := &idemstore.IntentEntry{Scope: intent.Scope, ParamHash: intent.ParamHash, OperationID: "op-1", CreatedAt: now.Add(-time.Hour)}
	record := func(state operation.State, kind operation.FailureKind) idemstore.Record {
		return idemstore.Record{OperationID: "op-1", Subject: "alice", Scope: intent.Scope, ParamHash: "ph", State: state, FailureKind: kind, ResultRef: "ref-fast"}
	}
	done, notExecuted := record(operation.StateDone, ""), record(operation.StateFailed, operation.FailureNotExecuted)
	refused, inFlight := record(operation.StateFailed, operation.FailureRefused), record(operation.StateInFlight, "")
	otherSubject := done
	otherSubject.Subject = "bob"
	truthRec := idemstore.Record{OperationID: "op-0", State: operation.StateNeedsReview, ResultRef: "ref-truth"}
	read := func(m *idemstore.IndexMarker, e *idemstore.IntentEntry) recentAnswer {
		return recentAnswer{answer: answer{Reply: replyOK}, read: idemstore.IntentRead{Marker: m, Entry: e}}
	}
	stale, short := *warm, *warm
	stale.Epoch, short.Horizon = 2, now.Add(-time.Hour)
	old := *entry
	old.CreatedAt = now.Add(-25 * time.Hour)
	found := func(rec idemstore.Record) recentAnswer { return recentAnswer{answer: answerOf(rec, nil)} }
	wrap := func(opts []option) []decidetest.Option[recentAnswer] {
		out := make([]decidetest.Option[recentAnswer], len(opts))
		for i, o := range opts {
			out[i] = decidetest.Option[recentAnswer]{Name: o.Name, Answer: recentAnswer{answer: o.Answer}}
		}
		return out
	}
	names := map[recentCall]string{recentAskIndex: "index", recentAskRecord: "fast.Get", recentAskTruth: "truth.FindRecent"}
	options := func(c recentCall) (string, []decidetest.Option[recentAnswer]) {
		name := names[c]
		switch c {
		case recentAskIndex:
			opts := []decidetest.Option[recentAnswer]{
				{Name: "cold", Answer: read(nil, entry)},
				{Name: "stale", Answer: read(&stale, entry)},
				{Name: "short", Answer: read(&short, entry)},
				{Name: "none", Answer: read(warm, nil)},
				{Name: "old", Answer: read(warm, &old)},
				{Name: "entry", Answer: read(warm, entry)},
			}
			return name, append(opts, wrap(callAnswers(name, true)[1:])...)
		case recentAskRecord:
			opts := []decidetest.Option[recentAnswer]{
				{Name: "done", Answer: found(done)},
				{Name: "not executed", Answer: found(notExecuted)},
				{Name: "refused", Answer: found(refused)},
				{Name: "in flight", Answer: found(inFlight)},
				{Name: "bob's", Answer: found(otherSubject)},
			}
			return name, append(opts, wrap(callAnswers(name, true)[1:])...)
		case recentAskTruth:
			return name, wrap(callAnswers(name, false, option{Name: "found", Answer: answerOf(truthRec, nil)}))
		case recentDecided:
		}
		return name, nil
	}
	recordAnswer := func(in recentFacts, c recentCall, a recentAnswer) recentFacts {
		switch c {
		case recentAskIndex:
			in.Index, in.Read = a.answer, a.read
		case recentAskRecord:
			in.Record = a.answer
		case recentAskTruth:
			in.Truth = a.answer
		case recentDecided:
		}
		return in
	}
	ask := func(in recentFacts) (recentCall, bool) { p := decideRecent(in); return p.Ask, p.Ask == recentDecided }

	paths := map[string]recentFacts{}
	for name, e := range map[string]*idemstore.FastPathEpoch{
		"unknown": nil,
		"leased":  {Value: 3, LeasedUntil: now.Add(time.Second)},
		"current": {Value: 3, LeasedUntil: now.Add(-time.Second)},
	} {
		start := recentFacts{Intent: intent, Epoch: epochAt(e, now)}
		for key, facts := range decidetest.ExploreFrom(t, start, ask, recordAnswer, options) {
			paths["epoch="+name+" → "+key] = facts
		}
	}

	// want is FindRecent's answer: the record, or the error's whole text,
	// and whether the subject's index is warmed after it.
	type want struct {
		record idemstore.Record
		err    string
	}
	none := want{err: "recent intent: " + textNotFound}
	tests := map[string]want{
		// Nothing can be trusted or read: the index is not even asked.
		// (The truth's answers are added below, for every path to it.)

		// Warm at this epoch, covering the window: the index answers.
		"epoch=current → index=none": none,
		"epoch=current → index=old":  none,
		// An entry: its own record answers when it is DONE or a failure
		// the guard reports, for this very intent.
		"epoch=current → index=entry → fast.Get=done":         {record: done},
		"epoch=current → index=entry → fast.Get=not executed": {record: notExecuted},
	}
	// viaTruth adds the truth's six answers after prefix.
	viaTruth := func(prefix string) {
		p := prefix + " → truth.FindRecent="
		tests[p+"found"] = want{record: truthRec}
		tests[p+"not found"] = want{err: "truth: truth.FindRecent: " + textNotFound}
		tests[p+"not owner"] = want{err: "truth: truth.FindRecent: " + textNotOwner}
		tests[p+"already terminal"] = want{err: "truth: truth.FindRecent: " + textTerminal}
		tests[p+"unavailable"] = want{err: "truth: truth.FindRecent: " + textUnavailable}
		tests[p+"failed"] = want{err: "truth: truth.FindRecent: " + textDiskFull}
	}
	// The epoch unknown (the watch not heard yet, or broken) or leased (a
	// gateway claims on the truth alone): the truth.
	viaTruth("epoch=unknown")
	viaTruth("epoch=leased")
	// Not warm at this epoch, or a horizon that does not cover the window:
	// the truth (the subject's next claim warms the index).
	viaTruth("epoch=current → index=cold")
	viaTruth("epoch=current → index=stale")
	viaTruth("epoch=current → index=short")
	// The index cannot be read: the truth.
	for _, e := range []string{"skipped", "not found", "not owner", "already terminal", "unavailable", "failed"} {
		viaTruth("epoch=current → index=" + e)
	}
	// The entry's record cannot answer by itself: in flight (it may be
	// NEEDS_REVIEW in the truth), refused (an older operation may count),
	// another intent's, or the fast path no longer has it.
	for _, r := range []string{"refused", "in flight", "bob's", "skipped", "not found", "not owner", "already terminal", "unavailable", "failed"} {
		viaTruth("epoch=current → index=entry → fast.Get=" + r)
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, in := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			p := decideRecent(in)
			require.Equal(t, recentDecided, p.Ask)
			assert.Equal(t, w.record, p.Record)
			if w.err == "" {
				assert.NoError(t, p.Err)
				return
			}
			require.EqualError(t, p.Err, w.err)
			if in.Truth.Reply != replyNotAsked {
				assert.ErrorIs(t, p.Err, in.Truth.Err, "the truth's error stays in the chain")
			} else {
				assert.ErrorIs(t, p.Err, idemstore.ErrNotFound)
			}
		})
	}
}

// TestNeedsLease: a claim the recent-intent index did not record (Redis
// unavailable, or its index not written) is written to the truth only
// under a fast-path lease.
func TestNeedsLease(t *testing.T) {
	t.Parallel()
	acquired := fastAnswer{Decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired}}
	assert.False(t, needsLease(acquired, true), "recorded in the index")
	assert.True(t, needsLease(acquired, false), "the index's node failed")
	assert.True(t, needsLease(fastAnswer{Unavailable: true}, false), "Redis unavailable or the store degraded")
}

// TestWarmAfterClaim: a claim the index recorded warms its subject's index
// when the index is not warm at the current epoch, and never while the
// epoch is unknown or leased.
func TestWarmAfterClaim(t *testing.T) {
	t.Parallel()
	current := epochFact{Kind: epochCurrent, Value: 3}
	warm, stale := &idemstore.IndexMarker{Epoch: 3}, &idemstore.IndexMarker{Epoch: 2}
	for _, tc := range []struct {
		name    string
		epoch   epochFact
		indexed bool
		marker  *idemstore.IndexMarker
		want    bool
	}{
		{"cold", current, true, nil, true},
		{"stale epoch", current, true, stale, true},
		{"warm", current, true, warm, false},
		{"not recorded", current, false, nil, false},
		{"epoch unknown", epochFact{Kind: epochUnknown}, true, nil, false},
		{"leased", epochFact{Kind: epochLeased}, true, nil, false},
	} {
		assert.Equal(t, tc.want, warmAfterClaim(tc.epoch, tc.indexed, tc.marker), tc.name)
	}
}
