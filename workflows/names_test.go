package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/workflows"
)

// TestWithPlanResolvesAnInputFromBeforeThePlan decodes an input as gateways
// wrote it before the plan existed (the catalog's downstream under
// "downstream") and checks that WithPlan resolves it to the plan a gateway
// sends today, and leaves a current input alone.
func TestWithPlanResolvesAnInputFromBeforeThePlan(t *testing.T) {
	cd := catalog.Downstream{
		Endpoint: plan.Endpoint{Execute: "http://downstream/legacy/transfers", Status: "http://downstream/legacy/transfers"},
		Timeout:  5 * time.Second, Attempts: 1, ResultRef: "id", ReconcileAttempts: 5,
		Window: plan.Window{ReconcileDelay: 2 * time.Second, MaxProcessingTime: 30 * time.Second, StatusLag: 5 * time.Second},
	}
	raw, err := json.Marshal(cd)
	require.NoError(t, err)
	old := []byte(`{"operation_id":"0123456789abcdef0123456789abcdef","scope":"payments.legacy_transfer","downstream":` + string(raw) + `}`)
	var in workflows.OperationInput
	require.NoError(t, json.Unmarshal(old, &in))
	require.Empty(t, in.Downstream.Kind)

	got, err := in.WithPlan()
	require.NoError(t, err)
	assert.Equal(t, cd.Plan(), got.Downstream)
	assert.Empty(t, got.CatalogDownstream, "the activities get the plan only")
	assert.Equal(t, "http", got.Downstream.Kind, "a downstream recorded without a kind is the HTTP kind")

	again, err := got.WithPlan()
	require.NoError(t, err)
	assert.Equal(t, got, again)

	in.CatalogDownstream = json.RawMessage(`{"timeout":"five seconds"}`)
	_, err = in.WithPlan()
	assert.ErrorContains(t, err, "decode the downstream of 0123456789abcdef0123456789abcdef")
}
