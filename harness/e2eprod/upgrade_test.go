package e2eprod

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/oncegate/oncegate/harness/testenv"
)

// drillChange is the upgrade drill's workflow.GetVersion change id
// (worker/drill_on.go, ChangeUpgradeDrill; that file is compiled only with
// -tags upgradedrill, so this package cannot import its constant).
const drillChange = "upgrade-drill"

// drillBuilds are the worker builds of the drill: A is the current code;
// B has the workflow changed behind workflow.GetVersion (version 1: one
// more command); C supports version 2 as well (another command).
var drillBuilds = []struct{ name, tags, ldflags string }{
	{"worker-a", "", ""},
	{"worker-b", "upgradedrill", ""},
	{"worker-c", "upgradedrill", "-X github.com/oncegate/oncegate/worker.drillVersion=2"},
}

// drill is the upgrade drill's own gateway and workers: they run on the
// profile's servers (Temporal, PostgreSQL, the Redis Cluster, the
// simulator, all over TLS) on a task queue of their own, so that the
// profile's workers, and the tests after this one, never see the drill's
// histories.
type drill struct {
	p         *profile
	dir       string
	taskQueue string
	gateway   string
	// agents is the profile with the drill's gateway as its only one.
	agents  *profile
	env     []string
	mu      sync.Mutex
	workers map[string]*testenv.Process
}

// newDrill builds the drill's worker builds and starts its gateway.
func newDrill(t *testing.T, p *profile) *drill {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	d := &drill{p: p, dir: t.TempDir(), taskQueue: "oncegate-drill-" + hex.EncodeToString(suffix), workers: map[string]*testenv.Process{}}
	for _, b := range drillBuilds {
		args := []string{"build", "-o", filepath.Join(d.dir, b.name)}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		if b.ldflags != "" {
			args = append(args, "-ldflags", b.ldflags)
		}
		cmd := exec.Command("go", append(args, "./cmd/worker")...)
		cmd.Dir = p.root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", b.name, out)
	}
	for k, v := range p.env {
		d.env = append(d.env, k+"="+v)
	}
	d.env = append(d.env, "ONCEGATE_TASK_QUEUE="+d.taskQueue)
	tlsDir := filepath.Dir(p.env["ONCEGATE_CA_FILE"])
	d.gateway = fmt.Sprintf("https://127.0.0.1:%d", testenv.MustFreePort(t))
	gw, err := testenv.StartProcess("drill-gateway", filepath.Join(d.dir, "gateway.log"), []string{filepath.Join(p.root, "bin", "gateway")},
		append(append([]string{}, d.env...), "GATEWAY_URL="+d.gateway,
			"ONCEGATE_TLS_CERT_FILE="+filepath.Join(tlsDir, "server.pem"), "ONCEGATE_TLS_KEY_FILE="+filepath.Join(tlsDir, "server-key.pem")), nil)
	require.NoError(t, err)
	t.Cleanup(gw.Stop)
	require.NoError(t, testenv.WaitFor(context.Background(), time.Minute, func(context.Context) error {
		_, err := send(http.MethodGet, d.gateway+"/readyz", "", nil)
		return err
	}), "the drill's gateway: %s", gw.Log())
	d.agents = &profile{env: p.env, dir: p.dir, root: p.root, gateways: []string{d.gateway}, roots: p.roots, answers: map[string]int{}}
	return d
}

// start starts worker name of build with extra variables, and waits until
// it polls.
func (d *drill) start(t *testing.T, name, build string, extra ...string) {
	t.Helper()
	env := append(append([]string{}, d.env...), fmt.Sprintf("WORKER_METRICS_URL=http://127.0.0.1:%d/metrics", testenv.MustFreePort(t)))
	w, err := testenv.StartProcess(name, filepath.Join(d.dir, name+".log"), []string{filepath.Join(d.dir, build)}, append(env, extra...), nil)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	d.mu.Lock()
	d.workers[name] = w
	d.mu.Unlock()
	require.NoError(t, testenv.WaitFor(context.Background(), time.Minute, func(context.Context) error {
		if !w.Running() {
			return fmt.Errorf("%s exited: %s", name, w.Log())
		}
		if !strings.Contains(w.Log(), "worker starting") {
			return fmt.Errorf("%s not started yet", name)
		}
		return nil
	}))
	time.Sleep(2 * time.Second) // its pollers reach the server
	t.Logf("started %s (%s %v)", name, build, extra)
}

// stop stops worker name gracefully (SIGTERM: the activities it runs
// finish and their answers are recorded).
func (d *drill) stop(t *testing.T, name string) {
	t.Helper()
	d.mu.Lock()
	w := d.workers[name]
	d.mu.Unlock()
	require.True(t, w.Terminate(time.Minute), "%s stops within a minute", name)
	t.Logf("stopped %s", name)
}

// logs returns every worker's log.
func (d *drill) logs() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, w := range d.workers {
		b.WriteString(w.Log())
	}
	return b.String()
}

// replace starts worker next of build and then stops prev: one at a time,
// the fleet never without a worker.
func (d *drill) replace(t *testing.T, prev, next, build string, extra ...string) {
	t.Helper()
	d.start(t, next, build, extra...)
	d.stop(t, prev)
}

// TestUpgradeWhileBusy: operations of every action run on the drill's
// gateway — a manual review waiting for a person, payouts pending at the
// downstream, and agents sending transfers of every other action all the
// time — while its workers are replaced one at a time, twice:
//
//  1. With workflow.GetVersion on an unversioned fleet, in two steps:
//     build A (today's workflow) is replaced by build B, whose workflow
//     issues one more command behind the change "upgrade-drill", started
//     with ONCEGATE_HOLD_WORKFLOW_CHANGES=upgrade-drill (new workflows keep
//     the old branch while A and B run side by side); then the B workers
//     are replaced by B without the hold (new workflows take version 1).
//  2. With Worker Versioning's deployment versions: build C (version 2 of
//     the change) starts as the deployment version <queue>:c, is made
//     current, and the B workers are stopped; every running workflow moves
//     to C at its next task (auto-upgrade) and replays its history there.
//
// Every operation ends exactly once (one downstream execution for each
// completed one), no history holds a non-determinism failure and no worker
// logged one, and each branch of the change ran: workflows started before
// the change or under the hold took the old one, later ones version 1 and
// 2 (their marker, their memo), the last on deployment version C.
func TestUpgradeWhileBusy(t *testing.T) {
	p := loadProfile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	d := newDrill(t, p)
	tc := p.temporal(t)

	d.start(t, "a1", "worker-a")
	d.start(t, "a2", "worker-a")

	// A manual review, waiting for a person through every replacement.
	p.setFaults(t, map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})
	review := d.confirm(t, "payments.legacy_transfer", params("301.00"))
	d.waitStatus(t, review, "needs_manual_review", 3*time.Minute)
	p.setFaults(t, map[string]any{"payout_settle_ms": 40000})
	t.Cleanup(func() { p.setFaults(t, nil) })

	// Agents keep sending operations of every other action.
	var (
		mu    sync.Mutex
		outs  []outcome
		stop  atomic.Bool
		wg    sync.WaitGroup
		scope = []string{"payments.transfer", "payments.legacy_transfer", "payments.mcp_transfer", "payments.mcp_legacy_transfer"}
	)
	for a := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				o := d.agent(ctx, scope[(a+i)%len(scope)], params(fmt.Sprintf("%d.%02d", 20+i, a)))
				mu.Lock()
				outs = append(outs, o)
				mu.Unlock()
			}
		})
	}
	payouts := map[string]string{} // operation → which build started it
	payouts[d.confirm(t, "payments.payout", params("310.00"))] = "A"

	// 1. GetVersion, unversioned: A → B holding the change → B.
	d.replace(t, "a1", "b1", "worker-b", "ONCEGATE_HOLD_WORKFLOW_CHANGES="+drillChange)
	payouts[d.confirm(t, "payments.payout", params("311.00"))] = "A or B-held"
	d.replace(t, "a2", "b2", "worker-b", "ONCEGATE_HOLD_WORKFLOW_CHANGES="+drillChange)
	payouts[d.confirm(t, "payments.payout", params("312.00"))] = "B-held"
	d.replace(t, "b1", "b1v", "worker-b")
	d.replace(t, "b2", "b2v", "worker-b")
	payouts[d.confirm(t, "payments.payout", params("313.00"))] = "B"

	// 2. Deployment versions: C becomes the current version; B drains.
	deployment := d.taskQueue
	d.start(t, "c1", "worker-c", "ONCEGATE_WORKER_DEPLOYMENT="+deployment, "ONCEGATE_WORKER_BUILD_ID=c")
	d.setCurrentVersion(t, tc, deployment, "c")
	d.stop(t, "b1v")
	d.start(t, "c2", "worker-c", "ONCEGATE_WORKER_DEPLOYMENT="+deployment, "ONCEGATE_WORKER_BUILD_ID=c")
	d.stop(t, "b2v")
	payouts[d.confirm(t, "payments.payout", params("314.00"))] = "C"

	stop.Store(true)
	wg.Wait()
	p.setFaults(t, nil)
	d.resolve(t, review)

	// Every operation ends exactly once.
	all := map[string]string{review: "completed"}
	for id := range payouts {
		o := d.settleByID(ctx, t, id)
		require.NoError(t, o.Err)
		all[id] = o.Status
	}
	mu.Lock()
	for _, o := range outs {
		require.NoError(t, o.Err)
		all[o.ID] = o.Status
	}
	mu.Unlock()
	t.Logf("%d operations across the upgrades (%d by the agents, %d payouts, 1 manual review)", len(all), len(outs), len(payouts))
	// An operation may also fail for good: a downstream that took longer
	// than the catalog's timeout on this busy machine and then had no
	// record of it is proven not executed. Either way, once.
	failed := 0
	for id, status := range all {
		want := 1
		if status == "failed" {
			want, failed = 0, failed+1
			kind := p.psql(t, "oncegate", fmt.Sprintf("SELECT failure_kind FROM write_record WHERE idem_key = '%s'", id))
			assert.Contains(t, []string{"not_executed", "not_sent", "downstream_refused"}, kind, "%s failed, so nothing may have run", id)
		} else {
			assert.Equal(t, "completed", status, id)
		}
		assert.Equal(t, want, p.executions(t, id), "downstream executions of %s (%s)", id, status)
	}
	assert.LessOrEqual(t, failed, len(all)/10, "most operations complete")

	// No non-determinism anywhere.
	for id := range all {
		for _, f := range workflowTaskFailures(ctx, t, tc, id) {
			t.Errorf("%s: workflow task failed: %s", id, f)
		}
	}
	for _, marker := range []string{"nondeterministic", "TMPRL1100"} {
		assert.NotContains(t, d.logs(), marker, "a worker hit a non-determinism error")
	}

	// Each branch ran where it should.
	for id, by := range payouts {
		v, memo := drillVersion(ctx, t, tc, id)
		switch by {
		case "A":
			assert.Equal(t, -2, v, "%s started on build A: no marker", id)
		case "B-held":
			assert.Equal(t, -1, v, "%s started under the hold: the default version", id)
		case "A or B-held":
			assert.Contains(t, []int{-2, -1}, v, "%s started while A and B ran: the old branch", id)
		case "B":
			assert.Equal(t, 1, v, "%s started on B: version 1", id)
		case "C":
			assert.Equal(t, 2, v, "%s started on C: version 2", id)
			desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
			require.NoError(t, err)
			dv := desc.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion()
			assert.Equal(t, deployment, dv.GetDeploymentName(), id)
			assert.Equal(t, "c", dv.GetBuildId(), "%s ran on the current deployment version", id)
		}
		if v >= 1 {
			assert.Equal(t, float64(v), memo, "%s: the changed branch's memo", id)
		} else {
			assert.Nil(t, memo, "%s: the old branch upserts no memo", id)
		}
	}
	v, _ := drillVersion(ctx, t, tc, review)
	assert.Equal(t, -2, v, "the review started on A and was resolved on C: the old branch throughout")
}

// confirm previews and confirms an operation on the drill's gateway and
// returns its id once the gateway answered (in progress or done).
func (d *drill) confirm(t *testing.T, scope string, prm map[string]any) string {
	t.Helper()
	fp, id := d.p.previewOn(t, d.gateway, scope, prm)
	c, err := d.p.confirmOn(d.gateway, scope, fp, prm)
	require.NoError(t, err)
	require.Contains(t, []string{"in_progress", "completed"}, c.str("status"), c.String())
	return id
}

// waitStatus polls the status tool until id reaches status.
func (d *drill) waitStatus(t *testing.T, id, status string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := must(t, http.MethodGet, d.gateway+"/v1/operations/"+id, d.p.alice(), nil)
		if st.str("status") == status {
			return
		}
		require.Falsef(t, time.Now().After(deadline), "%s never reached %s: %s", id, status, st)
		time.Sleep(500 * time.Millisecond)
	}
}

// settleByID polls the status tool until the operation is terminal.
func (d *drill) settleByID(ctx context.Context, t *testing.T, id string) outcome {
	t.Helper()
	for ctx.Err() == nil {
		st := must(t, http.MethodGet, d.gateway+"/v1/operations/"+id, d.p.alice(), nil)
		if s, ok := terminal[st.str("status")]; ok && s != "needs_manual_review" {
			return outcome{ID: id, Status: s, Ref: st.str("result_ref")}
		}
		time.Sleep(time.Second)
	}
	return outcome{ID: id, Err: fmt.Errorf("%s never settled: %w", id, ctx.Err())}
}

// agent runs one operation on the drill's gateway, as the profile's agents
// do on the profile's gateways.
func (d *drill) agent(ctx context.Context, scope string, prm map[string]any) outcome {
	return d.agents.agent(ctx, 0, scope, prm)
}

// setCurrentVersion makes deployment:buildID the current version, once
// its pollers have registered it.
func (d *drill) setCurrentVersion(t *testing.T, tc client.Client, deployment, buildID string) {
	t.Helper()
	h := tc.WorkerDeploymentClient().GetHandle(deployment)
	require.NoError(t, testenv.WaitFor(context.Background(), time.Minute, func(ctx context.Context) error {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
		return err
	}), "set the current version of %s to %s", deployment, buildID)
	t.Logf("deployment %s: current version %s", deployment, buildID)
}

// resolve decides the drill's manual review as an operator who found the
// transfer in the downstream's records.
func (d *drill) resolve(t *testing.T, id string) {
	t.Helper()
	rec := must(t, http.MethodGet, d.p.env["DOWNSTREAM_URL"]+"/legacy/transfers?client_reference="+id, "", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.String())
	a := must(t, http.MethodPost, d.gateway+"/v1/ops/operations/"+id+"/resolve", d.p.env["ONCEGATE_OPS_TOKEN"],
		map[string]any{"outcome": "completed", "result": json.RawMessage(rec.Raw), "note": "upgrade drill: found in the downstream's records"})
	require.Equal(t, http.StatusOK, a.Code, a.String())
}

// workflowTaskFailures lists the workflow task failures in id's history.
func workflowTaskFailures(ctx context.Context, t *testing.T, tc client.Client, id string) []string {
	t.Helper()
	var out []string
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			out = append(out, fmt.Sprintf("%s: %s", a.GetCause(), a.GetFailure().GetMessage()))
		}
	}
	return out
}

// drillVersion returns the version id's history recorded for the drill's
// change (-2 when it has no marker of it) and its upgrade_drill memo (nil
// when none).
func drillVersion(ctx context.Context, t *testing.T, tc client.Client, id string) (int, any) {
	t.Helper()
	version := -2
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		m := ev.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "Version" {
			continue
		}
		var change string
		require.NoError(t, dc.FromPayloads(m.GetDetails()["change-id"], &change))
		if change == drillChange {
			require.NoError(t, dc.FromPayloads(m.GetDetails()["version"], &version))
		}
	}
	desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	var memo any
	if f, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()["upgrade_drill"]; ok {
		require.NoError(t, dc.FromPayload(f, &memo))
	}
	return version, memo
}
