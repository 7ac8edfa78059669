package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// TestResponsesCountedByStatus: each answer counts one on
// oncegate_responses_total of its status, and only the statuses answered
// are exported.
func TestResponsesCountedByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.srv.Handler()
	answers := []struct {
		method, path, body string
		want               status.Status
	}{
		{"POST", "/v1/actions/payments.legacy_transfer/preview", `{"params":` + transferParams + `}`, status.PreviewReady},
		{"POST", "/v1/actions/no.such/preview", `{"params":{}}`, status.UnknownAction},
		{"POST", "/v1/actions/payments.legacy_transfer/preview", `{"params":` + transferParams + `}`, status.PreviewReady},
		{"GET", "/v1/nowhere", "", status.NotFound},
		{"POST", "/v1/actions/payments.legacy_transfer/preview", `{"params":` + transferParams + `}`, status.PreviewReady},
	}
	counted := map[status.Status]float64{}
	for _, a := range answers {
		st, raw := serveBench(t, h, benchRequest(a.method, a.path, a.body))
		require.Equal(t, a.want, st, string(raw))
		counted[st]++
		assert.InDelta(t, counted[st], counterValue(t, b.srv.responses.WithLabelValues(string(st))), 0, "%s", st)
	}
	families, err := b.reg.Gather()
	require.NoError(t, err)
	exported := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "oncegate_responses_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			exported[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{"preview_ready": 3, "unknown_action": 1, "not_found": 1}, exported)
}
