package api

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// everyBodyTextKey is textData as it was: every key of bodyTexts in order,
// the ones the reply has filling the texts. The oracle of textData.
func everyBodyTextKey(r gateway.Answer) (messages.Data, string) {
	d := wordsData(r.Words)
	for _, k := range slices.Sorted(maps.Keys(bodyTexts)) {
		v, present := r.Fields[k]
		if !present {
			continue
		}
		var ok bool
		if d, ok = bodyTexts[k](d, v); !ok {
			return d, k
		}
	}
	return d, ""
}

// A value of each field the texts read, several setting the same words
// (the state, the expiry), so that the order they fill the texts in shows.
func textFieldSamples() map[string]any {
	resets := "2030-01-03T00:00:00Z"
	return map[string]any{
		"state":            operation.StateDone,
		"downstream_state": "pending",
		"result_ref":       "tr_1",
		"reason":           "insufficient_funds",
		"failure_kind":     string(operation.FailureNotExecuted),
		"expires_at":       "2030-01-01T00:00:00Z",
		"redis":            "degraded",
		"operation":        idemstore.Record{State: operation.StateFailed},
		"subject":          "alice",
		"passkey":          approval.Passkey{Subject: "bob"},
		"approval":         gateway.ApprovalView{URL: "https://a/approve", State: approval.StatePending, ExpiresAt: "2030-01-02T00:00:00Z"},
		"recent_operation": gateway.RecentView{"operation_id": "fedcba9876543210fedcba9876543210", "state": "completed", "result_ref": "tr_0", "reason": "r"},
		"limit":            gateway.LimitView{Name: "daily", Window: "daily", Currency: "USD", Max: "100", Used: "90", Left: "10", ResetsAt: &resets},
		"decision":         gateway.DecisionView{Operator: "ops", Outcome: "completed"},
	}
}

// textData fills the texts from the fields a reply has, in the order of
// their keys, as filling them from every key of bodyTexts did: for every
// set of the fields the texts read, with other fields beside them, and with
// one of wrong type.
func TestTextDataIsEveryKeyInOrder(t *testing.T) {
	t.Parallel()
	samples := textFieldSamples()
	require.ElementsMatch(t, slices.Collect(maps.Keys(bodyTexts)), slices.Collect(maps.Keys(samples)), "a sample per field the texts read")
	keys := slices.Sorted(maps.Keys(samples))
	for set := range 1 << len(keys) {
		r := gateway.Answer{Words: gateway.Words{ExpiresAt: "set before", State: "set before"}, Fields: map[string]any{"fingerprint": "f.p", "preview": gateway.PreviewView{}}}
		for i, k := range keys {
			if set&(1<<i) != 0 {
				r.Fields[k] = samples[k]
			}
		}
		want, wrong := everyBodyTextKey(r)
		got, err := textData(r)
		require.NoError(t, err)
		require.Empty(t, wrong)
		require.Equal(t, want, got, "fields %v", slices.Sorted(maps.Keys(r.Fields)))
	}
	for _, k := range keys {
		r := gateway.Answer{Fields: maps.Clone(samples)}
		r.Fields[k] = struct{}{}
		want, wrong := everyBodyTextKey(r)
		got, err := textData(r)
		assert.Equal(t, k, wrong)
		assert.ErrorContains(t, err, "body field "+k+":")
		assert.Equal(t, want, got, k)
	}
}
