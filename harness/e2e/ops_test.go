package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// transferHung is payments.transfer with one 100s attempt, so that a
// downstream that holds its answer keeps the operation IN_FLIGHT for
// longer than a minute.
const transferHung = "payments.transfer_hung"

// hungCatalog writes the dev catalog plus transferHung and returns its path.
func hungCatalog(t *testing.T) string {
	return catalogWith(t, map[string]derivation{
		transferHung: {from: "payments.transfer", change: func(d map[string]any) {
			d["timeout"], d["attempts"] = "100s", 1
		}},
	})
}

// toNeedsReview confirms a legacy transfer of amount whose worker dies
// while the downstream holds its answer and whose status endpoint is down,
// waits until it needs manual review, and returns its id.
func toNeedsReview(t *testing.T, s *testenv.Stack, amount string) string {
	t.Helper()
	params := transferParams(amount)
	fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	confirmThenKillWorker(t, s, "payments.legacy_transfer", fp, id, params, map[string]any{"hang_after_commit_ms": 20000, "status_unavailable": true})
	waitStatus(t, s, "dev-alice", id, "needs_manual_review")
	clearFaults(t, s)
	return id
}

// TestOperatorsDecideOnce: two conflicting decisions, exactly one wins; the
// other is already_resolved over HTTP and a non-zero CLI exit; a signal
// after the decision changes nothing and is shown as refused; and
// `oncegate-ops list --state in_flight --older-than 1m` finds a run stuck
// behind a hung downstream.
func TestOperatorsDecideOnce(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{Catalog: hungCatalog(t)})

	// A run stuck behind a downstream that commits and holds its answer.
	hungParams := transferParams("61.00")
	hungFP, hungID := previewOK(t, s, "dev-alice", transferHung, hungParams)
	setFaults(t, s, map[string]any{"hang_after_commit_ms": 150000})
	c := confirm(t, s, "dev-alice", transferHung, hungFP, hungParams)
	require.Equal(t, "in_progress", c.str("status"), c.String())
	hungSince := time.Now()
	waitExecutions(t, s, hungID, 1)

	// An operation waiting for a person.
	id := toNeedsReview(t, s, "62.00")

	// Two conflicting decisions at once: exactly one wins.
	bodies := []map[string]any{
		{"outcome": "completed", "result": map[string]any{"id": "tr_ops_1"}, "note": "in the bank statement",
			"evidence_url": "https://tickets.example/42"},
		{"outcome": "failed", "reason": "never arrived", "note": "bank says no"},
	}
	answers := make([]answer, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			answers[i] = call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops", b)
		})
	}
	wg.Wait()
	var won, lost answer
	for _, a := range answers {
		switch a.str("status") {
		case "resolved":
			won = a
		case "already_resolved":
			lost = a
		default:
			t.Fatalf("resolve answered %s", a)
		}
	}
	require.Equal(t, http.StatusOK, won.Code, won.String())
	require.Equal(t, http.StatusConflict, lost.Code, lost.String())
	decision := won.Body["decision"].(map[string]any)
	assert.Equal(t, "ops", decision["operator"])
	lostDecision := lost.Body["decision"].(map[string]any)
	assert.Equal(t, decision["outcome"], lostDecision["outcome"], "the refusal names the winning decision")
	assert.Contains(t, lost.str("meaning"), "by ops as "+decision["outcome"].(string))
	wantStatus := map[string]string{"completed": "completed", "failed": "failed"}[decision["outcome"].(string)]
	final := status(t, s, "dev-alice", id)
	require.Equal(t, wantStatus, final.str("status"), final.String())

	// The CLI exits non-zero on a refusal and says who decided.
	out, err := s.OpsCLI(t, "resolve", id, "--outcome", "failed", "--reason", "x", "--note", "late")
	require.Error(t, err, out)
	assert.Contains(t, out, "already_resolved")

	// A signal after the decision (the Web UI's way) changes nothing and is
	// shown as refused in the state query.
	out, err = s.TemporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalResolve,
		"--input", `{"outcome":"failed","reason":"typo","operator":"web-ui-op"}`)
	require.NoError(t, err, out)
	tc := s.Temporal.Client(t)
	require.NoError(t, testenv.WaitFor(context.Background(), 20*time.Second, func(ctx context.Context) error {
		view, err := queryState(ctx, tc, id)
		if err != nil {
			return err
		}
		for _, r := range view.Refused {
			if r.Via == operation.ViaSignal && r.Operator == "web-ui-op" && r.Why == workflows.ErrTypeAlreadyResolved {
				if strings.Contains(r.Message, "retryable") {
					return fmt.Errorf("a refusal reads as retryable: %q", r.Message)
				}
				return nil
			}
		}
		return assert.AnError
	}))
	after := status(t, s, "dev-alice", id)
	assert.Equal(t, final.str("status"), after.str("status"), "the late signal changed nothing")
	assert.Equal(t, 1, executions(t, s, id))

	// show tells what the operation is and how it went.
	out, err = s.OpsCLI(t, "show", id)
	require.NoError(t, err, out)
	for _, want := range []string{"payments.legacy_transfer", "amount", "62", "USD", "p-62.00", "decided_by", "Execute attempt 1",
		"MarkNeedsReview", "update " + workflows.UpdateResolve} {
		assert.Contains(t, out, want)
	}
	// The late signal is marked refused, not listed like a decision.
	var refusedLine string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "web-ui-op") {
			refusedLine = l
		}
	}
	assert.Contains(t, refusedLine, workflows.EventSignalRefused, out)
	assert.Contains(t, refusedLine, "already resolved", out)

	// The stuck run is found by age once it is a minute old; the decided one is not in flight.
	if wait := time.Minute - time.Since(hungSince); wait > 0 {
		time.Sleep(wait + time.Second)
	}
	out, err = s.OpsCLI(t, "list", "--state", "in_flight", "--older-than", "1m")
	require.NoError(t, err, out)
	assert.Contains(t, out, hungID)
	assert.NotContains(t, out, id)
	list := call(t, http.MethodGet, s.GatewayURL+"/v1/ops/operations?state=in_flight&older_than=1m", "dev-ops", nil)
	require.Equal(t, http.StatusOK, list.Code, list.String())
	assert.True(t, strings.Contains(string(list.Raw), hungID), list.String())
	none := call(t, http.MethodGet, s.GatewayURL+"/v1/ops/operations?state=in_flight&older_than=1h", "dev-ops", nil)
	assert.NotContains(t, string(none.Raw), hungID)
}
