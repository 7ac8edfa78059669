package operation_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
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

// TestOwnershipByConstruction: only an ACQUIRED claim that the truth holds
// as the confirm's own counts the truth as claimed; a takeover never does.
func TestOwnershipByConstruction(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mine := idemstore.Record{State: idemstore.StateInFlight, Owner: "gw-1:a"}
	for name, tt := range map[string]struct {
		d       idemstore.ClaimDecision
		claimed bool
	}{
		"acquired on the truth":        {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, Record: mine, TruthFound: true}, true},
		"acquired, record unknown":     {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, TruthFound: true}, true},
		"acquired on the fast path":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at}, false},
		"acquired by another owner":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-2:b", ClaimedAt: at, TruthFound: true}, false},
		"the truth another owner's":    {idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: "gw-1:a", ClaimedAt: at, Record: idemstore.Record{Owner: "gw-2:b"}, TruthFound: true}, false},
		"in flight (a takeover's)":     {idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: "gw-1:a", ClaimedAt: at, Record: mine, TruthFound: true}, false},
		"done (no confirm starts it)":  {idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone, Owner: "gw-1:a", TruthFound: true}, false},
		"param mismatch (never start)": {idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch, Owner: "gw-1:a", TruthFound: true}, false},
	} {
		t.Run(name, func(t *testing.T) {
			own := operation.ConfirmClaim("gw-1:a", tt.d)
			assert.Equal(t, "gw-1:a", own.Owner())
			assert.Equal(t, tt.claimed, own.TruthClaimed())
			if tt.claimed {
				assert.Equal(t, operation.RefillByWorkflow, own.Refiller())
				assert.Equal(t, at, own.ClaimedAt())
			} else {
				assert.Equal(t, operation.RefillByGateway, own.Refiller())
				assert.Equal(t, operation.TruthClaimedByWorkflow, own.Truth())
			}
		})
	}

	takeover := operation.Takeover("gw-3:c")
	assert.False(t, takeover.TruthClaimed(), "a takeover never counts the truth as claimed")
	assert.Equal(t, operation.RefillByGateway, takeover.Refiller())
	b, err := json.Marshal(takeover)
	require.NoError(t, err)
	assert.JSONEq(t, `{"owner":"gw-3:c","truth":"workflow"}`, string(b))
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
	assert.Equal(t, idemstore.StateDone, in.State)
}
