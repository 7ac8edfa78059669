package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/operation"
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
