package operation_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// TestResolvedReadsAnInputFromBeforeThePlan decodes an input as gateways
// wrote it before the plan existed (the catalog's downstream under
// "downstream") and checks that Resolved resolves it to the plan a gateway
// sends today, and leaves a current input alone.
func TestResolvedReadsAnInputFromBeforeThePlan(t *testing.T) {
	cd := catalog.Downstream{
		Endpoint: plan.Endpoint{Execute: "http://downstream/legacy/transfers", Status: "http://downstream/legacy/transfers"},
		Timeout:  5 * time.Second, Attempts: 1, ResultRef: "id", ReconcileAttempts: 5,
		Window: plan.Window{ReconcileDelay: 2 * time.Second, MaxProcessingTime: 30 * time.Second, StatusLag: 5 * time.Second},
	}
	raw, err := json.Marshal(cd)
	require.NoError(t, err)
	old := []byte(`{"operation_id":"0123456789abcdef0123456789abcdef","scope":"payments.legacy_transfer","owner":"gw-1:a","downstream":` + string(raw) + `}`)
	var in operation.Input
	require.NoError(t, json.Unmarshal(old, &in))
	require.Empty(t, in.Downstream.Kind)

	got, err := in.Resolved(catalog.PlanOf)
	require.NoError(t, err)
	assert.Equal(t, cd.Plan(), got.Downstream)
	assert.Empty(t, got.CatalogDownstream, "the activities get the plan only")
	assert.Equal(t, "http", got.Downstream.Kind, "a downstream recorded without a kind is the HTTP kind")

	again, err := got.Resolved(catalog.PlanOf)
	require.NoError(t, err)
	assert.Equal(t, got, again)

	in.CatalogDownstream = json.RawMessage(`{"timeout":"five seconds"}`)
	_, err = in.Resolved(catalog.PlanOf)
	assert.ErrorContains(t, err, "decode the downstream of 0123456789abcdef0123456789abcdef")
}

// TestResolvedReadsTheOwnershipOfARecordedInput: inputs recorded before the
// ownership value said owner, truth_claimed and claimed_at at the top level.
func TestResolvedReadsTheOwnershipOfARecordedInput(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for name, tt := range map[string]struct {
		json  string
		truth operation.TruthClaim
		at    time.Time
	}{
		"single claim": {`{"operation_id":"op","owner":"gw-1:a","truth_claimed":true,"claimed_at":"2026-12-01T10:00:00Z"}`,
			operation.TruthClaimedByConfirm, at},
		"before the single claim": {`{"operation_id":"op","owner":"gw-1:a"}`, operation.TruthClaimedByWorkflow, time.Time{}},
	} {
		t.Run(name, func(t *testing.T) {
			var in operation.Input
			require.NoError(t, json.Unmarshal([]byte(tt.json), &in))
			got, err := in.Resolved(catalog.PlanOf)
			require.NoError(t, err)
			own := got.Ownership
			assert.Equal(t, "gw-1:a", own.Owner())
			assert.Equal(t, tt.truth, own.Truth())
			assert.Equal(t, tt.at, own.ClaimedAt())
			assert.Empty(t, got.RecordedOwner, "read once, into the ownership")

			// A current input keeps its ownership and writes no recorded field.
			b, err := json.Marshal(got)
			require.NoError(t, err)
			var top map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &top))
			assert.NotContains(t, top, "truth_claimed")
			assert.NotContains(t, top, "owner", "the owner travels in the ownership only")
			assert.Contains(t, top, "ownership")
			var back operation.Input
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, own, back.Ownership)
		})
	}
}

// TestOwnershipByConstruction: a confirm's claim counts the truth as
// claimed only when its store said so (the gateway reads that: its
// confirmOwnership), at the time it claimed; a takeover never does.
func TestOwnershipByConstruction(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	claimed := operation.ConfirmClaim("gw-1:a", true, at)
	assert.Equal(t, "gw-1:a", claimed.Owner())
	assert.True(t, claimed.TruthClaimed())
	assert.Equal(t, operation.RefillByWorkflow, claimed.Refiller())
	assert.Equal(t, at, claimed.ClaimedAt())
	for name, own := range map[string]operation.Ownership{
		"the workflow claims the truth": operation.ConfirmClaim("gw-1:a", false, at),
		"a takeover":                    operation.Takeover("gw-1:a"),
	} {
		assert.Equal(t, "gw-1:a", own.Owner(), name)
		assert.False(t, own.TruthClaimed(), name)
		assert.Equal(t, operation.RefillByGateway, own.Refiller(), name)
		assert.Equal(t, operation.TruthClaimedByWorkflow, own.Truth(), name)
	}
}

// TestOwnershipClaimedAs: the truth owner ClaimTruth names is the one
// finalized as, when it is another's.
func TestOwnershipClaimedAs(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	own := operation.Takeover("gw-1:a")
	assert.Equal(t, "gw-1:a", own.TruthOwner())
	assert.Equal(t, "gw-1:a", own.ClaimedAs("", at).TruthOwner(), "no owner named: the input's")
	assert.Equal(t, "gw-1:a", own.ClaimedAs("gw-1:a", at).TruthOwner())
	other := own.ClaimedAs("gw-2:b", at)
	assert.Equal(t, "gw-2:b", other.TruthOwner())
	assert.Equal(t, "gw-1:a", other.Owner(), "the fast path stays the input's owner's")
	assert.Equal(t, at, other.ClaimedAt())

	b, err := json.Marshal(other)
	require.NoError(t, err)
	assert.JSONEq(t, `{"owner":"gw-1:a","truth":"workflow","claimed_at":"2026-12-01T10:00:00Z","truth_owner":"gw-2:b"}`, string(b))
	var back operation.Ownership
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, other, back)

	assert.ErrorContains(t, json.Unmarshal([]byte(`{"owner":"x","truth":"maybe"}`), &back), `unknown truth claim "maybe"`)
}

// TestFinalizeInputOwnersOfARecordedInput: Finalize inputs recorded before
// the ownership value name the owners flat.
func TestFinalizeInputOwnersOfARecordedInput(t *testing.T) {
	var in operation.FinalizeInput
	require.NoError(t, json.Unmarshal([]byte(`{"operation_id":"op","owner":"gw-1:a","truth_owner":"gw-2:b",
		"state":"DONE","claimed_at":"2026-12-01T10:00:00Z","terminal_ttl":1}`), &in))
	own := in.Owners()
	assert.Equal(t, "gw-1:a", own.Owner())
	assert.Equal(t, "gw-2:b", own.TruthOwner())
	assert.Equal(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), own.ClaimedAt())
	assert.Equal(t, operation.StateDone, in.State)
}
