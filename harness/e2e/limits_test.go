package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// limitsFile writes a limits file for the test and returns the gateway's
// environment that loads it.
func limitsFile(t *testing.T, yaml string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return []string{"ONCEGATE_LIMITS=" + path}
}

// reserved sums subject's reservations in currency that count.
func reserved(t testing.TB, s *testenv.Stack, subject, currency string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var sum string
	require.NoError(t, conn.QueryRow(ctx, `SELECT trim_scale(coalesce(sum(amount), 0))::text FROM budget_reservation
		WHERE subject = $1 AND currency = $2 AND released_at IS NULL`, subject, currency).Scan(&sum))
	return sum
}

// moneyParams is a transfer of amount in currency.
func moneyParams(amount, currency, payee string) map[string]any {
	return map[string]any{"amount": amount, "currency": currency, "payee_id": payee}
}

// TestBudgetHoldsUnderConcurrency: 20 concurrent first confirms of 100.00
// by one subject against a daily budget of 1,000.00, through two gateways:
// exactly 10 execute and 10 are limit_exceeded, and the truth holds 1,000.00
// reserved; the same with Redis stopped, and with a FLUSHALL in the middle.
func TestBudgetHoldsUnderConcurrency(t *testing.T) {
	env := limitsFile(t, `
budgets:
  - {name: bob-daily-eur, subject: bob, currency: EUR, daily: "1000.00"}
  - {name: bob-daily-usd, subject: bob, currency: USD, daily: "1000.00"}
  - {name: bob-daily-gbp, subject: bob, currency: GBP, daily: "1000.00"}
`)
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: env})
	twin, err := s.StartTwin("", "", env, []string{"WORKER_METRICS_URL=http://127.0.0.1:" + strconv.Itoa(testenv.MustFreePort(t)) + "/metrics"})
	require.NoError(t, err)
	t.Cleanup(twin.Stop)
	gateways := []string{s.GatewayURL, twin.GatewayURL}

	run := func(t *testing.T, currency string, during func(i int)) {
		type op struct{ fp, id string }
		ops := make([]op, 20)
		params := make([]map[string]any, 20)
		for i := range ops {
			params[i] = moneyParams("100.00", currency, "p-budget-"+strconv.Itoa(i))
			ops[i].fp, ops[i].id = previewOK(t, s, "dev-bob", "payments.transfer", params[i])
		}
		answers := make([]answer, len(ops))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ops {
			wg.Go(func() {
				<-start
				during(i)
				answers[i] = call(t, http.MethodPost, gateways[i%2]+"/v1/actions/payments.transfer/confirm", "dev-bob",
					map[string]any{"fingerprint": ops[i].fp, "params": params[i]})
			})
		}
		close(start)
		wg.Wait()
		statuses := map[string]int{}
		executed := 0
		for i, a := range answers {
			st := a.str("status")
			switch st {
			case "in_progress":
				st = waitStatus(t, s, "dev-bob", ops[i].id, "completed", "failed").str("status")
			case "limit_exceeded":
				assert.Equal(t, http.StatusForbidden, a.Code)
				assert.Equal(t, false, a.Body["retryable"])
				limit, _ := a.Body["limit"].(map[string]any)
				assert.Equal(t, "bob-daily-"+strings.ToLower(currency), limit["name"], a.String())
				assert.Equal(t, "daily", limit["window"])
				assert.Equal(t, "1000.00", limit["max"])
				assert.Equal(t, "1000.00", limit["used"])
				assert.Equal(t, "0.00", limit["left"])
				assert.NotEmpty(t, limit["resets_at"], "the window frees 24 hours after its first reservation")
				assert.Equal(t, 0, truthRows(t, s, ops[i].id), "nothing claimed")
			}
			statuses[st]++
			executed += executions(t, s, ops[i].id)
		}
		assert.Equal(t, map[string]int{"completed": 10, "limit_exceeded": 10}, statuses)
		assert.Equal(t, 10, executed, "the simulator executed exactly 10")
		assert.Equal(t, "1000", reserved(t, s, "bob", currency), "the truth holds exactly the budget")
	}

	t.Run("RedisUp", func(t *testing.T) { run(t, "EUR", func(int) {}) })
	t.Run("RedisStopped", func(t *testing.T) {
		s.Redis.Stop()
		defer func() { require.NoError(t, s.Redis.Restart()) }()
		run(t, "USD", func(int) {})
	})
	t.Run("FlushallInTheMiddle", func(t *testing.T) {
		rdb := s.Redis.Client()
		defer rdb.Close()
		run(t, "GBP", func(i int) {
			if i == 10 {
				assert.NoError(t, rdb.FlushAll(context.Background()).Err())
			}
		})
	})
}

// TestReservationsReleasedOnlyByProof: an operation that fails with a proof
// that nothing was executed (the downstream refused it) gives its
// reservation back, so a new confirm fits; one in manual review keeps it
// until the operator decides, and a decision that it failed releases it.
func TestReservationsReleasedOnlyByProof(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	env := limitsFile(t, `
budgets:
  - {name: bob-daily-jpy, subject: bob, currency: JPY, daily: 20000}
  - {name: bob-daily-chf, subject: bob, currency: CHF, daily: "100.00"}
`)
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: env})

	// The simulator refuses an amount above 10000: downstream_refused.
	for i := range 2 {
		params := moneyParams("15000", "JPY", "p-refused-"+strconv.Itoa(i))
		fp, id := previewOK(t, s, "dev-bob", "payments.transfer", params)
		done := confirmUntilTerminal(t, s, "dev-bob", "payments.transfer", fp, id, params)
		require.Equal(t, "failed", done.str("status"), "%d: fits again after the release: %s", i, done.String())
		assert.Equal(t, "downstream_refused", done.str("failure_kind"))
	}
	assert.Equal(t, "0", reserved(t, s, "bob", "JPY"), "both released")

	// Manual review keeps the reservation until the decision.
	params := moneyParams("100.00", "CHF", "p-review")
	fp, id := previewOK(t, s, "dev-bob", "payments.legacy_transfer", params)
	setFaults(t, s, map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})
	c := confirm(t, s, "dev-bob", "payments.legacy_transfer", fp, params)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	waitExecutions(t, s, id, 1)
	s.RestartWorker(t)
	waitStatus(t, s, "dev-bob", id, "needs_manual_review")
	clearFaults(t, s)

	next := moneyParams("100.00", "CHF", "p-after-review")
	fp2, id2 := previewOK(t, s, "dev-bob", "payments.transfer", next)
	refused := confirm(t, s, "dev-bob", "payments.transfer", fp2, next)
	require.Equal(t, "limit_exceeded", refused.str("status"), "the review keeps its reservation: %s", refused.String())

	resolved := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops",
		map[string]any{"outcome": "failed", "reason": "not in the ledger", "note": "checked with the bank"})
	require.Equal(t, "resolved", resolved.str("status"), resolved.String())
	assert.Equal(t, "0", reserved(t, s, "bob", "CHF"), "an operator's failed decision releases it")
	done := confirmUntilTerminal(t, s, "dev-bob", "payments.transfer", fp2, id2, next)
	assert.Equal(t, "completed", done.str("status"), "the same fingerprint, not consumed by the refusal, fits now: %s", done.String())
	assert.Equal(t, "100", reserved(t, s, "bob", "CHF"))

	// The ops view and the audited reset.
	out, err := s.OpsCLI(t, "limits", "show", "--subject", "bob")
	require.NoError(t, err, out)
	assert.Contains(t, out, "bob-daily-chf")
	assert.Regexp(t, `bob-daily-chf\s+daily\s+\*\s+CHF\s+100\.00\s+100\.00\s+0\.00`, out)
	out, err = s.OpsCLI(t, "limits", "reset", "--subject", "bob")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^status\s+limits_reset$`, out, "printed for a person")
	assert.Regexp(t, `(?m)^subject\s+bob$`, out)
	out, err = s.OpsCLI(t, "limits", "show", "--subject", "bob")
	require.NoError(t, err, out)
	assert.Regexp(t, `bob-daily-chf\s+daily\s+\*\s+CHF\s+100\.00\s+0\.00\s+100\.00`, out)
	assert.Contains(t, s.Gateway.Log(), `"msg":"budget windows reset"`)
}

// TestRatesPerSubject: 30 previews in a second by one subject over a rate
// of 10 a second: the ones over it are rate_limited (429, Retry-After equal
// to the body's wait, retryable); another subject is unaffected.
func TestRatesPerSubject(t *testing.T) {
	env := limitsFile(t, `
rates:
  - {subject: bob, preview: 10/second}
`)
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: env})
	params := transferParams("5.00")
	var mu sync.Mutex
	counts := map[string]map[string]int{"dev-bob": {}, "dev-alice": {}}
	var wg sync.WaitGroup
	began := time.Now()
	for i := range 30 {
		for _, token := range []string{"dev-bob", "dev-alice"} {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 30 * time.Millisecond) // 30 in about a second
				a := preview(t, s, token, "payments.transfer", params)
				if a.str("status") == "rate_limited" {
					assert.Equal(t, http.StatusTooManyRequests, a.Code)
					assert.Equal(t, true, a.Body["retryable"])
					ms, _ := a.Body["retry_after_ms"].(float64)
					assert.Positive(t, ms)
					assert.Equal(t, strconv.Itoa((int(ms)+999)/1000), a.Header.Get("Retry-After"), a.String())
					assert.Contains(t, a.str("instruction"), "seconds")
				}
				mu.Lock()
				counts[token][a.str("status")]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	t.Logf("30 previews each in %s: %v", time.Since(began), counts)
	assert.Equal(t, map[string]int{"preview_ready": 30}, counts["dev-alice"], "alice has no rate")
	assert.Positive(t, counts["dev-bob"]["rate_limited"], "bob is over 10 a second")
	assert.LessOrEqual(t, counts["dev-bob"]["preview_ready"], 10+10+1, "a burst of 10, then 10 a second")
	assert.Equal(t, 30, counts["dev-bob"]["preview_ready"]+counts["dev-bob"]["rate_limited"])

	// Redis down: rates fail open (counted), the preview goes through.
	s.Redis.Stop()
	defer func() { require.NoError(t, s.Redis.Restart()) }()
	a := preview(t, s, "dev-bob", "payments.transfer", params)
	assert.Equal(t, "preview_ready", a.str("status"), a.String())
	assert.Contains(t, scrape(t, s.GatewayURL+"/metrics"), `oncegate_rate_limiter_fail_open_total{kind="preview"} 1`)
}

// TestDuplicateWaitsCollapse: 200 concurrent duplicate confirms of one
// operation in flight on one gateway share one watcher: at most one Temporal
// long poll for it at a time (the SDK's own counter on /metrics), every
// duplicate answered with the outcome or in_progress, and no
// Resource-Exhausted in the Temporal server's log.
func TestDuplicateWaitsCollapse(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	setFaults(t, s, map[string]any{"payout_settle_ms": 6000})
	params := transferParams("7.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.payout", params)
	// The SDK's own counter of long requests by operation: a wait for a
	// workflow's result is GetWorkflowExecutionHistory long polls.
	polls := func() float64 {
		return metricValue(t, s.GatewayURL+"/metrics", "temporal_long_request", `operation="GetWorkflowExecutionHistory"`)
	}
	watchers := func() float64 { return metricValue(t, s.GatewayURL+"/metrics", "oncegate_watchers_started_total", "") }
	p0 := polls()
	first := confirm(t, s, "dev-alice", "payments.payout", fp, params)
	require.Equal(t, "in_progress", first.str("status"), first.String())
	onePoll := polls() - p0 // what one watch of one confirm wait costs
	// One wait is one long poll (a few when the server answers early), not
	// a spin of empty answers before its deadline.
	assert.LessOrEqual(t, onePoll, 3.0, "one watch's long polls")

	before, w0 := polls(), watchers()
	began := time.Now()
	const n = 200
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = confirm(t, s, "dev-alice", "payments.payout", fp, params) })
	}
	wg.Wait()
	elapsed := time.Since(began)
	after, started := polls(), watchers()-w0
	statuses := map[string]int{}
	for _, a := range answers {
		statuses[a.str("status")]++
		if a.str("status") == "in_progress" {
			assert.NotEmpty(t, a.Header.Get("Retry-After"), "in_progress asks to come back")
		}
	}
	t.Logf("%d duplicates in %s: %v; %v watchers, %v long requests to Temporal (one watch alone: %v)",
		n, elapsed, statuses, started, after-before, onePoll)
	for st := range statuses {
		assert.Contains(t, []string{"in_progress", "already_completed"}, st)
	}
	// One watcher at a time, each waiting at most the confirm wait (2s):
	// the burst costs Temporal what that many single watches cost, not 200.
	windows := float64(int(elapsed/(2*time.Second)) + 2)
	assert.LessOrEqual(t, started, windows, "at most one watcher of the operation at a time")
	assert.LessOrEqual(t, after-before, windows*(onePoll+5), "the long polls of one watcher at a time")
	done := waitStatus(t, s, "dev-alice", id, "completed")
	assert.Equal(t, "completed", done.str("status"))
	assert.Equal(t, 1, executions(t, s, id))
	f, err := os.Open(s.Temporal.LogPath())
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		assert.False(t, strings.Contains(line, "ResourceExhausted") || strings.Contains(line, "Resource exhausted") ||
			strings.Contains(line, "RESOURCE_EXHAUSTED"), "the Temporal server refused: %.300s", line)
	}
}

// metricValue sums the samples of name whose labels contain match, of the
// Prometheus text metricsURL serves.
func metricValue(t *testing.T, metricsURL, name, match string) float64 {
	t.Helper()
	v, err := testenv.SumMetric(strings.NewReader(scrape(t, metricsURL)), name, match)
	require.NoError(t, err)
	return v
}
