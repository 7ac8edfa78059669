package agentsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Params are a transfer's params. Numbers are json.Number so that their
// exact text reaches the gateway.
type Params map[string]any

// opExpect is an operation an episode produced and how many downstream
// executions it may have.
type opExpect struct {
	id string
	// maxExecutions is 1 for an operation that may run, 0 for one that
	// must not (refused repeat, definite failure).
	maxExecutions int
}

// episodeResult is what one episode saw.
type episodeResult struct {
	kind           Kind
	statuses       map[string]int
	lostAnswers    int
	ops            []opExpect
	driftMismatch  int
	intendedRepeat int
	violations     []string
	errs           []string
}

// terminal statuses end a confirm loop.
var terminal = map[string]bool{
	"completed": true, "already_completed": true,
	"failed": true, "already_failed": true,
	"needs_manual_review": true,
}

// succeeded reports a status that says the operation executed.
func succeeded(s string) bool { return s == "completed" || s == "already_completed" }

// definitelyFailed reports a status that says nothing executed.
func definitelyFailed(s string) bool { return s == "failed" || s == "already_failed" }

// agent is one scripted agent playing one episode.
type agent struct {
	c     *client
	cfg   Config
	rng   *rand.Rand
	res   *episodeResult
	name  string
	token string
	scope string
}

// memos are the free texts of the episodes and their drifted rewording.
var memos = map[string]string{
	"asap":          "please, as soon as possible",
	"rent":          "rent for this month",
	"dinner":        "for dinner last night",
	"invoice 42":    "paying invoice no. 42",
	"thanks":        "thank you!",
	"birthday gift": "a gift for your birthday",
}

// memoKeys are the keys of memos, sorted for reproducibility.
var memoKeys = func() []string {
	ks := make([]string, 0, len(memos))
	for k := range memos {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}()

// Drift rewrites params as an LLM regenerating the same call would: the
// free-text memo is reworded, the bound fields are re-formatted
// equivalently (a decimal string "12.50" becomes the JSON number 12.5,
// " usd " becomes "USD"). The result binds the same operation.
func Drift(p Params) Params {
	out := make(Params, len(p))
	for k, v := range p {
		out[k] = v
	}
	if s, ok := p["amount"].(string); ok {
		out["amount"] = json.Number(trimDecimal(s))
	}
	if s, ok := p["currency"].(string); ok {
		out["currency"] = strings.ToUpper(strings.TrimSpace(s))
	}
	if s, ok := p["memo"].(string); ok {
		if d, found := memos[s]; found {
			out["memo"] = d
		} else {
			out["memo"] = "re: " + s
		}
	}
	return out
}

// trimDecimal drops the trailing zeros of a plain decimal ("12.50" → "12.5",
// "3.00" → "3").
func trimDecimal(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// newParams draws the params of episode i.
func newParams(rng *rand.Rand, cfg Config, i int, kind Kind) Params {
	cents := 100 + rng.IntN(50000)
	if kind == KindDrift {
		// A trailing zero, so that the drift has something to re-format.
		cents = (10 + rng.IntN(5000)) * 10
		if cents%100 == 0 {
			cents += 50
		}
	}
	if kind == KindRetry && rng.IntN(10) == 0 {
		// Above the simulator's limit: a definite failure, replayed.
		cents = 1_000_001 + rng.IntN(100000)
	}
	currency := []string{"USD", "EUR", "usd"}[rng.IntN(3)]
	if kind == KindDrift {
		currency = " usd "
	}
	return Params{
		"amount":   fmt.Sprintf("%d.%02d", cents/100, cents%100),
		"currency": currency,
		"payee_id": fmt.Sprintf("sim-%s-%d", cfg.RunID, i),
		"memo":     memoKeys[rng.IntN(len(memoKeys))],
	}
}

// playEpisode plays episode i.
func playEpisode(ctx context.Context, c *client, cfg Config, i int) episodeResult {
	rng := episodeRand(cfg.Seed, i)
	kind := Kinds[rng.IntN(len(Kinds))]
	subjects := make([]string, 0, len(cfg.Tokens))
	for s := range cfg.Tokens {
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	subject := subjects[rng.IntN(len(subjects))]
	a := &agent{
		c: c, cfg: cfg, rng: rng,
		res:   &episodeResult{kind: kind, statuses: map[string]int{}},
		name:  fmt.Sprintf("episode %d (%s, %s)", i, kind, subject),
		token: cfg.Tokens[subject],
		scope: cfg.Scopes[rng.IntN(len(cfg.Scopes))],
	}
	params := newParams(rng, cfg, i, kind)
	var err error
	switch kind {
	case KindRetry:
		err = a.retry(ctx, params)
	case KindAmnesia:
		err = a.amnesia(ctx, params)
	case KindDrift:
		err = a.drift(ctx, params)
	case KindDoItAgain:
		err = a.doItAgain(ctx, params)
	}
	if err != nil {
		a.res.errs = append(a.res.errs, fmt.Sprintf("%s: %v", a.name, err))
	}
	return *a.res
}

// violate records a broken expectation.
func (a *agent) violate(format string, args ...any) {
	a.res.violations = append(a.res.violations, a.name+": "+fmt.Sprintf(format, args...))
}

// see records an answer's status.
func (a *agent) see(ans answer) answer {
	a.res.statuses[ans.Status]++
	return ans
}

// expectOp records an operation and its allowed executions.
func (a *agent) expectOp(id string, status string) {
	if id == "" {
		return
	}
	maxExec := 1
	if definitelyFailed(status) || status == "repeat_unacknowledged" {
		maxExec = 0
	}
	for i, o := range a.res.ops {
		if o.id == id {
			a.res.ops[i].maxExecutions = min(o.maxExecutions, maxExec)
			return
		}
	}
	a.res.ops = append(a.res.ops, opExpect{id: id, maxExecutions: maxExec})
}

// preview asks for a fingerprint; anything but preview_ready is an error.
func (a *agent) preview(ctx context.Context, p Params) (answer, error) {
	ans, err := a.c.preview(ctx, a.token, a.scope, p)
	if err != nil {
		return answer{}, fmt.Errorf("preview: %w", err)
	}
	a.see(ans)
	if ans.Status != "preview_ready" || ans.Fingerprint == "" {
		return ans, fmt.Errorf("preview: got %s (HTTP %d), want preview_ready", ans.Status, ans.Code)
	}
	if ans.OperationID == "" {
		ans.OperationID = operationIDOf(ans.Fingerprint)
	}
	return ans, nil
}

// confirmOnce sends one confirm with the given client timeout.
func (a *agent) confirmOnce(ctx context.Context, fp string, p Params, ack string, timeout time.Duration) (answer, error) {
	ans, err := a.c.confirm(ctx, a.token, a.scope, fp, p, ack, timeout)
	if errors.Is(err, errLost) {
		a.res.lostAnswers++
		return answer{}, err
	}
	if err != nil {
		return answer{}, fmt.Errorf("confirm: %w", err)
	}
	return a.see(ans), nil
}

// loseConfirm sends a confirm whose answer is lost to a tiny client timeout
// (it may still arrive when the gateway is fast enough).
func (a *agent) loseConfirm(ctx context.Context, fp string, p Params) (answer, bool) {
	ans, err := a.confirmOnce(ctx, fp, p, "", a.cfg.LostAnswerTimeout)
	if err != nil {
		return answer{}, false
	}
	return ans, true
}

// confirm sends the confirm until a terminal status or a rejection:
// in_progress is polled, temporarily_unavailable and lost answers are
// retried with the same fingerprint.
func (a *agent) confirm(ctx context.Context, fp string, p Params, ack string) (answer, error) {
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		ans, err := a.confirmOnce(ctx, fp, p, ack, a.cfg.RequestTimeout)
		if err != nil {
			lastErr = err
			if !sleep(ctx, 250*time.Millisecond) {
				return answer{}, ctx.Err()
			}
			continue
		}
		switch ans.Status {
		case "temporarily_unavailable":
			if !sleep(ctx, clampWait(ans.RetryAfterMS)) {
				return answer{}, ctx.Err()
			}
			continue
		case "in_progress":
			return a.poll(ctx, ans)
		}
		return ans, nil
	}
	return answer{}, fmt.Errorf("confirm: no answer after retries: %w", lastErr)
}

// poll waits poll_after_ms and asks the status tool until the operation is
// no longer in progress.
func (a *agent) poll(ctx context.Context, ans answer) (answer, error) {
	deadline := time.Now().Add(a.cfg.MaxWait)
	id := ans.OperationID
	for ans.Status == "in_progress" {
		if id == "" {
			return ans, errors.New("poll: in_progress without operation_id")
		}
		if time.Now().After(deadline) {
			return ans, fmt.Errorf("poll: operation %s still in progress after %s", id, a.cfg.MaxWait)
		}
		if !sleep(ctx, clampWait(ans.PollAfterMS)) {
			return ans, ctx.Err()
		}
		next, err := a.c.status(ctx, a.token, id)
		if err != nil {
			continue
		}
		a.see(next)
		if next.OperationID == "" {
			next.OperationID = id
		}
		if next.Status == "temporarily_unavailable" {
			next.Status, next.PollAfterMS = "in_progress", next.RetryAfterMS
		}
		ans = next
	}
	return ans, nil
}

// retry: the first confirms' answers are lost; the agent confirms again
// with the same fingerprint until a terminal status.
func (a *agent) retry(ctx context.Context, p Params) error {
	pv, err := a.preview(ctx, p)
	if err != nil {
		return err
	}
	lost := 1 + a.rng.IntN(3)
	for range lost {
		if ans, ok := a.loseConfirm(ctx, pv.Fingerprint, p); ok && terminal[ans.Status] {
			break
		}
		sleep(ctx, time.Duration(a.rng.IntN(30))*time.Millisecond)
	}
	ans, err := a.confirm(ctx, pv.Fingerprint, p, "")
	a.expectOp(pv.OperationID, ans.Status)
	if err != nil {
		return err
	}
	if !terminal[ans.Status] {
		a.violate("retry with the same fingerprint got %s (HTTP %d), want a terminal status", ans.Status, ans.Code)
	}
	return nil
}

// amnesia: after completing, the agent previews the same params again; the
// preview must carry recent_operation and a confirm without
// acknowledgement must be refused.
func (a *agent) amnesia(ctx context.Context, p Params) error {
	first, err := a.complete(ctx, p)
	if err != nil {
		return err
	}
	again, err := a.preview(ctx, p)
	if err != nil {
		return err
	}
	if again.RecentOperation == nil || again.RecentOperation.OperationID != first {
		a.violate("second preview of identical params did not carry recent_operation %s", first)
	}
	ans, err := a.confirmOnce(ctx, again.Fingerprint, p, "", a.cfg.RequestTimeout)
	if err != nil {
		a.expectOp(again.OperationID, "")
		return err
	}
	if ans.Status == "in_progress" {
		ans, err = a.poll(ctx, ans)
	}
	if ans.Status != "repeat_unacknowledged" {
		a.violate("unacknowledged confirm of a repeat got %s (HTTP %d), want repeat_unacknowledged", ans.Status, ans.Code)
		a.expectOp(again.OperationID, "repeat_unacknowledged")
		return err
	}
	a.expectOp(again.OperationID, "repeat_unacknowledged")
	return err
}

// drift: the re-sent confirm rewords the memo and re-formats the bound
// fields; it must replay, never param_mismatch.
func (a *agent) drift(ctx context.Context, p Params) error {
	pv, err := a.preview(ctx, p)
	if err != nil {
		return err
	}
	if a.rng.IntN(2) == 0 {
		a.loseConfirm(ctx, pv.Fingerprint, p)
	} else {
		first, err := a.confirm(ctx, pv.Fingerprint, p, "")
		if err != nil {
			a.expectOp(pv.OperationID, "")
			return err
		}
		a.checkNotMismatch(first)
	}
	ans, err := a.confirm(ctx, pv.Fingerprint, Drift(p), "")
	a.expectOp(pv.OperationID, ans.Status)
	if err != nil {
		return err
	}
	a.checkNotMismatch(ans)
	if ans.Status != "param_mismatch" && !terminal[ans.Status] {
		a.violate("drifted confirm got %s (HTTP %d), want a replay", ans.Status, ans.Code)
	}
	return nil
}

// checkNotMismatch counts a param_mismatch caused by drift.
func (a *agent) checkNotMismatch(ans answer) {
	if ans.Status == "param_mismatch" {
		a.res.driftMismatch++
		a.violate("equivalent params were refused with param_mismatch")
	}
}

// doItAgain: the user wants the same transfer a second time and says so;
// the agent acknowledges the recent operation and a new one executes.
func (a *agent) doItAgain(ctx context.Context, p Params) error {
	first, err := a.complete(ctx, p)
	if err != nil {
		return err
	}
	again, err := a.preview(ctx, p)
	if err != nil {
		return err
	}
	ack := first
	if again.RecentOperation == nil {
		a.violate("second preview of identical params did not carry recent_operation %s", first)
		ack = ""
	} else {
		ack = again.RecentOperation.OperationID
	}
	ans, err := a.confirm(ctx, again.Fingerprint, p, ack)
	a.expectOp(again.OperationID, ans.Status)
	if err != nil {
		return err
	}
	switch {
	case again.OperationID == first:
		a.violate("the acknowledged repeat reused operation %s", first)
	case succeeded(ans.Status):
		a.res.intendedRepeat++
	default:
		a.violate("acknowledged repeat got %s (HTTP %d), want completed", ans.Status, ans.Code)
	}
	return nil
}

// complete previews and confirms p and returns the operation id; it must
// succeed.
func (a *agent) complete(ctx context.Context, p Params) (string, error) {
	pv, err := a.preview(ctx, p)
	if err != nil {
		return "", err
	}
	if pv.RecentOperation != nil {
		a.violate("first preview carried recent_operation %s", pv.RecentOperation.OperationID)
	}
	ans, err := a.confirm(ctx, pv.Fingerprint, p, "")
	a.expectOp(pv.OperationID, ans.Status)
	if err != nil {
		return "", err
	}
	if !succeeded(ans.Status) {
		return "", fmt.Errorf("first confirm got %s (HTTP %d), want completed", ans.Status, ans.Code)
	}
	return pv.OperationID, nil
}

// clampWait turns a server-given wait into a duration between 50ms and 5s.
func clampWait(ms int64) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	return min(max(d, 50*time.Millisecond), 5*time.Second)
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
