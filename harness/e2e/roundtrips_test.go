package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// storeCounts counts what one operation costs the stores, from the gateway
// and the worker together: the statements on the truth database
// (pg_stat_statements), the Redis round trips and commands the two
// processes count (oncegate_redis_round_trips_total and
// oncegate_redis_commands_total: a pipeline's commands travel in one round
// trip), and the commands Redis itself saw (MONITOR, which shows every
// command a client sent, and those a script ran inside the server marked
// [n lua]: only the former travel).
type storeCounts struct {
	s            *testenv.Stack
	admin        *pgx.Conn
	truthDB      string
	monitorLines chan string
	stopMonitor  func()
}

// newStoreCounts connects to the stack's PostgreSQL server (with
// pg_stat_statements) and its Redis.
func newStoreCounts(t *testing.T, s *testenv.Stack) *storeCounts {
	t.Helper()
	ctx := context.Background()
	u, err := url.Parse(s.DatabaseURL)
	require.NoError(t, err)
	truthDB := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	_, err = admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	require.NoError(t, err)
	return &storeCounts{s: s, admin: admin, truthDB: truthDB}
}

// counts is one reading.
type counts struct {
	pg, redisTrips, redisCommands int64
}

// read reads the counters now. A scrape of /metrics runs statements of
// its own (the collectors of the records' states and of the budgets):
// before the confirm (first) the statements are read after the scrapes,
// after it (!first) before them, so that no scrape falls in between.
func (c *storeCounts) read(t *testing.T, first bool) counts {
	t.Helper()
	var n counts
	pg := func() {
		require.NoError(t, c.admin.QueryRow(context.Background(), `
			SELECT coalesce(sum(s.calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			WHERE d.datname = $1`, c.truthDB).Scan(&n.pg))
	}
	if !first {
		pg()
	}
	for _, m := range []string{scrape(t, c.s.GatewayURL+"/metrics"), scrape(t, c.s.WorkerMetricsURL)} {
		n.redisTrips += counterIn(t, m, "oncegate_redis_round_trips_total")
		n.redisCommands += counterIn(t, m, "oncegate_redis_commands_total")
	}
	if first {
		pg()
	}
	return n
}

// statements reads the calls of each statement on the truth database.
func (c *storeCounts) statements(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := c.admin.Query(context.Background(), `
		SELECT s.query, sum(s.calls)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = $1 GROUP BY s.query`, c.truthDB)
	require.NoError(t, err)
	defer rows.Close()
	calls := map[string]int64{}
	for rows.Next() {
		var q string
		var n int64
		require.NoError(t, rows.Scan(&q, &n))
		calls[q] = n
	}
	require.NoError(t, rows.Err())
	return calls
}

// counterIn reads an unlabelled counter from Prometheus text.
func counterIn(t *testing.T, text, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, m, "%s is exposed", name)
	f, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return int64(f)
}

// monitor starts MONITOR on the stack's Redis.
func (c *storeCounts) monitor(t *testing.T) {
	t.Helper()
	mctx, stop := context.WithCancel(context.Background())
	mon := exec.CommandContext(mctx, "redis-cli", "-u", c.s.Redis.URL, "monitor")
	out, err := mon.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, mon.Start())
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	require.Equal(t, "OK", <-lines, "MONITOR is on")
	c.monitorLines, c.stopMonitor = lines, func() { stop(); _ = mon.Wait() }
}

// monitored stops MONITOR and returns the commands clients sent.
func (c *storeCounts) monitored(t *testing.T) []string {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // the last lines reach the monitor
	c.stopMonitor()
	var sent []string
	for line := range c.monitorLines {
		if !strings.Contains(line, " lua]") {
			t.Logf("redis: %.120s", line)
			sent = append(sent, line)
		}
	}
	return sent
}

// waitIndexWarm waits until the recent-intent index answers a preview of
// token's subject alone (oncegate_amnesia_guard_answers_total{by="index"}
// grows): the gateway has heard the fast-path epoch and a claim of the
// subject has warmed the index from the truth. A preview writes nothing,
// so while the truth answers it confirms one more operation, whose claim
// warms the index in the background — done before a count that follows.
func (c *storeCounts) waitIndexWarm(t *testing.T, token string) {
	t.Helper()
	fromIndex := func() int64 {
		m := regexp.MustCompile(`(?m)^oncegate_amnesia_guard_answers_total\{by="index"\} (\S+)$`).
			FindStringSubmatch(scrape(t, c.s.GatewayURL+"/metrics"))
		if m == nil {
			return 0
		}
		f, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return int64(f)
	}
	nudge := 0
	require.NoError(t, testenv.WaitFor(context.Background(), 30*time.Second, func(context.Context) error {
		before := fromIndex()
		previewOK(t, c.s, token, "payments.legacy_transfer", transferParams("84.00"))
		if fromIndex() == before {
			nudge++
			params := transferParams(fmt.Sprintf("%d.01", 100+nudge))
			fp, id := previewOK(t, c.s, token, "payments.transfer", params)
			confirmUntilTerminal(t, c.s, token, "payments.transfer", fp, id, params)
			return fmt.Errorf("the truth answered the guard")
		}
		return nil
	}))
}

// TestFirstConfirmRoundTrips counts what one first confirm costs the
// stores, end to end: 2 Redis round trips (the claim: the acquire script
// and the recent-intent index's write, pipelined; the finalize, by the
// Execute activity) and 2 PostgreSQL statements (the claim's insert, the
// finalize). The gateway's claim is the claim (the workflow reads it, no
// second insert) and the fast path is finalized once (by the workflow, not
// refilled by the answer) — with a spend budget to check and reserve too
// (claim_operation: one statement). Its answer comes from the outcome feed:
// the finalize script's announcement, not a long poll of the workflow.
func TestFirstConfirmRoundTrips(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: limitsFile(t, `
budgets:
  - {name: alice-daily-usd, subject: alice, currency: USD, daily: 1000000, monthly: 2000000}
`)})
	c := newStoreCounts(t, s)
	tc := s.Temporal.Client(t)
	confirmOnce := func(amount string) (id string, n counts, monitored int) {
		params := transferParams(amount)
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params) // outside the count
		c.monitor(t)
		ran := c.statements(t)
		before := c.read(t, true)
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
		require.Equal(t, "completed", done.str("status"), done.String())
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var result operation.Final
		require.NoError(t, tc.GetWorkflow(wctx, id, "").Get(wctx, &result), "the workflow (and its finalize) is done")
		monitored = len(c.monitored(t))
		after := c.read(t, false)
		for q, n := range c.statements(t) {
			if n > ran[q] {
				t.Logf("truth: %d× %.160s", n-ran[q], strings.Join(strings.Fields(q), " "))
			}
		}
		n = counts{pg: after.pg - before.pg, // the readings run on another database
			redisTrips: after.redisTrips - before.redisTrips, redisCommands: after.redisCommands - before.redisCommands}
		return id, n, monitored
	}
	_, _, _ = confirmOnce("81.00") // warm: pools connected, scripts loaded
	c.waitIndexWarm(t, "dev-alice")
	reservedBefore := reserved(t, s, "alice", "USD")
	// The gateway's Temporal calls, as its SDK client counts them.
	temporalCalls := func() map[string]float64 {
		out := map[string]float64{}
		for _, op := range []string{"StartWorkflowExecution", "DescribeWorkflowExecution", "GetWorkflowExecutionHistory"} {
			match := `operation="` + op + `"`
			out[op] = metricValue(t, s.GatewayURL+"/metrics", "temporal_request", match) +
				metricValue(t, s.GatewayURL+"/metrics", "temporal_long_request", match)
		}
		return out
	}
	fedBefore := metricValue(t, s.GatewayURL+"/metrics", "oncegate_confirm_waits_total", `by="feed"`)
	callsBefore := temporalCalls()
	id, n, monitored := confirmOnce("82.00")
	callsAfter := temporalCalls()
	t.Logf("one first confirm: %d Redis round trips (%d commands), %d truth statements", n.redisTrips, n.redisCommands, n.pg)
	for op, want := range map[string]float64{"StartWorkflowExecution": 1, "DescribeWorkflowExecution": 0, "GetWorkflowExecutionHistory": 0} {
		assert.Equal(t, want, callsAfter[op]-callsBefore[op],
			"the gateway's %s calls: the start alone (the outcome feed told the outcome, no long poll)", op)
	}
	assert.Equal(t, fedBefore+1, metricValue(t, s.GatewayURL+"/metrics", "oncegate_confirm_waits_total", `by="feed"`),
		"the outcome feed told the outcome")
	assert.EqualValues(t, 2, n.redisTrips, "Redis: the claim (with the index's write) and the finalize")
	assert.EqualValues(t, 3, n.redisCommands, "the acquire and index scripts, the finalize script")
	assert.EqualValues(t, monitored, n.redisCommands, "Redis saw what the processes counted")
	assert.LessOrEqual(t, n.pg, int64(2), "PostgreSQL: the claim and the finalize")
	assert.Positive(t, n.pg)
	var before, after, spent apd.Decimal
	_, _, err := before.SetString(reservedBefore)
	require.NoError(t, err)
	_, _, err = after.SetString(reserved(t, s, "alice", "USD"))
	require.NoError(t, err)
	_, err = apd.BaseContext.Sub(&spent, &after, &before)
	require.NoError(t, err)
	assert.Zero(t, spent.Cmp(apd.New(82, 0)), "the confirm reserved its amount with its claim: %s", spent.String())

	// What its workflow wrote beyond the bare workflow's events: the
	// fast-confirm version marker with its TemporalChangeVersion update and
	// IdemState=DONE (the Execute activity finalized the outcome: no local
	// finalize, no marker of it). IN_FLIGHT is the starter's; each update
	// is a visibility write.
	var written []string
	for _, ev := range history(t, tc, id) {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			written = append(written, "marker "+ev.GetMarkerRecordedEventAttributes().GetMarkerName())
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			for k := range ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields() {
				written = append(written, "upsert "+k)
			}
		}
	}
	assert.Equal(t, []string{"marker Version", "upsert TemporalChangeVersion", "upsert " + workflows.SearchAttrState},
		written, "a first confirm's markers and search attribute updates")
}

// TestPreviewRoundTrips: a preview answers the amnesia guard from Redis's
// recent-intent index alone once the subject's index is warm: one Redis
// command and no PostgreSQL statement for an intent never confirmed, two
// commands (the index, the operation's record) for one that completed.
func TestPreviewRoundTrips(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	c := newStoreCounts(t, s)
	done := transferParams("83.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", done)
	require.Equal(t, "completed", confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, done).str("status"))
	c.waitIndexWarm(t, "dev-alice")

	for name, tc := range map[string]struct {
		scope        string
		params       map[string]any
		commands     int64
		wantRecentOf string
	}{
		"an intent never confirmed": {scope: "payments.legacy_transfer", params: transferParams("85.00"), commands: 1},
		"a completed intent":        {scope: "payments.transfer", params: done, commands: 2, wantRecentOf: id},
	} {
		t.Run(name, func(t *testing.T) {
			before := c.read(t, true)
			a := call(t, "POST", s.GatewayURL+"/v1/actions/"+tc.scope+"/preview", "dev-alice", map[string]any{"params": tc.params})
			require.Equal(t, "preview_ready", a.str("status"), a.String())
			after := c.read(t, false)
			recent, _ := a.Body["recent_operation"].(map[string]any)
			if tc.wantRecentOf == "" {
				assert.Nil(t, recent)
			} else {
				require.NotNil(t, recent, a.String())
				assert.Equal(t, tc.wantRecentOf, recent["operation_id"])
				assert.Equal(t, "completed", recent["state"])
			}
			assert.EqualValues(t, 0, after.pg-before.pg, "no PostgreSQL statement")
			assert.EqualValues(t, tc.commands, after.redisCommands-before.redisCommands)
			assert.EqualValues(t, tc.commands, after.redisTrips-before.redisTrips)
		})
	}
}
