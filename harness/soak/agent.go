package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/internal/catalog"
)

// Episode kinds: the sources of duplicate calls (docs/contract.md, the four
// sources) that each agent replays, one per episode.
const (
	// episodeDuplicate sends the same confirm several times at once.
	episodeDuplicate = "duplicate_sends"
	// episodeLostAnswer loses the first confirms' answers to a tiny client
	// timeout, then resends the same confirm until it learns the outcome.
	episodeLostAnswer = "resend_after_lost_answer"
	// episodeAmnesia completes an operation, previews the same params again
	// later, must see recent_operation, and confirms without
	// acknowledge_repeat_of: it must be refused.
	episodeAmnesia = "amnesia_repreview"
	// episodeAgain completes an operation, then the user asks for the same
	// transfer again: the agent acknowledges the recent operation and an
	// intended second operation runs.
	episodeAgain = "ambiguous_again"
)

// episodeKinds lists every episode kind.
var episodeKinds = []string{episodeDuplicate, episodeLostAnswer, episodeAmnesia, episodeAgain}

// Agent timings.
const (
	// requestTimeout bounds an ordinary request (the gateway's confirm
	// itself waits only a short budget).
	requestTimeout = 10 * time.Second
	// followTimeout bounds how long an agent follows one operation.
	followTimeout = 3 * time.Minute
	// resendEvery is how often an agent following an operation in progress
	// sends its confirm again instead of only asking the status tool (a
	// real agent that lost track resends; it is also how orphans are
	// taken over).
	resendEvery = 10 * time.Second
	// refusedShare is the share of episodes whose amount the simulator
	// refuses (above its 10000 limit): definite failures.
	refusedShare = 0.08
)

// finalStatuses end the following of an operation: the agent knows the
// outcome, or a person decides it.
var finalStatuses = []string{"completed", "already_completed", "failed", "already_failed", "needs_manual_review"}

// succeeded reports a status that says the operation executed.
func succeeded(status string) bool { return status == "completed" || status == "already_completed" }

// agent is one scripted agent; it plays episodes one after the other.
// Its choices (episode kind, action, params, how many duplicates and lost
// answers) come from a source seeded by the run's seed, the agent and the
// episode number, so a seed replays the same episodes whatever the timing;
// only the jitter of its waits comes from a source of its own.
type agent struct {
	id       int
	c        *client
	led      *ledger
	choices  *rand.Rand
	jitter   *rand.Rand
	jitterMu sync.Mutex
	scopes   []string
	cat      *catalog.Catalog
	subject  string
	token    string
	seed     uint64
	payeeTag string
}

// newAgent returns agent i of a run with seed on st: it acts as alice or
// bob, with the profile's tokens.
func newAgent(i int, seed uint64, st *stack, c *client, led *ledger, scopes []string) *agent {
	subjects := []struct{ name, token string }{{"alice", st.tokens.alice}, {"bob", st.tokens.bob}}
	s := subjects[i%len(subjects)]
	return &agent{
		id: i, c: c, led: led, scopes: scopes, cat: st.cat, subject: s.name, token: s.token, seed: seed,
		payeeTag: st.payeeTag, jitter: rand.New(rand.NewPCG(seed, uint64(i)+1)),
	}
}

// intn draws one of the episode's choices (only the episode's own
// goroutine draws them).
func (a *agent) intn(n int) int { return a.choices.IntN(n) }

// pause waits between d and 2d, or until ctx ends; it reports whether ctx
// is still alive.
func (a *agent) pause(ctx context.Context, d time.Duration) bool {
	a.jitterMu.Lock()
	extra := time.Duration(a.jitter.Int64N(int64(d) + 1))
	a.jitterMu.Unlock()
	return sleep(ctx, d+extra)
}

// run plays episodes until load ends; the episode under way is followed to
// its end (ctx bounds that).
func (a *agent) run(load, ctx context.Context, budget func() bool) {
	for n := 0; load.Err() == nil && budget(); n++ {
		a.choices = rand.New(rand.NewPCG(a.seed, uint64(a.id)<<32|uint64(n)))
		kind := episodeKinds[a.intn(len(episodeKinds))]
		a.led.episode(kind)
		a.play(ctx, kind, n)
		a.pause(load, 200*time.Millisecond)
	}
}

// play plays episode n of kind.
func (a *agent) play(ctx context.Context, kind string, n int) {
	scope := a.scopes[a.intn(len(a.scopes))]
	params := a.params(n, a.cat.Actions[scope].Downstream.BusinessState != nil)
	switch kind {
	case episodeDuplicate:
		op, fp := a.preview(ctx, scope, kind, params, intentRun, "")
		if op == nil {
			return
		}
		a.duplicates(ctx, op, fp, params)
		a.follow(ctx, op, fp, params, "")
	case episodeLostAnswer:
		op, fp := a.preview(ctx, scope, kind, params, intentRun, "")
		if op == nil {
			return
		}
		for range 1 + a.intn(3) {
			a.confirm(ctx, op, fp, params, "", time.Duration(1+a.intn(40))*time.Millisecond)
		}
		a.follow(ctx, op, fp, params, "")
	case episodeAmnesia, episodeAgain:
		first, fp := a.preview(ctx, scope, kind, params, intentRun, "")
		if first == nil {
			return
		}
		if !succeeded(a.follow(ctx, first, fp, params, "").Status) {
			return // nothing completed: there is no repeat to guard against
		}
		a.pause(ctx, time.Second)
		a.repeat(ctx, first, kind, params)
	}
}

// params draws the params of episode n: amounts in cents of USD or EUR, a
// payee of this run, agent and episode (so the amnesia guard sees only the
// repeats the episode makes). A share of them fails for good: above the
// simulator's limit or, for an action whose downstream reports a business
// state (payouts), to a payee whose payouts always fail.
func (a *agent) params(n int, businessState bool) map[string]any {
	cents := 100 + a.intn(500_000)
	payee := fmt.Sprintf("soak-%d%s-a%d-e%d", a.seed, a.payeeTag, a.id, n)
	if a.choices.Float64() < refusedShare {
		if businessState {
			payee = simulator.FailingPayeePrefix + payee
		} else {
			cents = 1_000_100 + a.intn(1_000_000)
		}
	}
	return map[string]any{
		"amount":   fmt.Sprintf("%d.%02d", cents/100, cents%100),
		"currency": []string{"USD", "EUR", " usd "}[a.intn(3)],
		"payee_id": payee,
		"memo":     []string{"rent", "invoice 42", "thanks", "dinner"}[a.intn(4)],
	}
}

// preview previews params until it gets a fingerprint (retrying what may
// be retried) and registers the operation it names. It returns nil when
// the preview was refused for good or the deadline passed.
func (a *agent) preview(ctx context.Context, scope, kind string, params map[string]any, intent, repeatOf string) (*opRecord, string) {
	deadline := time.Now().Add(followTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		sent := time.Now()
		ans, err := a.c.preview(ctx, a.token, scope, params)
		if err != nil {
			a.transportError(ctx, "", "preview", err)
			continue
		}
		if ans.Status == "preview_ready" {
			op := &opRecord{ID: ans.OperationID, Scope: scope, Subject: a.subject,
				Episode: kind, Intent: intent, RepeatOf: repeatOf}
			if op.ID == "" {
				a.led.violate(violation("", checkAnswer, "preview_ready without operation_id"))
				return nil, ""
			}
			a.led.add(op)
			a.led.record(op, a.id, "preview", sent, ans)
			return op, ans.Fingerprint
		}
		a.led.tally(ans.Status)
		switch ans.Status {
		case "temporarily_unavailable":
		case "downstream_refused":
			// The quote refused the amount: a definite answer at preview,
			// the episode ends here.
			return nil, ""
		default:
			a.led.violate(violation("", checkAnswer, "preview of valid params got %s (HTTP %d)", ans.Status, ans.Code))
			return nil, ""
		}
		sleep(ctx, clampWait(ans.RetryAfterMS))
	}
	return nil, ""
}

// transportError counts a request that got no contract answer and waits a
// little before the next one. A malformed answer is a violation.
func (a *agent) transportError(ctx context.Context, opID, request string, err error) {
	switch {
	case errors.Is(err, errLost):
		a.led.count(&a.led.lost)
	case errors.Is(err, errMalformed):
		a.led.violate(violation(opID, checkAnswer, "%s: %v", request, err))
	default:
		a.led.count(&a.led.transport)
	}
	a.pause(ctx, 300*time.Millisecond)
}

// confirm sends one confirm of op with the given client timeout and
// records its answer; ok is false when no answer arrived.
func (a *agent) confirm(ctx context.Context, op *opRecord, fp string, params map[string]any, ack string, timeout time.Duration) (answer, bool) {
	sent := time.Now()
	ans, err := a.c.confirm(ctx, a.token, op.Scope, fp, params, ack, timeout)
	if err != nil {
		a.transportError(ctx, op.ID, "confirm", err)
		return answer{}, false
	}
	a.led.record(op, a.id, "confirm", sent, ans)
	return ans, true
}

// duplicates sends the same confirm 2 to 4 times at once.
func (a *agent) duplicates(ctx context.Context, op *opRecord, fp string, params map[string]any) {
	var wg sync.WaitGroup
	for range 2 + a.intn(3) {
		wg.Go(func() { a.confirm(ctx, op, fp, params, "", requestTimeout) })
	}
	wg.Wait()
}

// follow confirms op and follows it until a final status: in_progress is
// polled with the status tool, lost answers and temporarily_unavailable
// are resent, and the confirm is sent again every resendEvery. It returns
// the last answer (a final one unless the deadline passed or the
// confirm was refused).
func (a *agent) follow(ctx context.Context, op *opRecord, fp string, params map[string]any, ack string) answer {
	deadline := time.Now().Add(followTimeout)
	var next time.Time // when the confirm is sent (again)
	var last answer
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var ans answer
		var ok bool
		if !time.Now().Before(next) {
			next = time.Now().Add(resendEvery)
			ans, ok = a.confirm(ctx, op, fp, params, ack, requestTimeout)
		} else {
			ans, ok = a.status(ctx, op)
		}
		if !ok {
			next = time.Time{}
			continue
		}
		last = ans
		switch {
		case slices.Contains(finalStatuses, ans.Status):
			return ans
		case ans.Status == "in_progress":
			sleep(ctx, clampWait(ans.PollAfterMS))
		case ans.Status == "temporarily_unavailable":
			next = time.Time{}
			sleep(ctx, clampWait(ans.RetryAfterMS))
		case ans.Status == "unknown_operation":
			// The confirm did not get through (its claim was given back):
			// send it again.
			next = time.Time{}
			a.pause(ctx, 300*time.Millisecond)
		default:
			return ans // a refusal: repeat_unacknowledged, param_mismatch, ...
		}
	}
	return last
}

// status asks the status tool about op once and records the answer.
func (a *agent) status(ctx context.Context, op *opRecord) (answer, bool) {
	sent := time.Now()
	ans, err := a.c.status(ctx, a.token, op.ID)
	if err != nil {
		a.transportError(ctx, op.ID, "status", err)
		return answer{}, false
	}
	a.led.record(op, a.id, "status", sent, ans)
	return ans, true
}

// repeat previews first's params again. The preview must carry
// recent_operation naming first. For the amnesia episode the confirm
// without acknowledgement must be refused with repeat_unacknowledged; for
// "again" the acknowledged confirm is an intended second operation,
// followed to its end.
func (a *agent) repeat(ctx context.Context, first *opRecord, kind string, params map[string]any) {
	intent := intentUnacknowledgedRepeat
	if kind == episodeAgain {
		intent = intentAcknowledgedRepeat
	}
	op, fp := a.preview(ctx, first.Scope, kind, params, intent, first.ID)
	if op == nil {
		return
	}
	recent := ""
	if pv := op.Answers[0]; pv.RecentOperation != nil {
		recent = pv.RecentOperation.OperationID
	}
	if recent != first.ID {
		a.led.violate(violation(op.ID, checkAmnesia, "the preview of the same params after %s completed carried recent_operation %q, want %s",
			first.ID, recent, first.ID))
	}
	if kind == episodeAgain {
		a.follow(ctx, op, fp, params, recent)
		return
	}
	if ans := a.follow(ctx, op, fp, params, ""); ans.Status != "repeat_unacknowledged" {
		a.led.violate(violation(op.ID, checkAmnesia, "the unacknowledged confirm of a repeat of %s got %s (HTTP %d), want repeat_unacknowledged",
			first.ID, ans.Status, ans.Code))
	}
}

// clampWait turns a server-given wait into a duration between 100ms and 3s.
func clampWait(ms int64) time.Duration {
	return min(max(time.Duration(ms)*time.Millisecond, 100*time.Millisecond), 3*time.Second)
}

// sleep waits d or until ctx ends; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
