package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/harness/testenv"
)

func transferParams(amount string) map[string]any {
	return map[string]any{"amount": amount, "currency": "USD", "payee_id": "p-" + amount, "memo": "e2e"}
}

// previewOK previews and returns the fingerprint and operation id.
func previewOK(t testing.TB, s *testenv.Stack, token, scope string, params map[string]any) (string, string) {
	t.Helper()
	p := preview(t, s, token, scope, params)
	require.Equal(t, http.StatusOK, p.Code, p.String())
	require.Equal(t, "preview_ready", p.str("status"), p.String())
	return p.str("fingerprint"), p.str("operation_id")
}

// confirmUntilTerminal confirms, then polls until the operation is terminal,
// and returns the terminal status answer.
func confirmUntilTerminal(t testing.TB, s *testenv.Stack, token, scope, fp, id string, params map[string]any) answer {
	t.Helper()
	c := confirm(t, s, token, scope, fp, params)
	require.Less(t, c.Code, 500, c.String())
	switch c.str("status") {
	case "completed", "failed", "already_completed", "already_failed":
		return c
	}
	require.Equal(t, "in_progress", c.str("status"), c.String())
	return waitStatus(t, s, token, id, "completed", "failed")
}

func truthRows(t testing.TB, s *testenv.Stack, id string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM write_record WHERE idem_key = $1", id).Scan(&n))
	return n
}

// Test500ConcurrentConfirms: one fingerprint, 500 concurrent confirms.
func Test500ConcurrentConfirms(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := transferParams("42.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)

	const n = 500
	var wg sync.WaitGroup
	statuses := make([]string, n)
	codes := make([]int, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			a := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
			statuses[i], codes[i] = a.str("status"), a.Code
		}(i)
	}
	close(start)
	wg.Wait()

	counts := map[string]int{}
	for i := range statuses {
		counts[statuses[i]]++
		assert.Less(t, codes[i], 500, "no 5xx: %s", statuses[i])
	}
	t.Logf("statuses: %v", counts)
	// Exactly one call claimed it: it alone answers completed (or in_progress
	// when its wait ran out); every other answer is a replay or in_progress.
	assert.LessOrEqual(t, counts["completed"], 1)
	assert.Equal(t, n, counts["completed"]+counts["already_completed"]+counts["in_progress"], "%v", counts)
	assert.Equal(t, 1, claimsAcquired(t, s), "exactly one ACQUIRED")

	waitStatus(t, s, "dev-alice", id, "completed")
	assert.Equal(t, 1, truthRows(t, s, id))
	assert.Equal(t, 1, executions(t, s, id))
}

// claimsAcquired reads the gateway's counter of ACQUIRED claims.
func claimsAcquired(t testing.TB, s *testenv.Stack) int {
	t.Helper()
	resp, err := httpClient.Get(s.GatewayURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	total := 0
	for _, line := range strings.Split(string(all), "\n") {
		if strings.HasPrefix(line, "oncegate_claims_total{") && strings.Contains(line, `decision="ACQUIRED"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err)
			total += int(v)
		}
	}
	return total
}

// noFinals turns the gateway's finished-operation cache off
// (api.EnvFinalCache=0), for the tests of what the stores answer a replay.
var noFinals = []string{api.EnvFinalCache + "=0"}

// TestFlushAllAfterDone: the truth answers a replay after Redis lost
// everything (the gateway keeping nothing, so that the store answers).
func TestFlushAllAfterDone(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: noFinals})
	params := transferParams("17.25")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	first := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", first.str("status"), first.String())
	ref := first.str("result_ref")
	require.NotEmpty(t, ref)

	rdb := s.Redis.Client()
	defer rdb.Close()
	require.NoError(t, rdb.FlushAll(context.Background()).Err())

	again := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, http.StatusOK, again.Code, again.String())
	assert.Equal(t, "already_completed", again.str("status"))
	assert.Equal(t, ref, again.str("result_ref"))
	assert.Equal(t, 1, executions(t, s, id))
	// Redis was refilled from the truth.
	state, err := rdb.HGet(context.Background(), "idem:{"+id+"}", "state").Result()
	require.NoError(t, err)
	assert.Equal(t, "DONE", state)
}

// TestRedisDown: without Redis, operations go through PostgreSQL alone,
// duplicates are still replayed; when Redis is back the fast path resumes.
func TestRedisDown(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	s.Redis.Stop()

	ready := call(t, http.MethodGet, s.GatewayURL+"/readyz", "", nil)
	ids := []string{}
	for i, amount := range []string{"3.10", "3.20", "3.30"} {
		params := transferParams(amount)
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
		require.Equal(t, "completed", done.str("status"), "operation %d: %s", i, done)
		dup := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
		assert.Equal(t, "already_completed", dup.str("status"), dup.String())
		assert.Equal(t, done.str("result_ref"), dup.str("result_ref"))
		ids = append(ids, id)
	}
	for _, id := range ids {
		assert.Equal(t, 1, executions(t, s, id))
		assert.Equal(t, 1, truthRows(t, s, id))
	}
	ready = call(t, http.MethodGet, s.GatewayURL+"/readyz", "", nil)
	assert.Contains(t, string(ready.Raw), "degraded", ready.String())

	require.NoError(t, s.Redis.Restart())
	rdb := s.Redis.Client()
	defer rdb.Close()
	// The fast path resumes: a new operation's claim appears in Redis. Each
	// attempt is a new intent (its own amount): an amount drawn twice would
	// make the second preview warn of the first operation, and its confirm
	// answer repeat_unacknowledged.
	attempt := 0
	require.NoError(t, testenv.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) error {
		attempt++
		params := transferParams(strconv.Itoa(400+attempt) + ".01")
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
		if done.str("status") != "completed" {
			return fmt.Errorf("not completed: %s", done)
		}
		if n, _ := rdb.Exists(ctx, "idem:{"+id+"}").Result(); n != 1 {
			return fmt.Errorf("operation %s not in Redis yet", id)
		}
		return nil
	}))
	ready = call(t, http.MethodGet, s.GatewayURL+"/readyz", "", nil)
	assert.Equal(t, http.StatusOK, ready.Code)
	assert.NotContains(t, string(ready.Raw), "degraded", ready.String())
}

// TestOrphanClaim: an IN_FLIGHT claim whose owner died before any workflow
// started is taken over, and the operation completes exactly once.
func TestOrphanClaim(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{"ONCEGATE_CLAIM_GRACE=1s"}})
	params := transferParams("88.80")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)

	rdb := s.Redis.Client()
	defer rdb.Close()
	hash := paramHashOf(t, fp)
	ctx := context.Background()
	key := "idem:{" + id + "}"
	require.NoError(t, rdb.HSet(ctx, key, "state", "IN_FLIGHT", "param_hash", hash, "owner", "dead-gateway:req-1",
		"subject", "alice", "scope", "payments.transfer", "claimed_at", time.Now().Add(-time.Minute).UnixMilli()).Err())
	require.NoError(t, rdb.Expire(ctx, key, 10*time.Minute).Err())

	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	require.Equal(t, "completed", done.str("status"), done.String())
	assert.Equal(t, 1, executions(t, s, id))
	again := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	assert.Equal(t, "already_completed", again.str("status"), again.String())
	assert.Equal(t, done.str("result_ref"), again.str("result_ref"))
}
