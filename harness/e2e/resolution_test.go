package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/resolution"
	"github.com/oncegate/oncegate/workflows"
)

// TestUnsignedResolveChangesNothing: on the real stack, a decision sent to
// Temporal directly without the gateway's resolution token — a `temporal
// workflow signal` (the Web UI's way) or the resolve Update through the SDK
// — changes nothing: the signal is shown refused, the Update is refused by
// its validator. The ops API's resolve (the gateway issues the token)
// decides it, once, under the authenticated operator.
func TestUnsignedResolveChangesNothing(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{})
	id := toNeedsReview(t, s, "63.00")
	tc := s.Temporal.Client(t)

	out, err := s.TemporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalResolve,
		"--input", `{"outcome":"completed","result":{"id":"tr_forged"},"operator":"mallory"}`)
	require.NoError(t, err, out)
	require.NoError(t, testenv.WaitFor(context.Background(), 20*time.Second, func(ctx context.Context) error {
		view, err := queryState(ctx, tc, id)
		if err != nil {
			return err
		}
		for _, r := range view.Refused {
			if r.Via == operation.ViaSignal && r.Operator == "mallory" && r.Why == workflows.ErrTypeInvalidResolution &&
				strings.Contains(r.Message, resolution.ErrMissing.Error()) {
				return nil
			}
		}
		return errors.New("the unsigned signal is not shown refused yet")
	}))

	uctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	handle, err := tc.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.UpdateResolve,
		Args:         []any{operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "never arrived", Operator: "mallory"}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = handle.Get(uctx, nil)
	}
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "the unsigned Update is refused: %v", err)
	assert.Equal(t, workflows.ErrTypeInvalidResolution, appErr.Type())
	assert.Contains(t, appErr.Message(), resolution.ErrMissing.Error())

	require.Equal(t, "needs_manual_review", status(t, s, "dev-alice", id).str("status"), "nothing changed")

	// The typed name is refused; the operator is the authenticated caller.
	typed := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops",
		map[string]any{"outcome": "completed", "result": map[string]any{"id": "tr_63"}, "operator": "mallory"})
	require.Equal(t, http.StatusBadRequest, typed.Code, typed.String())
	assert.Equal(t, "malformed_request", typed.str("status"), typed.String())
	won := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops",
		map[string]any{"outcome": "completed", "result": map[string]any{"id": "tr_63"}, "evidence_url": "https://tickets.example/63"})
	require.Equal(t, http.StatusOK, won.Code, won.String())
	require.Equal(t, "resolved", won.str("status"), won.String())
	assert.Equal(t, "ops", won.Body["decision"].(map[string]any)["operator"])
	again := call(t, http.MethodPost, s.GatewayURL+"/v1/ops/operations/"+id+"/resolve", "dev-ops",
		map[string]any{"outcome": "failed", "reason": "x"})
	require.Equal(t, http.StatusConflict, again.Code, again.String())

	final := status(t, s, "dev-alice", id)
	require.Equal(t, "completed", final.str("status"), final.String())
	out, err = s.OpsCLI(t, "show", id)
	require.NoError(t, err, out)
	var decided string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "decided_by") {
			decided = l
		}
	}
	assert.Contains(t, decided, "ops", out)
	assert.NotContains(t, decided, "mallory", out)
	view, err := queryState(context.Background(), tc, id)
	require.NoError(t, err)
	require.NotNil(t, view.Decision)
	assert.Equal(t, "ops", view.Decision.Operator, "the workflow records the token's operator")
	raw, err := json.Marshal(view.Decision)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "mallory")
}

// TestPrintedPayloadDecidesOnce: on the real stack, the resolve signal
// input that `oncegate-ops resolve --print-payload` prints, sent by the
// printed `temporal workflow signal` command line (bin/temporal), decides
// the operation once under the proven operator. The same input sent to
// another operation, with its outcome edited, or carrying a token of the
// gateway's keys issued more than resolution.TTL ago, changes nothing and
// is shown signal_refused by `oncegate-ops show`; printing decides nothing.
func TestPrintedPayloadDecidesOnce(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{})
	id := toNeedsReview(t, s, "64.00")
	other := toNeedsReview(t, s, "65.00")
	tc := s.Temporal.Client(t)

	out, err := s.OpsCLI(t, "resolve", id, "--outcome", "completed", "--result", `{"id":"tr_64"}`,
		"--note", "in the bank's statement", "--evidence-url", "https://tickets.example/64", "--print-payload")
	require.NoError(t, err, out)
	var input, command string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "input"); ok {
			input = strings.TrimSpace(v)
		}
		if strings.HasPrefix(l, "temporal workflow signal ") {
			command = l
		}
	}
	require.NotEmpty(t, input, out)
	require.NotEmpty(t, command, out)
	require.Equal(t, "needs_manual_review", status(t, s, "dev-alice", id).str("status"), "printing decides nothing")

	signal := func(target, in string) {
		t.Helper()
		out, err := s.TemporalCLI(t, "workflow", "signal", "--workflow-id", target, "--name", workflows.SignalResolve, "--input", in)
		require.NoError(t, err, out)
	}
	// Sent to another operation.
	signal(other, input)
	waitShownRefused(t, s, other, 1, resolution.ErrOtherOperation.Error())
	// Its outcome edited.
	edited := strings.Replace(input, `"outcome":"completed"`, `"outcome":"failed"`, 1)
	require.NotEqual(t, input, edited)
	signal(id, edited)
	waitShownRefused(t, s, id, 1, resolution.ErrOtherDecision.Error())
	// After expiry: the same decision, signed by the gateway's keys (the
	// gateway's signer) at a time more than resolution.TTL ago.
	receipts, err := receipt.ParseKeyring(s.ReceiptKeys)
	require.NoError(t, err)
	signer, err := resolution.SignerOf(receipts)
	require.NoError(t, err)
	var decision operation.Resolution
	require.NoError(t, json.Unmarshal([]byte(input), &decision))
	decision.Token, _, err = signer.Issue(id, "ops", decision, time.Now().Add(-resolution.TTL-time.Minute))
	require.NoError(t, err)
	expired, err := json.Marshal(decision)
	require.NoError(t, err)
	signal(id, string(expired))
	waitShownRefused(t, s, id, 2, resolution.ErrExpired.Error())
	require.Equal(t, "needs_manual_review", status(t, s, "dev-alice", id).str("status"), "nothing changed")

	// The printed command line, as an operator runs it.
	cli, err := testenv.TemporalCLI()
	require.NoError(t, err)
	sh := exec.Command("sh", "-c", command+" --address "+s.Temporal.Address+" --namespace "+s.Temporal.Namespace)
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(cli)+":"+os.Getenv("PATH"))
	shOut, err := sh.CombinedOutput()
	require.NoError(t, err, string(shOut))
	final := waitStatus(t, s, "dev-alice", id, "completed", "failed")
	require.Equal(t, "completed", final.str("status"), final.String())
	assert.Equal(t, "tr_64", final.str("result_ref"), final.String())
	view, err := queryState(context.Background(), tc, id)
	require.NoError(t, err)
	require.NotNil(t, view.Decision)
	assert.Equal(t, "ops", view.Decision.Operator, "the proven operator")
	assert.Equal(t, operation.ViaSignal, view.Decision.Via)
	out, err = s.OpsCLI(t, "show", id)
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^decided_by\s+ops$`, out)
	assert.Contains(t, out, "https://tickets.example/64")

	// Decided once: the same payload again is refused.
	signal(id, input)
	waitShownRefused(t, s, id, 3, "already resolved")
	require.Equal(t, "needs_manual_review", status(t, s, "dev-alice", other).str("status"), "the other operation is untouched")
	assert.Equal(t, 1, executions(t, s, id), "executed once, by the downstream, before the review")

	// The worker counted each refusal: three without a valid token, one
	// after the decision.
	want := map[string]float64{"signal/" + workflows.ErrTypeInvalidResolution: 3, "signal/" + workflows.ErrTypeAlreadyResolved: 1}
	var got map[string]float64
	require.NoError(t, testenv.WaitFor(context.Background(), 20*time.Second, func(context.Context) error {
		got = refusedSeries(scrape(t, s.WorkerMetricsURL))
		if !assert.ObjectsAreEqual(want, got) {
			return fmt.Errorf("%s: %v, want %v", workflows.MetricResolutionsRefused, got, want)
		}
		return nil
	}))
}

// refusedSeries sums the worker's workflows.MetricResolutionsRefused
// samples in Prometheus text by "via/why".
func refusedSeries(text string) map[string]float64 {
	out := map[string]float64{}
	label := func(series, name string) string {
		_, v, _ := strings.Cut(series, name+`="`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	for _, l := range strings.Split(text, "\n") {
		series, value, ok := strings.Cut(l, " ")
		if !ok || !strings.HasPrefix(series, workflows.MetricResolutionsRefused+"{") {
			continue
		}
		if n, err := strconv.ParseFloat(value, 64); err == nil {
			out[label(series, "via")+"/"+label(series, "why")] += n
		}
	}
	return out
}

// waitShownRefused waits until `oncegate-ops show id` lists n resolve
// signals refused, the last one saying why.
func waitShownRefused(t *testing.T, s *testenv.Stack, id string, n int, why string) {
	t.Helper()
	var last string
	err := testenv.WaitFor(context.Background(), 30*time.Second, func(context.Context) error {
		out, err := s.OpsCLI(t, "show", id)
		if err != nil {
			return fmt.Errorf("show: %w: %s", err, out)
		}
		var refused []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, workflows.EventSignalRefused) {
				refused = append(refused, l)
			}
		}
		last = out
		if len(refused) < n {
			return fmt.Errorf("%d resolve signals shown refused, want %d", len(refused), n)
		}
		if !strings.Contains(refused[n-1], why) {
			return fmt.Errorf("refused signal %d does not say %q", n, why)
		}
		return nil
	})
	require.NoError(t, err, last)
}

// queryState answers the operation workflow id's state query.
func queryState(ctx context.Context, tc client.Client, id string) (workflows.StateView, error) {
	var view workflows.StateView
	q, err := tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err != nil {
		return view, fmt.Errorf("query %s state: %w", id, err)
	}
	if err := q.Get(&view); err != nil {
		return view, fmt.Errorf("decode %s state: %w", id, err)
	}
	return view, nil
}
