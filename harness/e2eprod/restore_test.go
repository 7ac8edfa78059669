package e2eprod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// settled is an operation an agent followed to its end, with when it
// learned the outcome.
type settled struct {
	outcome
	scope string
	prm   map[string]any
	fp    string
	at    time.Time
}

// run previews and confirms one operation, follows it to its end and
// returns it with the time its outcome arrived.
func (p *profile) run(ctx context.Context, gw int, scope string, prm map[string]any) settled {
	s := settled{scope: scope, prm: prm}
	fp, id, err := p.tryPreview(ctx, gw, scope, prm)
	if err != nil {
		s.Err = err
		return s
	}
	s.fp = fp
	s.outcome = p.settle(ctx, gw, scope, fp, id, prm)
	s.at = time.Now()
	return s
}

// tryPreview previews on gateway gw, resending what may be resent.
func (p *profile) tryPreview(ctx context.Context, gw int, scope string, prm map[string]any) (fp, id string, err error) {
	for ctx.Err() == nil {
		a, err := send(http.MethodPost, p.gateways[gw]+"/v1/actions/"+scope+"/preview", p.alice(), map[string]any{"params": prm})
		switch {
		case err != nil || a.str("status") == "temporarily_unavailable":
			gw = (gw + 1) % len(p.gateways)
			time.Sleep(300 * time.Millisecond)
		case a.str("status") == "preview_ready":
			return a.str("fingerprint"), a.str("operation_id"), nil
		default:
			return "", "", fmt.Errorf("preview: %s", a)
		}
	}
	return "", "", ctx.Err()
}

// confirmPending confirms a payout and waits until the gateway reports
// the downstream's pending state: accepted, its outcome later.
func (p *profile) confirmPending(t *testing.T, prm map[string]any) settled {
	t.Helper()
	fp, id := p.previewOn(t, p.gateways[0], "payments.payout", prm)
	c, err := p.confirmOn(p.gateways[0], "payments.payout", fp, prm)
	require.NoError(t, err)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := must(t, http.MethodGet, p.gateways[1]+"/v1/operations/"+id, p.alice(), nil)
		if st.str("downstream_state") == "pending" {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "payout %s never reported pending: %s", id, st)
		time.Sleep(200 * time.Millisecond)
	}
	return settled{outcome: outcome{ID: id}, scope: "payments.payout", prm: prm, fp: fp}
}

// TestRestoreDrill: the truth is backed up (scripts/prod.sh backup) in the
// middle of a load; more operations run and end after it; then the truth
// database is dropped and the Redis Cluster emptied — both lost — and
// `scripts/prod.sh restore` brings the truth back from the dump and writes
// back what Temporal knows since (oncegate-rebuild). Then:
//   - every operation acknowledged before the backup replays its first
//     outcome (same status and result_ref) on a confirm, and the amnesia
//     guard still names it;
//   - every operation that ended after the backup (only Temporal's history
//     held it) replays its first outcome too;
//   - a payout in flight at the backup and one started after it, both
//     pending through the loss, complete once; an operation that went to
//     manual review after the backup waits for a person again, who
//     decides it;
//   - no downstream execution happened twice (or at all for a refusal),
//     and the truth holds each operation as its workflow ended it.
func TestRestoreDrill(t *testing.T) {
	p := loadProfile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Payouts stay pending long enough to live through the loss and the restore.
	p.setFaults(t, map[string]any{"payout_settle_ms": 45000})
	t.Cleanup(func() { p.setFaults(t, nil) })

	var before []settled
	for i, scope := range []string{"payments.transfer", "payments.legacy_transfer", "payments.mcp_transfer", "payments.transfer"} {
		before = append(before, p.run(ctx, i%2, scope, params(fmt.Sprintf("%d.25", 40+i))))
	}
	before = append(before, p.run(ctx, 0, "payments.transfer", params("20000.00"))) // refused: above the simulator's limit
	inFlightAtBackup := p.confirmPending(t, params("61.00"))

	// The load runs on while the backup is taken.
	var (
		mu   sync.Mutex
		load []settled
		wg   sync.WaitGroup
	)
	for a := range 3 {
		wg.Go(func() {
			for i := range 4 {
				s := p.run(ctx, a%2, "payments.transfer", params(fmt.Sprintf("%d.%02d", 70+i, a)))
				mu.Lock()
				load = append(load, s)
				mu.Unlock()
			}
		})
	}
	time.Sleep(3 * time.Second)
	backup := filepath.Join(t.TempDir(), "truth.dump")
	backupStarted := time.Now()
	out, err := exec.Command(filepath.Join(p.root, "scripts", "prod.sh"), "backup", backup).CombinedOutput()
	require.NoError(t, err, "%s", out)
	backupDone := time.Now()
	t.Logf("%s", out)
	wg.Wait()
	// After the backup: operations of every kind end (one refused), one
	// waits for a person, and a payout is left pending.
	for i, scope := range []string{"payments.transfer", "payments.legacy_transfer", "payments.mcp_legacy_transfer", "payments.payout"} {
		load = append(load, p.run(ctx, i%2, scope, params(fmt.Sprintf("%d.75", 80+i))))
	}
	load = append(load, p.run(ctx, 1, "payments.mcp_transfer", params("30000.00")))
	p.setFaults(t, map[string]any{"payout_settle_ms": 45000, "hang_after_commit_ms": 20000, "status_unavailable": true})
	review := p.run(ctx, 0, "payments.legacy_transfer", params("63.00"))
	require.NoError(t, review.Err)
	require.Equal(t, "needs_manual_review", review.Status, "a legacy transfer whose answer and status never came")
	p.setFaults(t, map[string]any{"payout_settle_ms": 45000})
	startedAfter := p.confirmPending(t, params("62.00"))

	// Sorted by when their outcome arrived: before the backup began, or
	// after it ended (an outcome during the dump may be in it or not).
	acked, after := before, []settled{}
	for _, s := range load {
		require.NoError(t, s.Err)
		switch {
		case s.at.Before(backupStarted):
			acked = append(acked, s)
		case s.at.After(backupDone):
			after = append(after, s)
		}
	}
	for _, s := range acked {
		require.NoError(t, s.Err)
	}
	require.GreaterOrEqual(t, len(after), 5, "operations ended after the backup")
	t.Logf("%d operations acknowledged before the backup, %d ended after it", len(acked), len(after))

	// Lost: the truth database and everything in Redis.
	t.Log("dropping the truth database and emptying the Redis Cluster")
	p.psql(t, "postgres", "DROP DATABASE oncegate WITH (FORCE)")
	for _, addr := range strings.Split(p.env["REDIS_ADDRS"], ",") {
		_ = p.redis(t, addr).FlushAll(ctx).Err() // a replica refuses (READONLY); its master's flush reaches it
	}

	out, err = exec.Command(filepath.Join(p.root, "scripts", "prod.sh"), "restore", backup).CombinedOutput()
	require.NoError(t, err, "prod.sh restore:\n%s", out)
	t.Logf("%s", out)

	for _, group := range []struct {
		name string
		ops  []settled
	}{{"acknowledged before the backup", acked}, {"ended after the backup", after}} {
		for _, s := range group.ops {
			again := p.settle(ctx, 1, s.scope, s.fp, s.ID, s.prm)
			require.NoError(t, again.Err)
			assert.Equal(t, s.Status, again.Status, "%s %s replays its first outcome", group.name, s.ID)
			assert.Equal(t, s.Ref, again.Ref, "%s %s replays its first result_ref", group.name, s.ID)
		}
	}
	// The amnesia guard reads the restored truth.
	first := acked[0]
	a := must(t, http.MethodPost, p.gateways[1]+"/v1/actions/"+first.scope+"/preview", p.alice(), map[string]any{"params": first.prm})
	require.Equal(t, "preview_ready", a.str("status"), a.String())
	recent, _ := a.Body["recent_operation"].(map[string]any)
	assert.Equal(t, first.ID, recent["operation_id"], "the re-preview names the operation restored from the backup: %s", a)

	// The review restored from Temporal waits for a person, who decides it.
	st := must(t, http.MethodGet, p.gateways[0]+"/v1/operations/"+review.ID, p.alice(), nil)
	require.Equal(t, "needs_manual_review", st.str("status"), st.String())
	rec := must(t, http.MethodGet, p.env["DOWNSTREAM_URL"]+"/legacy/transfers?client_reference="+review.ID, "", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.String())
	res := must(t, http.MethodPost, p.gateways[1]+"/v1/ops/operations/"+review.ID+"/resolve", p.env["ONCEGATE_OPS_TOKEN"],
		map[string]any{"outcome": "completed", "result": json.RawMessage(rec.Raw), "note": "restore drill: found in the downstream's records"})
	require.Equal(t, http.StatusOK, res.Code, res.String())
	review.outcome = p.settle(ctx, 0, review.scope, review.fp, review.ID, review.prm)
	require.NoError(t, review.Err)
	require.Equal(t, "completed", review.Status)

	for _, s := range []settled{inFlightAtBackup, startedAfter} {
		done := p.settle(ctx, 0, s.scope, s.fp, s.ID, s.prm)
		require.NoError(t, done.Err)
		assert.Equal(t, "completed", done.Status, "payout %s pending through the loss completes", s.ID)
		assert.Regexp(t, `^po_[0-9a-f]{24}$`, done.Ref)
	}

	// Nothing ran twice; the truth holds what each workflow ended with.
	all := append(append(append([]settled{}, acked...), after...), inFlightAtBackup, startedAfter, review)
	conn, err := pgx.Connect(ctx, p.env["DATABASE_URL"])
	require.NoError(t, err)
	defer conn.Close(ctx)
	tc := p.temporal(t)
	for _, s := range all {
		want := 1
		if s.Status == "failed" {
			want = 0
		}
		assert.Equal(t, want, p.executions(t, s.ID), "downstream executions of %s (%s)", s.ID, s.Status)
		var state, ref string
		err := conn.QueryRow(ctx, `SELECT state, result_ref FROM write_record WHERE idem_key = $1`, s.ID).Scan(&state, &ref)
		if errors.Is(err, pgx.ErrNoRows) {
			t.Errorf("%s: no truth record after the restore", s.ID)
			continue
		}
		require.NoError(t, err)
		// A resolved review's workflow stays open a while (ResolutionGrace): Get waits for it.
		var res struct {
			State     string `json:"state"`
			ResultRef string `json:"result_ref"`
		}
		require.NoError(t, tc.GetWorkflow(ctx, s.ID, "").Get(ctx, &res))
		d, err := tc.DescribeWorkflowExecution(ctx, s.ID, "")
		require.NoError(t, err)
		require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus(), s.ID)
		assert.Equal(t, res.State, state, "%s: the truth's state is the workflow's", s.ID)
		assert.Equal(t, res.ResultRef, ref, "%s: the truth's result_ref is the workflow's", s.ID)
	}
}
