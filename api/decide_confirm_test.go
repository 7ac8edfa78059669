package api

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
	"github.com/oncegate/oncegate/operation"
)

// The owners and times of the confirm tables.
const (
	confirmMe     = "gw-1:me"
	confirmHolder = "gw-2:holder"
)

var (
	confirmNow   = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	confirmGrace = 30 * time.Second
	// confirmMine is the ownership of this confirm's own claim.
	confirmMine = operation.ConfirmClaim(confirmMe, idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired,
		Owner: confirmMe, ClaimedAt: confirmNow, TruthFound: true})
	confirmReviewRec = idemstore.Record{OperationID: "op-1", State: idemstore.StateNeedsReview, Owner: confirmHolder, Reason: "status down"}
	confirmDoneRec   = idemstore.Record{OperationID: "op-1", State: idemstore.StateDone, ResultRef: "tr_1"}
	errStoreDown     = fmt.Errorf("acquire: %w", idemstore.ErrUnavailable)
	errTemporalDown  = errors.New("temporal: deadline exceeded")
	confirmUsage     = []idemstore.WindowUsage{{FreesAt: confirmNow.Add(time.Hour)}}
)

// confirmAnswer is one answer of a confirm's call, added to the facts.
type confirmAnswer struct {
	claim    claimAnswer
	workflow workflowAnswer
	takeover takeoverAnswer
}

// confirmOptions are the classified answers each call of a confirm can get.
func confirmOptions(c confirmAsk) (string, []decidetest.Option[confirmAnswer]) {
	claim := func(name string, a claimAnswer) decidetest.Option[confirmAnswer] {
		return decidetest.Option[confirmAnswer]{Name: name, Answer: confirmAnswer{claim: a}}
	}
	held := claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Second)}
	orphan := claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Minute)}
	review := claimAnswer{Kind: claimReview, Record: confirmReviewRec}
	finished := claimAnswer{Kind: claimFinished, Record: confirmDoneRec}
	failed := claimAnswer{Kind: claimFailed, Err: errStoreDown}
	switch c {
	case confirmAskClaim:
		return "Acquire", []decidetest.Option[confirmAnswer]{
			claim("acquired", claimAnswer{Kind: claimAcquired, Ownership: confirmMine}),
			claim("held", held), claim("held past grace", orphan), claim("review", review),
			claim("finished", finished), claim("mismatch", claimAnswer{Kind: claimMismatch}), claim("failed", failed),
			claim("over budget", claimAnswer{Kind: claimOverBudget, Usage: confirmUsage}),
		}
	case confirmAskRecord:
		return "Get", []decidetest.Option[confirmAnswer]{
			claim("absent", claimAnswer{Kind: claimAbsent}), claim("held", held), claim("held past grace", orphan),
			claim("review", review), claim("finished", finished), claim("failed", failed),
		}
	case confirmAskWorkflow:
		return "Describe", []decidetest.Option[confirmAnswer]{
			{Name: "exists", Answer: confirmAnswer{workflow: workflowAnswer{Kind: workflowExists}}},
			{Name: "absent", Answer: confirmAnswer{workflow: workflowAnswer{Kind: workflowAbsent}}},
			{Name: "unknown", Answer: confirmAnswer{workflow: workflowAnswer{Kind: workflowUnknown, Err: errTemporalDown}}},
		}
	case confirmAskTakeover:
		return "Takeover", []decidetest.Option[confirmAnswer]{
			{Name: "done", Answer: confirmAnswer{takeover: takeoverAnswer{Kind: takeoverDone}}},
			{Name: "lost", Answer: confirmAnswer{takeover: takeoverAnswer{Kind: takeoverLost}}},
			{Name: "failed", Answer: confirmAnswer{takeover: takeoverAnswer{Kind: takeoverFailed, Err: errStoreDown}}},
		}
	case confirmDecided:
	}
	return "decided", nil
}

// recordConfirmAnswer adds a call's answer to the facts.
func recordConfirmAnswer(f confirmFacts, c confirmAsk, a confirmAnswer) confirmFacts {
	switch c {
	case confirmAskClaim, confirmAskRecord:
		f.Claim = a.claim
	case confirmAskWorkflow:
		f.Workflow = a.workflow
	case confirmAskTakeover:
		f.Takeover = a.takeover
	case confirmDecided:
	}
	return f
}

// TestDecideConfirm covers every path of a confirm: from a fingerprint
// before its exp (Acquire) and past it (Get), every classified answer of
// the store, then of Temporal and of the takeover where an orphan leads to
// them.
func TestDecideConfirm(t *testing.T) {
	t.Parallel()
	ask := func(f confirmFacts) (confirmAsk, bool) {
		p := decideConfirm(f)
		return p.Ask, p.Ask == confirmDecided
	}
	paths := map[string]confirmFacts{}
	for _, expired := range []bool{false, true} {
		start := confirmFacts{Owner: confirmMe, Expired: expired}
		for key, f := range decidetest.ExploreFrom(t, start, ask, recordConfirmAnswer, confirmOptions) {
			paths[key] = f
		}
	}

	// want is the decision: the action and what it carries.
	type want struct {
		action    confirmAction
		ownership operation.Ownership
		holder    string
		record    idemstore.Record
		err       error
		ignored   error
		usage     []idemstore.WindowUsage
	}
	var (
		start       = want{action: actStart, ownership: confirmMine}
		attach      = want{action: actAttach, holder: confirmHolder}
		review      = want{action: actReview, record: confirmReviewRec}
		replay      = want{action: actReplay, record: confirmDoneRec}
		unavailable = want{action: actUnavailable, err: errStoreDown}
		// A takeover's workflow claims the truth itself: its ownership
		// never counts the truth as claimed.
		takeOver = want{action: actTakeOver, ownership: operation.Takeover(confirmMe)}
	)
	// The rows of an orphan: the same before and after exp.
	orphan := func(prefix string) map[string]want {
		return map[string]want{
			prefix + " → Describe=exists":                   attach,
			prefix + " → Describe=unknown":                  {action: actAttach, holder: confirmHolder, ignored: errTemporalDown},
			prefix + " → Describe=absent → Takeover=done":   takeOver,
			prefix + " → Describe=absent → Takeover=lost":   attach,
			prefix + " → Describe=absent → Takeover=failed": unavailable,
		}
	}
	tests := map[string]want{
		// Before exp: the claim decides.
		"Acquire=acquired": start,
		"Acquire=held":     attach,
		"Acquire=review":   review,
		"Acquire=finished": replay,
		"Acquire=mismatch": {action: actRefuse},
		"Acquire=failed":   unavailable,
		// Over budget: nothing claimed, the truth's usage names the limit.
		"Acquire=over budget": {action: actOverBudget, usage: confirmUsage},
		// Past exp: only what was claimed before it is answered.
		"Get=absent":   {action: actExpired},
		"Get=held":     attach,
		"Get=review":   review,
		"Get=finished": replay,
		"Get=failed":   unavailable,
	}
	for _, prefix := range []string{"Acquire=held past grace", "Get=held past grace"} {
		for k, w := range orphan(prefix) {
			tests[k] = w
		}
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, f := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			p := decideConfirm(f)
			require.Equal(t, confirmDecided, p.Ask)
			assert.Equal(t, w.action, p.Action, "action")
			assert.Equal(t, w.ownership, p.Ownership, "ownership")
			assert.Equal(t, w.holder, p.Holder, "holder")
			assert.Equal(t, w.record, p.Record, "record")
			assert.Equal(t, w.err, p.Err, "error")
			assert.Equal(t, w.usage, p.Usage, "usage")
			assert.Equal(t, w.ignored, p.Ignored, "ignored")
			if p.Action == actTakeOver {
				assert.False(t, p.Ownership.TruthClaimed(), "a takeover never counts the truth as claimed")
				assert.Equal(t, operation.RefillByGateway, p.Ownership.Refiller())
			}
		})
	}
}

// TestDecideConfirmAsksTheTakeoverOfTheHolder: the takeover moves the claim
// from the owner the store named.
func TestDecideConfirmAsksTheTakeoverOfTheHolder(t *testing.T) {
	t.Parallel()
	p := decideConfirm(confirmFacts{Owner: confirmMe,
		Claim:    claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Minute)},
		Workflow: workflowAnswer{Kind: workflowAbsent}})
	assert.Equal(t, confirmPlan{Ask: confirmAskTakeover, Holder: confirmHolder}, p)
}

// TestClaimAnswerOf classifies every answer of Acquire: the store's
// TruthFound, record owner, NEEDS_REVIEW and claim time are read here and
// nowhere else in the confirm.
func TestClaimAnswerOf(t *testing.T) {
	t.Parallel()
	inFlight := func(owner string, claimedAt time.Time) idemstore.Record {
		return idemstore.Record{State: idemstore.StateInFlight, Owner: owner, ClaimedAt: claimedAt}
	}
	recent, old := confirmNow.Add(-time.Second), confirmNow.Add(-confirmGrace)
	acquired := idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: confirmMe, ClaimedAt: recent}
	truthAcquired := acquired
	truthAcquired.TruthFound, truthAcquired.Record = true, inFlight(confirmMe, recent)
	earlier := acquired
	earlier.TruthFound, earlier.Record = true, inFlight(confirmHolder, old)
	earlierReview := earlier
	earlierReview.Record = confirmReviewRec
	heldBy := func(claimedAt time.Time, truth bool) idemstore.ClaimDecision {
		d := idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: confirmHolder, ClaimedAt: claimedAt,
			Record: inFlight(confirmHolder, claimedAt), TruthFound: truth}
		return d
	}
	tests := []struct {
		name string
		d    idemstore.ClaimDecision
		err  error
		want claimAnswer
	}{
		{"acquired on the truth: the workflow's claim", truthAcquired, nil,
			claimAnswer{Kind: claimAcquired, Ownership: operation.ConfirmClaim(confirmMe, truthAcquired)}},
		{"acquired without the truth: the workflow claims it", acquired, nil,
			claimAnswer{Kind: claimAcquired, Ownership: operation.ConfirmClaim(confirmMe, acquired)}},
		{"acquired, the truth another owner's", earlier, nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old}},
		{"acquired, the truth another owner's in review", earlierReview, nil,
			claimAnswer{Kind: claimReview, Record: confirmReviewRec}},
		{"in flight, recent", heldBy(recent, true), nil, claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: recent}},
		{"in flight, at the grace period", heldBy(old, false), nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old}},
		{"in flight, claimed at an unknown time", heldBy(time.Time{}, false), nil, claimAnswer{Kind: claimHeld, Holder: confirmHolder}},
		{"in flight, in review", idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: confirmHolder,
			Record: confirmReviewRec, TruthFound: true}, nil, claimAnswer{Kind: claimReview, Record: confirmReviewRec}},
		{"done", idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone, Record: confirmDoneRec}, nil,
			claimAnswer{Kind: claimFinished, Record: confirmDoneRec}},
		{"failed", idemstore.ClaimDecision{Outcome: idemstore.OutcomeFailed, Record: idemstore.Record{State: idemstore.StateFailed}}, nil,
			claimAnswer{Kind: claimFinished, Record: idemstore.Record{State: idemstore.StateFailed}}},
		{"param mismatch", idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}, nil, claimAnswer{Kind: claimMismatch}},
		{"over budget", idemstore.ClaimDecision{Outcome: idemstore.OutcomeLimitExceeded, TruthFound: true, Usage: confirmUsage}, nil,
			claimAnswer{Kind: claimOverBudget, Usage: confirmUsage}},
		{"store down", idemstore.ClaimDecision{}, errStoreDown, claimAnswer{Kind: claimFailed, Err: errStoreDown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, claimAnswerOf(confirmMe, tt.d, tt.err, confirmNow, confirmGrace))
		})
	}
	assert.True(t, claimAnswerOf(confirmMe, truthAcquired, nil, confirmNow, confirmGrace).Ownership.TruthClaimed())
	assert.False(t, claimAnswerOf(confirmMe, acquired, nil, confirmNow, confirmGrace).Ownership.TruthClaimed(),
		"a claim the truth did not confirm is claimed again by the workflow")
	got := claimAnswerOf(confirmMe, idemstore.ClaimDecision{Outcome: "MAYBE"}, nil, confirmNow, confirmGrace)
	assert.Equal(t, claimFailed, got.Kind, "an outcome this version does not know is never a start")
	assert.Error(t, got.Err)
}

// TestRecordAnswerOf classifies every answer of Get (a fingerprint past its exp).
func TestRecordAnswerOf(t *testing.T) {
	t.Parallel()
	old := confirmNow.Add(-time.Minute)
	tests := []struct {
		name string
		rec  idemstore.Record
		err  error
		want claimAnswer
	}{
		{"absent", idemstore.Record{}, fmt.Errorf("get: %w", idemstore.ErrNotFound), claimAnswer{Kind: claimAbsent}},
		{"store down", idemstore.Record{}, errStoreDown, claimAnswer{Kind: claimFailed, Err: errStoreDown}},
		{"done", confirmDoneRec, nil, claimAnswer{Kind: claimFinished, Record: confirmDoneRec}},
		{"review", confirmReviewRec, nil, claimAnswer{Kind: claimReview, Record: confirmReviewRec}},
		{"in flight past grace", idemstore.Record{State: idemstore.StateInFlight, Owner: confirmHolder, ClaimedAt: old}, nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old}},
		{"in flight, just claimed", idemstore.Record{State: idemstore.StateInFlight, Owner: confirmHolder, ClaimedAt: confirmNow}, nil,
			claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: confirmNow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, recordAnswerOf(tt.rec, tt.err, confirmNow, confirmGrace))
		})
	}
}

// TestWorkflowAndTakeoverAnswers classifies Temporal's describe and the
// store's takeover.
func TestWorkflowAndTakeoverAnswers(t *testing.T) {
	t.Parallel()
	assert.Equal(t, workflowAnswer{Kind: workflowExists}, workflowAnswerOf(nil))
	assert.Equal(t, workflowAnswer{Kind: workflowAbsent}, workflowAnswerOf(fmt.Errorf("describe: %w", serviceerror.NewNotFound("no"))))
	assert.Equal(t, workflowAnswer{Kind: workflowUnknown, Err: errTemporalDown}, workflowAnswerOf(errTemporalDown))
	assert.Equal(t, takeoverAnswer{Kind: takeoverDone}, takeoverAnswerOf(nil))
	assert.Equal(t, takeoverAnswer{Kind: takeoverLost}, takeoverAnswerOf(fmt.Errorf("takeover: %w", idemstore.ErrNotOwner)))
	assert.Equal(t, takeoverAnswer{Kind: takeoverFailed, Err: errStoreDown}, takeoverAnswerOf(errStoreDown))
}
