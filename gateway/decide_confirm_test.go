package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

// The owners and times of the confirm tables.
const (
	confirmMe     = "gw-1:me"
	confirmHolder = "gw-2:holder"
	// confirmMyClient is this confirm's caller's acting client,
	// confirmHolderClient the holder's claim's.
	confirmMyClient     = "my-app"
	confirmHolderClient = "holder-app"
)

var (
	confirmNow   = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	confirmGrace = 30 * time.Second
	// confirmMine is the ownership of this confirm's own claim.
	confirmMine = confirmOwnership(confirmMe, idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired,
		Owner: confirmMe, ClaimedAt: confirmNow, TruthFound: true})
	confirmReviewRec = idemstore.Record{OperationID: "op-1", State: operation.StateNeedsReview, Owner: confirmHolder, Reason: "status down"}
	confirmDoneRec   = idemstore.Record{OperationID: "op-1", State: operation.StateDone, ResultRef: "tr_1"}
	confirmFinal     = operation.Final{State: operation.StateDone, ResultRef: "tr_1"}
	errStoreDown     = fmt.Errorf("acquire: %w", idemstore.ErrUnavailable)
	errEngineDown    = errors.New("temporal: deadline exceeded")
	errBug           = errors.New("a bug")
	confirmUsage     = []operation.WindowUsage{{FreesAt: confirmNow.Add(time.Hour)}}
	confirmProblems  = []params.FieldProblem{{Field: "amount", Rule: params.RuleRequired}}
	approvedRec      = approval.Record{State: approval.StateApproved, EvidenceSHA256: "e"}
	declinedRec      = approval.Record{State: approval.StateDeclined}
	pendingRec       = approval.Record{State: approval.StatePending}
	// confirmUse is the standing mandate a confirm claims under.
	confirmUse = &mandate.Use{MandateID: "m-1", StatementSHA256: "s", Currency: "USD", Payee: "p-1"}
)

// confirmAnswer is one answer of a confirm's call, added to the facts.
type confirmAnswer struct {
	scope      scopeAnswer
	rate       rateAnswer
	bind       bindAnswer
	verify     verifyAnswer
	approval   approvalAnswer
	mandate    mandateAnswer
	claim      claimAnswer
	workflow   workflowAnswer
	takeover   takeoverAnswer
	start      startAnswer
	startCheck workflowAnswer
	release    releaseAnswer
	await      awaitAnswer
}

// opt is one named answer.
func opt(name string, a confirmAnswer) decidetest.Option[confirmAnswer] {
	return decidetest.Option[confirmAnswer]{Name: name, Answer: a}
}

// confirmOptions are the classified answers each call of a confirm can get.
func confirmOptions(c confirmAsk) (string, []decidetest.Option[confirmAnswer]) {
	claim := func(name string, a claimAnswer) decidetest.Option[confirmAnswer] {
		return opt(name, confirmAnswer{claim: a})
	}
	held := claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Second), Client: confirmHolderClient}
	orphan := claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Minute), Client: confirmHolderClient}
	review := claimAnswer{Kind: claimReview, Record: confirmReviewRec}
	finished := claimAnswer{Kind: claimFinished, Record: confirmDoneRec}
	failed := claimAnswer{Kind: claimFailed, Err: errStoreDown}
	gate := func(v approval.Verdict, rec *approval.Record) approvalAnswer {
		return approvalAnswer{Asked: true, Gate: approval.GateDecision{Verdict: v}, Record: rec}
	}
	switch c {
	case confirmAskScope:
		return "Scope", []decidetest.Option[confirmAnswer]{
			opt("granted", confirmAnswer{scope: scopeAnswer{Checked: true}}),
			opt("missing", confirmAnswer{scope: scopeAnswer{Checked: true, Missing: "payments:wire"}}),
		}
	case confirmAskRate:
		return "Rate", []decidetest.Option[confirmAnswer]{
			opt("allowed", confirmAnswer{rate: rateAnswer{Kind: rateAllowed}}),
			opt("limited", confirmAnswer{rate: rateAnswer{Kind: rateLimited, RetryAfter: time.Second}}),
		}
	case confirmAskBind:
		return "Bind", []decidetest.Option[confirmAnswer]{
			opt("ok", confirmAnswer{bind: bindAnswer{Kind: bindOK}}),
			opt("invalid", confirmAnswer{bind: bindAnswer{Kind: bindInvalid, Problems: confirmProblems}}),
			opt("broken", confirmAnswer{bind: bindAnswer{Kind: bindBroken, Err: errBug}}),
		}
	case confirmAskVerify:
		return "Verify", []decidetest.Option[confirmAnswer]{
			opt("valid", confirmAnswer{verify: verifyAnswer{Kind: verifyValid}}),
			opt("valid past exp", confirmAnswer{verify: verifyAnswer{Kind: verifyValid, Expired: true}}),
			opt("valid asking approval", confirmAnswer{verify: verifyAnswer{Kind: verifyValid, AsksApproval: true}}),
			opt("valid past exp asking approval", confirmAnswer{verify: verifyAnswer{Kind: verifyValid, Expired: true, AsksApproval: true}}),
			opt("unacknowledged", confirmAnswer{verify: verifyAnswer{Kind: verifyValid, Unacknowledged: true}}),
			opt("invalid", confirmAnswer{verify: verifyAnswer{Kind: verifyInvalid}}),
			opt("subject", confirmAnswer{verify: verifyAnswer{Kind: verifySubject}}),
			opt("scope", confirmAnswer{verify: verifyAnswer{Kind: verifyScope}}),
			opt("params", confirmAnswer{verify: verifyAnswer{Kind: verifyParams}}),
			opt("broken", confirmAnswer{verify: verifyAnswer{Kind: verifyBroken, Err: errBug}}),
		}
	case confirmAskApproval:
		return "Approval", []decidetest.Option[confirmAnswer]{
			opt("approved", confirmAnswer{approval: gate(approval.VerdictApproved, &approvedRec)}),
			opt("declined", confirmAnswer{approval: gate(approval.VerdictDeclined, &declinedRec)}),
			opt("required", confirmAnswer{approval: gate(approval.VerdictRequired, nil)}),
			opt("pending", confirmAnswer{approval: gate(approval.VerdictRequired, &pendingRec)}),
			opt("failed", confirmAnswer{approval: approvalAnswer{Asked: true, Err: errStoreDown}}),
		}
	case confirmAskMandate:
		return "Mandate", []decidetest.Option[confirmAnswer]{
			opt("none", confirmAnswer{mandate: mandateAnswer{Kind: mandateNone}}),
			opt("found", confirmAnswer{mandate: mandateAnswer{Kind: mandateFound, Use: confirmUse}}),
			opt("refused", confirmAnswer{mandate: mandateAnswer{Kind: mandateRefused, Reason: mandate.ReasonNotApplicable}}),
			opt("failed", confirmAnswer{mandate: mandateAnswer{Kind: mandateFailed, Err: errStoreDown}}),
		}
	case confirmAskClaim:
		return "Acquire", []decidetest.Option[confirmAnswer]{
			claim("acquired", claimAnswer{Kind: claimAcquired, Ownership: confirmMine}),
			claim("held", held), claim("held past grace", orphan), claim("review", review),
			claim("finished", finished), claim("mismatch", claimAnswer{Kind: claimMismatch}), claim("failed", failed),
			claim("over budget", claimAnswer{Kind: claimOverBudget, Usage: confirmUsage}),
			claim("mandate refused", claimAnswer{Kind: claimMandateRefused, MandateRefusal: mandate.ReasonExceeded}),
		}
	case confirmAskRecord:
		return "Get", []decidetest.Option[confirmAnswer]{
			claim("absent", claimAnswer{Kind: claimAbsent}), claim("held", held), claim("held past grace", orphan),
			claim("review", review), claim("finished", finished), claim("failed", failed),
		}
	case confirmAskWorkflow:
		return "Describe", []decidetest.Option[confirmAnswer]{
			opt("exists", confirmAnswer{workflow: workflowAnswer{Kind: workflowExists}}),
			opt("absent", confirmAnswer{workflow: workflowAnswer{Kind: workflowAbsent}}),
			opt("unknown", confirmAnswer{workflow: workflowAnswer{Kind: workflowUnknown, Err: errEngineDown}}),
		}
	case confirmAskTakeover:
		return "Takeover", []decidetest.Option[confirmAnswer]{
			opt("done", confirmAnswer{takeover: takeoverAnswer{Kind: takeoverDone}}),
			opt("lost", confirmAnswer{takeover: takeoverAnswer{Kind: takeoverLost}}),
			opt("failed", confirmAnswer{takeover: takeoverAnswer{Kind: takeoverFailed, Err: errStoreDown}}),
		}
	case confirmAskStart:
		return "Start", []decidetest.Option[confirmAnswer]{
			opt("started", confirmAnswer{start: startAnswer{Kind: startStarted, Run: "run-1"}}),
			opt("attached", confirmAnswer{start: startAnswer{Kind: startAttached}}),
			opt("failed", confirmAnswer{start: startAnswer{Kind: startFailed, Err: errEngineDown}}),
		}
	case confirmAskStartCheck:
		return "StartCheck", []decidetest.Option[confirmAnswer]{
			opt("exists", confirmAnswer{startCheck: workflowAnswer{Kind: workflowExists}}),
			opt("absent", confirmAnswer{startCheck: workflowAnswer{Kind: workflowAbsent}}),
			opt("unknown", confirmAnswer{startCheck: workflowAnswer{Kind: workflowUnknown, Err: errEngineDown}}),
		}
	case confirmAskRelease:
		return "Release", []decidetest.Option[confirmAnswer]{
			opt("released", confirmAnswer{release: releaseAnswer{Asked: true}}),
			opt("failed", confirmAnswer{release: releaseAnswer{Asked: true, Err: errStoreDown}}),
		}
	case confirmAskAwait:
		return "Await", []decidetest.Option[confirmAnswer]{
			opt("outcome", confirmAnswer{await: awaitAnswer{Kind: awaitOutcome, Final: confirmFinal}}),
			opt("record", confirmAnswer{await: awaitAnswer{Kind: awaitRecord, Record: confirmReviewRec}}),
			opt("nothing", confirmAnswer{await: awaitAnswer{Kind: awaitNothing}}),
		}
	case confirmDecided:
	}
	return "decided", nil
}

// recordConfirmAnswer adds a call's answer to the facts.
func recordConfirmAnswer(f confirmFacts, c confirmAsk, a confirmAnswer) confirmFacts {
	switch c {
	case confirmAskScope:
		f.Scope = a.scope
	case confirmAskRate:
		f.Rate = a.rate
	case confirmAskBind:
		f.Bind = a.bind
	case confirmAskVerify:
		f.Verify = a.verify
	case confirmAskApproval:
		f.Approval = a.approval
	case confirmAskMandate:
		f.Mandate = a.mandate
	case confirmAskClaim, confirmAskRecord:
		f.Claim = a.claim
	case confirmAskWorkflow:
		f.Workflow = a.workflow
	case confirmAskTakeover:
		f.Takeover = a.takeover
	case confirmAskStart:
		f.Start = a.start
	case confirmAskStartCheck:
		f.StartCheck = a.startCheck
	case confirmAskRelease:
		f.Release = a.release
	case confirmAskAwait:
		f.Await = a.await
	case confirmDecided:
	}
	return f
}

// askOf is decideConfirm as decidetest asks it.
func askOf(f confirmFacts) (confirmAsk, bool) {
	p := decideConfirm(f)
	return p.Ask, p.Ask == confirmDecided
}

// admitted are the facts of a confirm whose rate, params and fingerprint
// passed and that needs no approval: what the claim's table starts from.
func admitted(expired bool) confirmFacts {
	return confirmFacts{Owner: confirmMe, Client: confirmMyClient, Scope: scopeAnswer{Checked: true}, Rate: rateAnswer{Kind: rateAllowed}, Bind: bindAnswer{Kind: bindOK},
		Verify: verifyAnswer{Kind: verifyValid, Expired: expired}}
}

// want is a decision: the action and what it carries.
type want struct {
	action    confirmAction
	ownership operation.Ownership
	holder    string
	wait      waitPlan
	record    idemstore.Record
	final     operation.Final
	err       error
	usage     []operation.WindowUsage
	approval  approvalAnswer
	refusal   approval.Reason
	problems  []params.FieldProblem
	retry     time.Duration
	scope     string
}

// check asserts that the decision over f is w.
func check(t *testing.T, f confirmFacts, w want) {
	t.Helper()
	p := decideConfirm(f)
	require.Equal(t, confirmDecided, p.Ask)
	assert.Equal(t, w.action, p.Action, "action")
	assert.Equal(t, w.ownership, p.Ownership, "ownership")
	assert.Equal(t, w.holder, p.Holder, "holder")
	assert.Equal(t, w.wait, p.Wait, "wait")
	assert.Equal(t, w.record, p.Record, "record")
	assert.Equal(t, w.final, p.Final, "final")
	assert.Equal(t, w.err, p.Err, "error")
	assert.Equal(t, w.usage, p.Usage, "usage")
	assert.Equal(t, w.approval, p.Approval, "approval")
	assert.Equal(t, w.refusal, p.MandateRefusal, "mandate refusal")
	assert.Equal(t, w.problems, p.Problems, "problems")
	assert.Equal(t, w.retry, p.RetryAfter, "retry after")
	assert.Equal(t, w.scope, p.Scope, "scope")
}

// TestDecideConfirmAdmission covers every path before the claim: the
// caller's scope, the rate,
// the params, the fingerprint's verdict and the amnesia guard, the
// approval. A path that reaches the claim is answered there by a finished
// record (a replay), the claim's own table being the next test's.
func TestDecideConfirmAdmission(t *testing.T) {
	t.Parallel()
	claimsFinished := func(c confirmAsk) (string, []decidetest.Option[confirmAnswer]) {
		name, all := confirmOptions(c)
		if c == confirmAskClaim || c == confirmAskRecord {
			return name, []decidetest.Option[confirmAnswer]{opt("finished", confirmAnswer{claim: claimAnswer{Kind: claimFinished, Record: confirmDoneRec}})}
		}
		return name, all
	}
	paths := decidetest.ExploreFrom(t, confirmFacts{Owner: confirmMe}, askOf, recordConfirmAnswer, claimsFinished)
	replay := want{action: actReplay, record: confirmDoneRec}
	unavailable := want{action: actUnavailable, err: errStoreDown}
	const ok = "Scope=granted → Rate=allowed → Bind=ok"
	tests := map[string]want{
		"Scope=missing":                               {action: actInsufficientScope, scope: "payments:wire"},
		"Scope=granted → Rate=limited":                {action: actRateLimited, retry: time.Second},
		"Scope=granted → Rate=allowed → Bind=invalid": {action: actInvalidParams, problems: confirmProblems},
		"Scope=granted → Rate=allowed → Bind=broken":  {action: actInternal, err: errBug},
		ok + " → Verify=invalid":                      {action: actFingerprintInvalid},
		ok + " → Verify=subject":                      {action: actSubjectMismatch},
		ok + " → Verify=scope":                        {action: actScopeMismatch},
		ok + " → Verify=params":                       {action: actParamMismatch},
		ok + " → Verify=broken":                       {action: actInternal, err: errBug},
		ok + " → Verify=unacknowledged":               {action: actRepeatUnacknowledged},
		ok + " → Verify=valid → Acquire=finished":     replay,
		// Past its exp a fingerprint replays what it started: no approval asked.
		ok + " → Verify=valid past exp → Get=finished":                                replay,
		ok + " → Verify=valid past exp asking approval → Get=finished":                replay,
		ok + " → Verify=valid asking approval → Approval=approved → Acquire=finished": replay,
		ok + " → Verify=valid asking approval → Approval=declined": {action: actApprovalDeclined,
			approval: approvalAnswer{Asked: true, Gate: approval.GateDecision{Verdict: approval.VerdictDeclined}, Record: &declinedRec}},
		ok + " → Verify=valid asking approval → Approval=failed": unavailable,
	}
	// A missing approval (none recorded, or pending): the standing mandate
	// found stands in for it (the claim reserves it), none found asks the
	// approval, one refused asks it carrying the reason.
	for name, rec := range map[string]*approval.Record{"required": nil, "pending": &pendingRec} {
		missing := approvalAnswer{Asked: true, Gate: approval.GateDecision{Verdict: approval.VerdictRequired}, Record: rec}
		prefix := ok + " → Verify=valid asking approval → Approval=" + name + " → Mandate="
		tests[prefix+"none"] = want{action: actApprovalRequired, approval: missing}
		tests[prefix+"found → Acquire=finished"] = replay
		tests[prefix+"refused"] = want{action: actApprovalRequired, approval: missing, refusal: mandate.ReasonNotApplicable}
		tests[prefix+"failed"] = unavailable
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")
	for key, f := range paths {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			check(t, f, tests[key])
		})
	}
}

// TestDecideConfirm covers every path from the claim on: from a fingerprint
// before its exp (Acquire) and past it (Get), every classified answer of
// the store, then of the engine and of the takeover where an orphan leads
// to them, the start and its failure, and the wait for the outcome.
func TestDecideConfirm(t *testing.T) {
	t.Parallel()
	paths := map[string]confirmFacts{}
	for _, expired := range []bool{false, true} {
		for key, f := range decidetest.ExploreFrom(t, admitted(expired), askOf, recordConfirmAnswer, confirmOptions) {
			paths[key] = f
		}
	}
	var (
		review      = want{action: actReview, record: confirmReviewRec}
		replay      = want{action: actReplay, record: confirmDoneRec}
		unavailable = want{action: actUnavailable, err: errStoreDown}
		// A workflow another call started: replayed, the fast path refilled
		// under the holder's claim, the holder's client named.
		attachWait = waitPlan{Refill: fastPathRefill{By: operation.RefillByGateway, Owner: confirmHolder}, Replay: true,
			Client: confirmHolderClient}
		// The workflow this confirm started: its Finalize writes the fast
		// path under this very claim (the truth is claimed); the caller's
		// client named.
		mineWait = waitPlan{Run: "run-1", Feed: true, Refill: fastPathRefill{By: operation.RefillByWorkflow, Owner: confirmMe},
			Client: confirmMyClient}
		// A takeover's workflow claims the truth itself; the gateway
		// refills; the orphan's client stays the one named.
		takenWait = waitPlan{Run: "run-1", Feed: true, Refill: fastPathRefill{By: operation.RefillByGateway, Owner: confirmMe},
			Client: confirmHolderClient}
	)
	// waited is the three ends of a wait w after prefix.
	waited := func(prefix string, w waitPlan) map[string]want {
		return map[string]want{
			prefix + " → Await=outcome": {action: actAnswerOutcome, wait: w, final: confirmFinal},
			prefix + " → Await=record":  {action: actAnswerRecord, wait: w, record: confirmReviewRec},
			prefix + " → Await=nothing": {action: actInProgress, wait: w},
		}
	}
	// started is the paths of a start under own after prefix, run the
	// wait of a workflow it started; a workflow found started is an
	// earlier call's, replayed under the same claim, with its client.
	started := func(prefix string, run waitPlan) map[string]want {
		out := map[string]want{}
		for k, v := range waited(prefix+" → Start=started", run) {
			out[k] = v
		}
		byUs := waitPlan{Refill: fastPathRefill{By: operation.RefillByGateway, Owner: confirmMe}, Replay: true, Client: run.Client}
		for k, v := range waited(prefix+" → Start=attached", byUs) {
			out[k] = v
		}
		engineDown := want{action: actEngineUnavailable, err: errEngineDown}
		out[prefix+" → Start=failed → StartCheck=exists"] = engineDown
		out[prefix+" → Start=failed → StartCheck=unknown"] = engineDown
		out[prefix+" → Start=failed → StartCheck=absent → Release=released"] = engineDown
		out[prefix+" → Start=failed → StartCheck=absent → Release=failed"] = engineDown
		return out
	}
	// orphan is the paths of a claim held past the grace period.
	orphan := func(prefix string) map[string]want {
		out := map[string]want{
			prefix + " → Describe=absent → Takeover=failed": unavailable,
		}
		for _, m := range []map[string]want{
			waited(prefix+" → Describe=exists", attachWait),
			waited(prefix+" → Describe=unknown", attachWait),
			waited(prefix+" → Describe=absent → Takeover=lost", attachWait),
			started(prefix+" → Describe=absent → Takeover=done", takenWait),
		} {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	tests := map[string]want{
		"Acquire=review":      review,
		"Acquire=finished":    replay,
		"Acquire=mismatch":    {action: actRefuse},
		"Acquire=failed":      unavailable,
		"Acquire=over budget": {action: actOverBudget, usage: confirmUsage},
		// No mandate was named to this claim: the truth cannot refuse it so.
		"Acquire=mandate refused": {action: actInternal,
			err: errors.New("claim refused under a mandate the confirm did not name: mandate_exceeded")},
		"Get=absent":   {action: actExpired},
		"Get=review":   review,
		"Get=finished": replay,
		"Get=failed":   unavailable,
	}
	for _, m := range []map[string]want{
		started("Acquire=acquired", mineWait),
		waited("Acquire=held", attachWait), waited("Get=held", attachWait),
		orphan("Acquire=held past grace"), orphan("Get=held past grace"),
	} {
		for k, v := range m {
			tests[k] = v
		}
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")
	for key, f := range paths {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			check(t, f, tests[key])
		})
	}
}

// TestDecideConfirmUnderMandate: a confirm whose approval is missing and
// for which a standing mandate was found claims under it and starts; the
// truth's refusal asks the ordinary approval carrying the reason, claiming
// and starting nothing; without a mandate the approval is asked as before.
func TestDecideConfirmUnderMandate(t *testing.T) {
	t.Parallel()
	missing := approvalAnswer{Asked: true, Gate: approval.GateDecision{Verdict: approval.VerdictRequired, Why: approval.WhyNone}}
	f := admitted(false)
	f.Verify.AsksApproval, f.Approval = true, missing
	assert.Equal(t, confirmPlan{Ask: confirmAskMandate}, decideConfirm(f), "a missing approval looks for a mandate")
	f.Mandate = mandateAnswer{Kind: mandateFound, Use: confirmUse}
	assert.Equal(t, confirmPlan{Ask: confirmAskClaim}, decideConfirm(f), "under a mandate found, the confirm claims")
	for _, reason := range mandate.Reasons {
		refused := f
		refused.Claim = claimAnswer{Kind: claimMandateRefused, MandateRefusal: reason}
		check(t, refused, want{action: actApprovalRequired, approval: missing, refusal: reason})
	}
	claimed := f
	claimed.Claim = claimAnswer{Kind: claimAcquired, Ownership: confirmMine}
	assert.Equal(t, confirmPlan{Ask: confirmAskStart, Ownership: confirmMine, Client: f.Client}, decideConfirm(claimed), "the claim reserved it: it starts")
	none := f
	none.Mandate = mandateAnswer{Kind: mandateNone}
	check(t, none, want{action: actApprovalRequired, approval: missing})
	named := f
	named.Mandate = mandateAnswer{Kind: mandateRefused, Reason: mandate.ReasonNotApplicable}
	check(t, named, want{action: actApprovalRequired, approval: missing, refusal: mandate.ReasonNotApplicable})
}

// TestDecideConfirmAsksWhatItActsOn: the takeover moves the claim from the
// owner the store named; the start runs under this confirm's claim, or the
// orphan's, which the new workflow claims in the truth itself.
func TestDecideConfirmAsksWhatItActsOn(t *testing.T) {
	t.Parallel()
	f := admitted(false)
	f.Claim = claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: confirmNow.Add(-time.Minute), Client: confirmHolderClient}
	f.Workflow = workflowAnswer{Kind: workflowAbsent}
	assert.Equal(t, confirmPlan{Ask: confirmAskTakeover, Holder: confirmHolder}, decideConfirm(f))
	f.Takeover = takeoverAnswer{Kind: takeoverDone}
	p := decideConfirm(f)
	assert.Equal(t, confirmPlan{Ask: confirmAskStart, Ownership: operation.Takeover(confirmMe), Client: confirmHolderClient}, p,
		"the orphan's workflow names the orphan's client: the claim that acted")
	assert.False(t, p.Ownership.TruthClaimed(), "a takeover never counts the truth as claimed")
	assert.Equal(t, operation.RefillByGateway, p.Ownership.Refiller())
	mine := admitted(false)
	mine.Claim = claimAnswer{Kind: claimAcquired, Ownership: confirmMine}
	assert.Equal(t, confirmPlan{Ask: confirmAskStart, Ownership: confirmMine, Client: confirmMyClient}, decideConfirm(mine))
	unknown := f
	unknown.Takeover, unknown.Workflow = takeoverAnswer{}, workflowAnswer{Kind: workflowUnknown, Err: errEngineDown}
	assert.Equal(t, confirmPlan{Ask: confirmAskAwait, Wait: attachTo(f.Claim), Ignored: errEngineDown}, decideConfirm(unknown),
		"an engine that cannot say is only logged: the confirm waits on the holder's workflow, never takes it over")
}

// TestDecideConfirmStartsOnlyWhatIsAdmittedAndClaimed walks the whole
// confirm, every answer of every call from the first, and checks on every
// path what no row may break: a workflow starts only for a confirm whose
// rate, params and fingerprint (its repeat acknowledged) passed, and whose
// claim is its own, made before the fingerprint's exp with its approval,
// or an orphan without a workflow that it took over; a
// claim is released only after a failed start that left no workflow; an
// outcome is answered only after a wait.
func TestDecideConfirmStartsOnlyWhatIsAdmittedAndClaimed(t *testing.T) {
	t.Parallel()
	paths := decidetest.ExploreFrom(t, confirmFacts{Owner: confirmMe}, askOf, recordConfirmAnswer, confirmOptions)
	require.Greater(t, len(paths), 100, "the whole confirm: every answer of every call")
	for key, f := range paths {
		p := decideConfirm(f)
		require.Equal(t, confirmDecided, p.Ask, key)
		if f.Start.Kind != startNotAsked {
			v := f.Verify
			assert.True(t, f.Scope.Checked && f.Scope.Missing == "" && f.Rate.Kind == rateAllowed && f.Bind.Kind == bindOK &&
				v.Kind == verifyValid && !v.Unacknowledged,
				"%s: started without admission", key)
			switch {
			case f.Claim.Kind == claimAcquired:
				// A new claim: before the fingerprint's exp, approved when
				// asked, or claimed under the standing mandate found instead
				// (the claim's statement reserved it: Acquire=acquired).
				assert.False(t, v.Expired, "%s: a fingerprint past its exp claimed anew", key)
				approved := f.Approval.Err == nil && f.Approval.Gate.Verdict == approval.VerdictApproved
				underMandate := f.Approval.Err == nil && f.Approval.Gate.Verdict == approval.VerdictRequired &&
					f.Mandate.Kind == mandateFound && f.Mandate.Use != nil
				assert.True(t, !v.AsksApproval || approved || underMandate, "%s: started without its approval or mandate", key)
			default:
				// An orphan an earlier confirm claimed (and had approved):
				// taken over only when no workflow of it exists.
				assert.True(t, f.Claim.Kind == claimHeldPastGrace && f.Workflow.Kind == workflowAbsent &&
					f.Takeover.Kind == takeoverDone, "%s: started without the claim", key)
			}
		}
		if f.Release.Asked {
			assert.True(t, f.Start.Kind == startFailed && f.StartCheck.Kind == workflowAbsent,
				"%s: a claim is released only when no workflow exists", key)
		}
		if p.Action == actAnswerOutcome || p.Action == actAnswerRecord {
			assert.NotEqual(t, awaitNotAsked, f.Await.Kind, "%s: an outcome answered without a wait", key)
		}
		if p.MandateRefusal != "" {
			assert.Equal(t, actApprovalRequired, p.Action, "%s: a mandate's refusal asks the approval", key)
			assert.Equal(t, startNotAsked, f.Start.Kind, "%s: a refused mandate starts nothing", key)
		}
		if p.Action == actOverBudget {
			assert.Equal(t, startNotAsked, f.Start.Kind, "%s: over budget claims nothing", key)
		}
		assert.Equal(t, strings.Contains(key, "Start="), f.Start.Kind != startNotAsked, key)
	}
}

// TestVerifyAnswerOf classifies the keyring's verdict, the exp, the amnesia
// guard's acknowledgement and the approval the fingerprint asks for.
func TestVerifyAnswerOf(t *testing.T) {
	t.Parallel()
	p := fingerprint.Payload{Nonce: "n", Exp: confirmNow.Unix()}
	for name, tt := range map[string]struct {
		err  error
		p    fingerprint.Payload
		ack  string
		now  time.Time
		want verifyAnswer
	}{
		"valid":             {p: p, now: confirmNow.Add(-time.Second), want: verifyAnswer{Kind: verifyValid}},
		"at its exp":        {p: p, now: confirmNow, want: verifyAnswer{Kind: verifyValid, Expired: true}},
		"invalid":           {err: fmt.Errorf("x: %w", fingerprint.ErrInvalid), want: verifyAnswer{Kind: verifyInvalid}},
		"another subject":   {err: fingerprint.ErrSubjectMismatch, want: verifyAnswer{Kind: verifySubject}},
		"another scope":     {err: fingerprint.ErrScopeMismatch, want: verifyAnswer{Kind: verifyScope}},
		"other params":      {err: fingerprint.ErrParamMismatch, want: verifyAnswer{Kind: verifyParams}},
		"a failure":         {err: errBug, want: verifyAnswer{Kind: verifyBroken, Err: errBug}},
		"repeat, not acked": {p: fingerprint.Payload{Exp: p.Exp, RecentOperation: "r"}, ack: "other", now: confirmNow.Add(-time.Second), want: verifyAnswer{Kind: verifyValid, Unacknowledged: true}},
		"repeat, acked":     {p: fingerprint.Payload{Exp: p.Exp, RecentOperation: "r"}, ack: "r", now: confirmNow.Add(-time.Second), want: verifyAnswer{Kind: verifyValid}},
		"asks for approval": {p: fingerprint.Payload{Exp: p.Exp, Approval: "always"}, now: confirmNow.Add(-time.Second), want: verifyAnswer{Kind: verifyValid, AsksApproval: true}},
	} {
		assert.Equal(t, tt.want, verifyAnswerOf(tt.p, tt.err, tt.now, tt.ack), name)
	}
}

// TestApprovalAnswerOf classifies the approval store's answer through the
// gate: none stored is required, a read that failed is an error.
func TestApprovalAnswerOf(t *testing.T) {
	t.Parallel()
	p := fingerprint.Payload{Nonce: "n", Subject: "alice", Scope: "payments.transfer", ParamHash: "h", Approval: "always"}
	none := approvalAnswerOf(p, approval.Record{}, fmt.Errorf("read: %w", approval.ErrNotFound), confirmNow)
	assert.Equal(t, approvalAnswer{Asked: true, Gate: approval.GateDecision{Verdict: approval.VerdictRequired, Why: approval.WhyNone}}, none)
	down := approvalAnswerOf(p, approval.Record{}, errStoreDown, confirmNow)
	assert.Equal(t, approvalAnswer{Asked: true, Err: errStoreDown}, down)
	rec := approval.Record{Subject: "alice", Scope: "payments.transfer", ParamHash: "h", State: approval.StateApproved,
		ExpiresAt: confirmNow.Add(time.Minute), EvidenceSHA256: "e"}
	got := approvalAnswerOf(p, rec, nil, confirmNow)
	assert.Equal(t, approval.GateDecision{Verdict: approval.VerdictApproved, EvidenceSHA256: "e"}, got.Gate)
	assert.Equal(t, &rec, got.Record)
}

// TestClaimAnswerOf classifies every answer of Acquire: the store's
// TruthFound, record owner, NEEDS_REVIEW and claim time are read here and
// nowhere else in the confirm.
func TestClaimAnswerOf(t *testing.T) {
	t.Parallel()
	inFlight := func(owner string, claimedAt time.Time) idemstore.Record {
		return idemstore.Record{State: operation.StateInFlight, Owner: owner, ClaimedAt: claimedAt, ActingClient: owner + "-app"}
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
			claimAnswer{Kind: claimAcquired, Ownership: confirmOwnership(confirmMe, truthAcquired)}},
		{"acquired without the truth: the workflow claims it", acquired, nil,
			claimAnswer{Kind: claimAcquired, Ownership: confirmOwnership(confirmMe, acquired)}},
		{"acquired, the truth another owner's", earlier, nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old, Client: confirmHolder + "-app"}},
		{"acquired, the truth another owner's in review", earlierReview, nil,
			claimAnswer{Kind: claimReview, Record: confirmReviewRec}},
		{"in flight, recent", heldBy(recent, true), nil, claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: recent,
			Client: confirmHolder + "-app"}},
		{"in flight, at the grace period", heldBy(old, false), nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old, Client: confirmHolder + "-app"}},
		{"in flight, claimed at an unknown time", heldBy(time.Time{}, false), nil, claimAnswer{Kind: claimHeld, Holder: confirmHolder,
			Client: confirmHolder + "-app"}},
		{"in flight, in review", idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: confirmHolder,
			Record: confirmReviewRec, TruthFound: true}, nil, claimAnswer{Kind: claimReview, Record: confirmReviewRec}},
		{"done", idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone, Record: confirmDoneRec}, nil,
			claimAnswer{Kind: claimFinished, Record: confirmDoneRec}},
		{"failed", idemstore.ClaimDecision{Outcome: idemstore.OutcomeFailed, Record: idemstore.Record{State: operation.StateFailed}}, nil,
			claimAnswer{Kind: claimFinished, Record: idemstore.Record{State: operation.StateFailed}}},
		{"param mismatch", idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}, nil, claimAnswer{Kind: claimMismatch}},
		{"over budget", idemstore.ClaimDecision{Outcome: idemstore.OutcomeLimitExceeded, TruthFound: true, Usage: confirmUsage}, nil,
			claimAnswer{Kind: claimOverBudget, Usage: confirmUsage}},
		{"outside its mandate", idemstore.ClaimDecision{Outcome: idemstore.OutcomeMandateRefused, TruthFound: true,
			MandateRefusal: mandate.ReasonRevoked}, nil, claimAnswer{Kind: claimMandateRefused, MandateRefusal: mandate.ReasonRevoked}},
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
		{"in flight past grace", idemstore.Record{State: operation.StateInFlight, Owner: confirmHolder, ClaimedAt: old}, nil,
			claimAnswer{Kind: claimHeldPastGrace, Holder: confirmHolder, ClaimedAt: old}},
		{"in flight, just claimed", idemstore.Record{State: operation.StateInFlight, Owner: confirmHolder, ClaimedAt: confirmNow,
			ActingClient: confirmHolderClient}, nil,
			claimAnswer{Kind: claimHeld, Holder: confirmHolder, ClaimedAt: confirmNow, Client: confirmHolderClient}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, recordAnswerOf(tt.rec, tt.err, confirmNow, confirmGrace))
		})
	}
}

// TestEngineAndStoreAnswers classifies the engine's Describe and Start and
// the store's Takeover.
func TestEngineAndStoreAnswers(t *testing.T) {
	t.Parallel()
	assert.Equal(t, workflowAnswer{Kind: workflowExists}, workflowAnswerOf(nil))
	assert.Equal(t, workflowAnswer{Kind: workflowAbsent}, workflowAnswerOf(fmt.Errorf("describe: %w", ErrNoWorkflow)))
	assert.Equal(t, workflowAnswer{Kind: workflowUnknown, Err: errEngineDown}, workflowAnswerOf(errEngineDown))
	assert.Equal(t, takeoverAnswer{Kind: takeoverDone}, takeoverAnswerOf(nil))
	assert.Equal(t, takeoverAnswer{Kind: takeoverLost}, takeoverAnswerOf(fmt.Errorf("takeover: %w", idemstore.ErrNotOwner)))
	assert.Equal(t, takeoverAnswer{Kind: takeoverFailed, Err: errStoreDown}, takeoverAnswerOf(errStoreDown))
	assert.Equal(t, startAnswer{Kind: startStarted, Run: "r"}, startAnswerOf("r", nil))
	assert.Equal(t, startAnswer{Kind: startAttached}, startAnswerOf("", fmt.Errorf("start: %w", ErrAlreadyStarted)))
	assert.Equal(t, startAnswer{Kind: startFailed, Err: errEngineDown}, startAnswerOf("", errEngineDown))
}

// TestConfirmOwnership: only an ACQUIRED claim that the truth holds
// as the confirm's own counts the truth as claimed; a takeover never does.
func TestConfirmOwnership(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mine := idemstore.Record{State: operation.StateInFlight, Owner: "gw-1:a"}
	for name, tt := range map[string]struct {
		d       idemstore.ClaimDecision
		claimed bool
	}{
		"acquired on the truth":        {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, Record: mine, TruthFound: true}, true},
		"acquired, record unknown":     {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, TruthFound: true}, true},
		"acquired on the fast path":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at}, false},
		"acquired by another owner":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-2:b", ClaimedAt: at, TruthFound: true}, false},
		"the truth another owner's":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, Record: idemstore.Record{Owner: "gw-2:b"}, TruthFound: true}, false},
		"in flight (a takeover's)":     {idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: "gw-1:a", ClaimedAt: at, Record: mine, TruthFound: true}, false},
		"done (no confirm starts it)":  {idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone, Owner: "gw-1:a", TruthFound: true}, false},
		"param mismatch (never start)": {idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch, Owner: "gw-1:a", TruthFound: true}, false},
	} {
		t.Run(name, func(t *testing.T) {
			own := confirmOwnership("gw-1:a", tt.d)
			assert.Equal(t, "gw-1:a", own.Owner())
			assert.Equal(t, tt.claimed, own.TruthClaimed())
			if tt.claimed {
				assert.Equal(t, operation.RefillByWorkflow, own.Refiller())
				assert.Equal(t, at, own.ClaimedAt())
			} else {
				assert.Equal(t, operation.RefillByGateway, own.Refiller())
				assert.Equal(t, operation.TruthClaimedByWorkflow, own.Truth())
			}
		})
	}

	takeover := operation.Takeover("gw-3:c")
	assert.False(t, takeover.TruthClaimed(), "a takeover never counts the truth as claimed")
	assert.Equal(t, operation.RefillByGateway, takeover.Refiller())
	b, err := json.Marshal(takeover)
	require.NoError(t, err)
	assert.JSONEq(t, `{"owner":"gw-3:c","truth":"workflow"}`, string(b))
}
