package workflows_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// TestWorstCaseIsWhatTheWorkflowRuns runs, for every action of the dev
// catalog, the longest paths the workflow can take before it knows the
// outcome or asks a person, and compares them with the worst case that
// in_flight_ttl is checked against at load: both come from the same plan.
func TestWorstCaseIsWhatTheWorkflowRuns(t *testing.T) {
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:8090")
	cat, err := catalog.Load("../deployments/catalog.dev.yaml", 2*time.Second)
	require.NoError(t, err)
	for _, scope := range cat.Scopes() {
		action, _ := cat.Lookup(scope)
		if action.Downstream.BusinessState != nil {
			continue // a pending wait ends at completion_deadline, tested apart
		}
		t.Run(scope, func(t *testing.T) {
			longest := checkWorstCase(t, scope, action)
			assert.Greater(t, longest, action.WorstCase(0)/2, "the worst case is not wildly above what runs")
		})
	}
}

// TestGeneratedCatalogsWorstCaseIsWhatTheWorkflowRuns does the same for
// generated downstreams: honouring the key or not, with or without a status
// endpoint and a processing window, every timeout, attempt count, backoff
// and settle delay drawn at random (a fixed seed, logged). Each catalog is
// loaded from YAML, so the defaults are the catalog's own.
func TestGeneratedCatalogsWorstCaseIsWhatTheWorkflowRuns(t *testing.T) {
	const seed, catalogs = 11, 40
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	for i := range catalogs {
		yaml := generatedCatalog(rng)
		path := filepath.Join(dir, fmt.Sprintf("catalog-%02d.yaml", i))
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		cat, err := catalog.Load(path, 0)
		require.NoError(t, err, yaml)
		action, _ := cat.Lookup("gen.action")
		t.Run(fmt.Sprintf("catalog-%02d", i), func(t *testing.T) {
			longest := checkWorstCase(t, "gen.action", action)
			assert.Greater(t, longest, action.WorstCase(0)/2, "the worst case is not wildly above what runs:\n%s", yaml)
		})
	}
}

// generatedCatalog returns a catalog of one action, gen.action, whose
// downstream numbers are drawn from rng.
func generatedCatalog(rng *rand.Rand) string {
	dur := func(lo, hi time.Duration) string { // a whole number of milliseconds in [lo, hi]
		return (lo + time.Duration(rng.Int64N(int64((hi-lo)/time.Millisecond)+1))*time.Millisecond).String()
	}
	honours := rng.IntN(2) == 0
	var ds strings.Builder
	fmt.Fprintf(&ds, "      execute: http://downstream/x\n      result_ref: id\n      timeout: %s\n", dur(time.Second, 10*time.Second))
	backoff := rng.Int64N(3000)
	if backoff > 0 {
		fmt.Fprintf(&ds, "      backoff: %dms\n", backoff)
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&ds, "      backoff_max: %dms\n", backoff*(1+rng.Int64N(10)))
		}
	}
	if honours {
		fmt.Fprintf(&ds, "      honors_idempotency_key: true\n      attempts: %d\n      idempotency_key_retention: 24h\n", 1+rng.IntN(8))
	} else {
		ds.WriteString("      honors_idempotency_key: false\n      attempts: 1\n")
	}
	if rng.IntN(5) > 0 {
		fmt.Fprintf(&ds, "      status: http://downstream/x\n      reconcile_delay: %s\n      reconcile_attempts: %d\n",
			dur(0, 20*time.Second), 1+rng.IntN(5))
		if rng.IntN(3) > 0 {
			fmt.Fprintf(&ds, "      max_processing_time: %s\n", dur(time.Second, 2*time.Minute))
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&ds, "      status_lag: %s\n", dur(0, 20*time.Second))
			}
		}
	}
	return "actions:\n  gen.action:\n    description: a generated action\n" +
		"    bind:\n      amount: {type: decimal, required: true, description: an amount}\n" +
		"    fingerprint_ttl: 15m\n    in_flight_ttl: 720h\n    terminal_ttl: 720h\n" +
		"    downstream:\n" + ds.String()
}

// checkWorstCase runs the workflow of action along its longest paths —
// every execute attempt and status query taking its whole timeout without
// an answer, every retry, the settle delay, and, where a "not found" must
// wait for the processing window, the status queries until it proves
// "not executed" — asserts that none takes longer than the catalog's worst
// case (without the gateway's wait), and returns the longest.
func checkWorstCase(t *testing.T, scope string, action *catalog.Action) time.Duration {
	t.Helper()
	worst := action.WorstCase(0)
	pl := action.Downstream.Plan()
	timeout := pl.Execute.Timeout

	env, _ := newEnv(t)
	in := input(action.Downstream.HonorsIdempotencyKey)
	in.Scope, in.Downstream = scope, pl
	start := env.Now()
	var reviewAt time.Time
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).After(timeout).
		Return(operation.ExecuteResult{}, temporal.NewApplicationError("timeout", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).After(pl.StatusQuery.Timeout).
		Return(operation.ReconcileResult{}, temporal.NewApplicationError("timeout", operation.ErrTypeDownstreamUnavailable))
	env.OnActivity(a.MarkNeedsReview, mock.Anything, mock.Anything).Run(func(mock.Arguments) { reviewAt = env.Now() }).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, 24*time.Hour)
	env.ExecuteWorkflow(workflows.Operation, in)
	require.False(t, reviewAt.IsZero(), "the longest path ends in review")
	longest := reviewAt.Sub(start)
	t.Logf("%s: the workflow asked a person after %s; the catalog's worst case (without the gateway's wait) is %s", scope, longest, worst)
	assert.LessOrEqual(t, longest, worst)
	if !pl.ProvesNotExecuted() {
		return longest
	}

	env, _ = newEnv(t)
	start = env.Now()
	var failedAt time.Time
	maxAttempts := pl.StatusQuery.Attempts
	env.OnActivity(a.ClaimTruth, mock.Anything, mock.Anything).Return(inFlight, nil)
	env.OnActivity(a.Execute, mock.Anything, mock.Anything).After(timeout).
		Return(operation.ExecuteResult{}, temporal.NewApplicationError("timeout", operation.ErrTypeDownstreamUnavailable))
	// Every status query takes all its attempts: the last one answers not found.
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).After(pl.StatusQuery.Timeout).Return(
		func(ctx context.Context, _ operation.Input) (operation.ReconcileResult, error) {
			if activity.GetInfo(ctx).Attempt < int32(maxAttempts) {
				return operation.ReconcileResult{}, temporal.NewApplicationError("timeout", operation.ErrTypeDownstreamUnavailable)
			}
			return operation.ReconcileResult{Found: false}, nil
		})
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).Run(func(mock.Arguments) { failedAt = env.Now() }).Return(nil).Once()
	env.ExecuteWorkflow(workflows.Operation, in)
	require.False(t, failedAt.IsZero(), "not found proves not executed once the window passed")
	took := failedAt.Sub(start)
	t.Logf("%s: not executed proved after %s; the catalog's worst case is %s", scope, took, worst)
	assert.LessOrEqual(t, took, worst)
	return max(longest, took)
}
