package e2eprod

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestProfileShape: Temporal keeps its tables in PostgreSQL, the Redis
// Cluster is healthy with at least three masters, both gateways are ready
// with Redis and PostgreSQL up.
func TestProfileShape(t *testing.T) {
	p := loadProfile(t)
	assert.Equal(t, "2", p.psql(t, "temporal", "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('executions','history_node')"),
		"Temporal's persistence tables are in PostgreSQL")
	assert.Equal(t, "1", p.psql(t, "temporal_visibility", "SELECT count(*) FROM information_schema.tables WHERE table_name = 'executions_visibility'"),
		"Temporal's SQL visibility is in PostgreSQL")

	rdb := p.redis(t, strings.Split(p.env["REDIS_ADDRS"], ",")[0])
	info, err := rdb.ClusterInfo(context.Background()).Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_state:ok")
	assert.GreaterOrEqual(t, len(masters(t, rdb)), 3)

	for _, gw := range p.gateways {
		a := must(t, http.MethodGet, gw+"/readyz", "", nil)
		assert.Equal(t, http.StatusOK, a.Code, a.String())
		assert.Equal(t, "ok", a.str("redis"), a.String())
	}
}

// psql runs one query on a database of the profile's PostgreSQL.
func (p *profile) psql(t *testing.T, db, query string) string {
	t.Helper()
	url := p.env["DATABASE_URL"] // postgres://postgres@127.0.0.1:<port>/oncegate?...
	hostPort := strings.SplitN(strings.SplitN(url, "@", 2)[1], "/", 2)[0]
	_, port, ok := strings.Cut(hostPort, ":")
	require.True(t, ok, url)
	out, err := exec.Command("runuser", "-u", "postgres", "--", "psql", "-h", "127.0.0.1", "-p", port,
		"-U", "postgres", "-d", db, "-tAc", query).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimSpace(string(out))
}

// masters returns host:port of every master of the cluster that serves slots.
func masters(t testing.TB, rdb *redis.Client) []string {
	t.Helper()
	nodes, err := rdb.ClusterNodes(context.Background()).Result()
	require.NoError(t, err)
	return testenv.ClusterMasters(nodes)
}

// TestAcrossGateways: preview on one gateway, confirm on the other, the
// duplicate confirm on the first replays the first result; one execution;
// the operation is found by search attribute in Temporal's SQL visibility.
func TestAcrossGateways(t *testing.T) {
	p := loadProfile(t)
	prm := params("12.50")
	fp, id := p.previewOn(t, p.gateways[0], "payments.transfer", prm)
	c, err := p.confirmOn(p.gateways[1], "payments.transfer", fp, prm)
	require.NoError(t, err)
	require.Equal(t, "completed", c.str("status"), c.String())
	ref := c.str("result_ref")
	require.NotEmpty(t, ref)

	again, err := p.confirmOn(p.gateways[0], "payments.transfer", fp, prm)
	require.NoError(t, err)
	assert.Equal(t, "already_completed", again.str("status"), again.String())
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, ref, again.str("result_ref"))
	st := must(t, http.MethodGet, p.gateways[0]+"/v1/operations/"+id, p.alice(), nil)
	assert.Equal(t, "completed", st.str("status"), st.String())
	assert.Equal(t, 1, p.executions(t, id))

	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := p.temporalCLI("workflow", "list", "--query", fmt.Sprintf(`IdemState="DONE" AND WorkflowId=%q`, id))
		if err == nil && strings.Contains(out, id) {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "workflow %s not listed with IdemState=DONE: %v %s", id, err, out)
		time.Sleep(300 * time.Millisecond)
	}
}

// TestConcurrentConfirms: 200 concurrent confirms of one fingerprint, half
// to each gateway: one execution, and every answer is the operation's.
func TestConcurrentConfirms(t *testing.T) {
	p := loadProfile(t)
	prm := params("33.00")
	fp, id := p.previewOn(t, p.gateways[0], "payments.transfer", prm)
	const n = 200
	var wg sync.WaitGroup
	statuses := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := p.confirmOn(p.gateways[i%2], "payments.transfer", fp, prm)
			if err != nil {
				statuses <- "transport: " + err.Error()
				return
			}
			if a.str("operation_id") != id {
				statuses <- "foreign: " + a.String()
				return
			}
			statuses <- a.str("status")
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[string]int{}
	for s := range statuses {
		counts[s]++
	}
	t.Logf("answers: %v", counts)
	for s := range counts {
		assert.Contains(t, []string{"completed", "already_completed", "in_progress"}, s)
	}
	assert.LessOrEqual(t, counts["completed"], 1, "only the call that executed it says completed")
	done := p.settle(context.Background(), 1, "payments.transfer", fp, id, prm)
	require.NoError(t, done.Err)
	assert.Equal(t, "completed", done.Status)
	assert.Equal(t, 1, p.executions(t, id))
}

// runningWorker returns which worker (worker-1 or worker-2) holds the
// operation's pending activity, from the identity Temporal recorded
// (<pid>@<host>@ by default).
func (p *profile) runningWorker(t *testing.T, id string) string {
	t.Helper()
	tc := p.temporal(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		for _, pa := range d.GetPendingActivities() {
			pid, err := strconv.Atoi(strings.SplitN(pa.GetLastWorkerIdentity(), "@", 2)[0])
			if err != nil {
				continue
			}
			for _, w := range []string{"worker-1", "worker-2"} {
				if p.pid(t, w) == pid {
					return w
				}
			}
		}
		require.Falsef(t, time.Now().After(deadline), "no pending activity of %s on a profile worker", id)
		time.Sleep(100 * time.Millisecond)
	}
}

// confirmThenKillWorker sets the simulator's faults (hang_after_commit_ms
// among them, cleared at the end of the test), confirms on gateway gw — the
// answer is in_progress — waits until the simulator executed the operation
// and holds its answer, then kills the worker running the activity with
// SIGKILL and returns its name.
func (p *profile) confirmThenKillWorker(t *testing.T, gw int, scope, fp, id string, prm, faults map[string]any) string {
	t.Helper()
	p.setFaults(t, faults)
	t.Cleanup(func() { p.setFaults(t, nil) })
	c, err := p.confirmOn(p.gateways[gw], scope, fp, prm)
	require.NoError(t, err)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	p.waitExecutions(t, id, 1)
	victim := p.runningWorker(t, id)
	p.kill(t, victim)
	return victim
}

// TestWorkerKilledMidOperation: the downstream commits and holds its
// answer; the worker running the activity is killed with SIGKILL; the other
// worker retries with the same Idempotency-Key and gets the original
// transfer: one execution.
func TestWorkerKilledMidOperation(t *testing.T) {
	p := loadProfile(t)
	prm := params("250.00")
	fp, id := p.previewOn(t, p.gateways[0], "payments.transfer", prm)
	victim := p.confirmThenKillWorker(t, 1, "payments.transfer", fp, id, prm, map[string]any{"hang_after_commit_ms": 20000})
	t.Cleanup(func() { p.start(t, victim) })
	p.setFaults(t, nil)

	done := p.settle(context.Background(), 0, "payments.transfer", fp, id, prm)
	require.NoError(t, done.Err)
	require.Equal(t, "completed", done.Status)
	assert.Equal(t, 1, p.executions(t, id), "the surviving worker finished it without a second execution")
}

// TestManualReview: a legacy downstream that ignores Idempotency-Key, its
// worker killed while the answer was held and its status endpoint down:
// the operation waits for a person; the operator resolves it through the
// ops CLI; the agent's next confirm replays the operator's result.
func TestManualReview(t *testing.T) {
	p := loadProfile(t)
	prm := params("270.00")
	fp, id := p.previewOn(t, p.gateways[0], "payments.legacy_transfer", prm)
	victim := p.confirmThenKillWorker(t, 0, "payments.legacy_transfer", fp, id, prm,
		map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})
	p.start(t, victim)

	review := p.settle(context.Background(), 1, "payments.legacy_transfer", fp, id, prm)
	require.NoError(t, review.Err)
	require.Equal(t, "needs_manual_review", review.Status)
	p.setFaults(t, nil)

	cmd := exec.Command(p.root+"/bin/oncegate-ops", "resolve", id, "--outcome", "completed",
		"--result", `{"id":"tr_manual_prod","status":"succeeded"}`, "--note", "found in the bank statement")
	// The ops CLI trusts the profile's CA the way Go programs do: SSL_CERT_FILE.
	cmd.Env = append(cmd.Environ(), "GATEWAY_URL="+p.gateways[1], "ONCEGATE_OPS_TOKEN="+p.env["ONCEGATE_OPS_TOKEN"],
		"SSL_CERT_FILE="+p.env["ONCEGATE_CA_FILE"])
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The resolution reaches the workflow by a signal: poll the status tool.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := must(t, http.MethodGet, p.gateways[0]+"/v1/operations/"+id, p.alice(), nil)
		if st.str("status") == "completed" {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "never completed after the resolution: %s", st)
		time.Sleep(200 * time.Millisecond)
	}
	done := p.settle(context.Background(), 0, "payments.legacy_transfer", fp, id, prm)
	require.NoError(t, done.Err)
	assert.Equal(t, "completed", done.Status)
	assert.Equal(t, "tr_manual_prod", done.Ref)
	assert.Equal(t, 1, p.executions(t, id))
}

// TestThroughput measures the profile without faults: 200 operations by 8
// agents over both gateways, each preview + confirm until settled. It logs
// operations per second and the agents' latency percentiles (the numbers
// docs/deploy.md's capacity arithmetic starts from) and checks exactly once.
func TestThroughput(t *testing.T) {
	p := loadProfile(t)
	eager := func() float64 {
		return p.temporalMetric(t, "activity_eager_execution", `namespace="`+p.env["TEMPORAL_NAMESPACE"]+`"`)
	}
	eagerBefore := eager()
	start := time.Now()
	outs, _ := p.load(t, 200, 8, 0, nil)
	elapsed := time.Since(start)
	p.requireExactlyOnce(t, outs)
	// The profile's server runs with eager activity execution
	// (deployments/prod-local/temporal/dynamicconfig.yaml): the worker that
	// completes a first workflow task is handed its Execute activity. The
	// server publishes its counters about once a second.
	var eagerRan float64
	require.NoError(t, testenv.WaitFor(context.Background(), 10*time.Second, func(context.Context) error {
		if eagerRan = eager() - eagerBefore; eagerRan < float64(len(outs))/2 {
			return fmt.Errorf("%v eager activity executions for %d operations", eagerRan, len(outs))
		}
		return nil
	}), "the Temporal server's activity_eager_execution at %s", p.env["TEMPORAL_METRICS_URL"])
	t.Logf("eager activity executions: %v for %d operations", eagerRan, len(outs))
	took := make([]time.Duration, 0, len(outs))
	for _, o := range outs {
		took = append(took, o.Took)
	}
	slices.Sort(took)
	pct := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
	t.Logf("throughput: %d operations in %s = %.1f operations/s with 8 agents; preview→settled p50 %s, p90 %s, p99 %s",
		len(outs), elapsed.Round(time.Millisecond), float64(len(outs))/elapsed.Seconds(),
		pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond), pct(0.99).Round(time.Millisecond))
}

// TestGatewayKilledMidLoad: agents use both gateways; gateway-1 is killed
// with SIGKILL mid-load; its agents resend to gateway-2. Every operation
// settles completed, each executed exactly once.
func TestGatewayKilledMidLoad(t *testing.T) {
	p := loadProfile(t)
	outs, told := p.load(t, 40, 6, 10, func() {
		p.kill(t, "gateway-1")
	})
	p.start(t, "gateway-1")
	p.requireExactlyOnce(t, outs)
	assert.Positive(t, told["transport_error"], "agents of gateway-1 failed over")
}

// TestTemporalRestartedMidLoad: the Temporal server is killed with SIGKILL
// mid-load and started again; confirms in the gap wait in the gateway's
// start retries or answer temporarily_unavailable and are resent. Every
// operation settles completed, each executed exactly once.
func TestTemporalRestartedMidLoad(t *testing.T) {
	p := loadProfile(t)
	outs, _ := p.load(t, 30, 4, 8, func() {
		p.kill(t, "temporal")
		p.start(t, "temporal")
	})
	p.requireExactlyOnce(t, outs)
}

// TestRedisMasterKilledMidLoad: a Redis master is killed with SIGKILL
// mid-load; its replica is promoted (the confirms of its slots run on the
// PostgreSQL path meanwhile). Every operation settles completed, each
// executed exactly once; the killed node rejoins as a replica.
func TestRedisMasterKilledMidLoad(t *testing.T) {
	p := loadProfile(t)
	addrs := strings.Split(p.env["REDIS_ADDRS"], ",")
	rdb := p.redis(t, addrs[0])
	ms := masters(t, rdb)
	require.GreaterOrEqual(t, len(ms), 3)
	// Any master but the node this test asks about the cluster.
	victim := "" // redis-N
	for i, a := range addrs[1:] {
		if victim == "" && slices.Contains(ms, a) {
			victim = fmt.Sprintf("redis-%d", i+2)
		}
	}
	require.NotEmpty(t, victim, "a master among %v", addrs[1:])
	outs, _ := p.load(t, 40, 6, 10, func() {
		p.kill(t, victim)
	})
	p.requireExactlyOnce(t, outs)

	// Its replica was promoted: three masters again without the victim.
	victimAddr := addrs[victimIndex(victim)]
	waitCluster(t, rdb, func(ms []string) bool { return len(ms) >= 3 && !slices.Contains(ms, victimAddr) })
	p.start(t, victim)
	// It rejoins as a replica.
	waitCluster(t, rdb, func(ms []string) bool {
		return len(ms) >= 3 && !slices.Contains(ms, victimAddr) && p.isReplica(t, victimAddr)
	})
}

// victimIndex returns the index in REDIS_ADDRS of component redis-N.
func victimIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "redis-"))
	return n - 1
}

// waitCluster waits until the cluster is ok and its masters satisfy ok.
func waitCluster(t *testing.T, rdb *redis.Client, ok func(masters []string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := rdb.ClusterInfo(context.Background()).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && ok(masters(t, rdb)) {
			return
		}
		require.Falsef(t, time.Now().After(deadline), "cluster never got there: %v %s", err, info)
		time.Sleep(200 * time.Millisecond)
	}
}

// isReplica reports whether the node at addr says it is a replica.
func (p *profile) isReplica(t *testing.T, addr string) bool {
	t.Helper()
	node := p.redis(t, addr)
	info, err := node.Info(context.Background(), "replication").Result()
	return err == nil && strings.Contains(info, "role:slave")
}

// TestPayoutSurvivesWorkerAndTemporalRestart: a payout the downstream
// accepted as pending; both workers are killed with SIGKILL and the Temporal
// server is killed and started again while it waits. The workflow's durable
// timers carry on: the operation completes once, with the payout.
func TestPayoutSurvivesWorkerAndTemporalRestart(t *testing.T) {
	p := loadProfile(t)
	p.setFaults(t, map[string]any{"payout_settle_ms": 8000})
	t.Cleanup(func() { p.setFaults(t, nil) })
	prm := params("280.00")
	fp, id := p.previewOn(t, p.gateways[0], "payments.payout", prm)
	c, err := p.confirmOn(p.gateways[0], "payments.payout", fp, prm)
	require.NoError(t, err)
	require.Equal(t, "in_progress", c.str("status"), "%s", c.Raw)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := must(t, http.MethodGet, p.gateways[1]+"/v1/operations/"+id, p.alice(), nil)
		if st.str("downstream_state") == "pending" {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "never reported pending: %s", st.Raw)
		time.Sleep(200 * time.Millisecond)
	}
	p.kill(t, "worker-1")
	p.kill(t, "worker-2")
	p.kill(t, "temporal")
	p.start(t, "temporal", "worker-1", "worker-2")

	done := p.settle(context.Background(), 1, "payments.payout", fp, id, prm)
	require.NoError(t, done.Err)
	require.Equal(t, "completed", done.Status)
	assert.Regexp(t, `^po_[0-9a-f]{24}$`, done.Ref)
	assert.Equal(t, 1, p.executions(t, id))
}
