package e2e

import (
	"bufio"
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/harness/testenv"
)

// TestFirstConfirmRoundTrips counts what one first confirm costs the stores,
// from the gateway and the worker together, end to end: the Redis commands
// (INFO commandstats) and the statements on the truth database
// (pg_stat_statements). The gateway's claim is the claim (the workflow
// reads it, no second insert) and the fast path is finalized once (by the
// workflow, not refilled by the answer): at most 2 and 2 — with a spend
// budget to check and reserve too (claim_operation: one statement).
func TestFirstConfirmRoundTrips(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: limitsFile(t, `
budgets:
  - {name: alice-daily-usd, subject: alice, currency: USD, daily: 1000000, monthly: 2000000}
`)})
	ctx := context.Background()

	u, err := url.Parse(s.DatabaseURL)
	require.NoError(t, err)
	truthDB := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	require.NoError(t, err)

	pgStatements := func() int64 {
		var n int64
		require.NoError(t, admin.QueryRow(ctx, `
			SELECT coalesce(sum(s.calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			WHERE d.datname = $1`, truthDB).Scan(&n))
		return n
	}
	tc := s.Temporal.Client(t)
	confirmOnce := func(amount string) (redis, pg int64) {
		params := transferParams(amount)
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params) // preview reads the truth: outside the count
		// MONITOR shows every command a client sent, and the ones a script
		// ran inside the server marked [n lua]: only the former are round trips.
		mctx, stopMonitor := context.WithCancel(ctx)
		mon := exec.CommandContext(mctx, "redis-cli", "-u", s.Redis.URL, "monitor")
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
		p0 := pgStatements()
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
		require.Equal(t, "completed", done.str("status"), done.String())
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var result idemstore.Final
		require.NoError(t, tc.GetWorkflow(wctx, id, "").Get(wctx, &result), "the workflow (and its finalize) is done")
		pg = pgStatements() - p0
		time.Sleep(300 * time.Millisecond) // the last lines reach the monitor
		stopMonitor()
		_ = mon.Wait()
		for line := range lines {
			if strings.Contains(line, " lua]") {
				continue
			}
			t.Logf("redis: %.100s", line)
			redis++
		}
		return redis, pg
	}
	confirmOnce("81.00") // warm: pools connected, scripts loaded
	redis, pg := confirmOnce("82.00")
	t.Logf("one first confirm: %d Redis commands, %d truth statements", redis, pg)
	assert.LessOrEqual(t, redis, int64(2), "Redis: the claim and the finalize")
	assert.LessOrEqual(t, pg, int64(2), "PostgreSQL: the claim and the finalize")
	assert.Positive(t, redis)
	assert.Positive(t, pg)
	assert.Equal(t, "163", reserved(t, s, "alice", "USD"), "both confirms reserved their amount with their claim")
}
