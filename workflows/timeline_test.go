package workflows_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/workflows"
)

func TestHistoryTimeline(t *testing.T) {
	f, err := os.Open("testdata/histories/legacy_needs_review_resolved.json")
	require.NoError(t, err)
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)

	entries := workflows.HistoryTimeline(hist.GetEvents())
	var events, details []string
	for _, e := range entries {
		events = append(events, e.Event)
		details = append(details, e.Detail)
		assert.False(t, e.At.IsZero())
	}
	assert.Equal(t, "workflow_started", events[0])
	assert.Equal(t, "workflow_completed", events[len(events)-1])
	all := strings.Join(details, "\n")
	assert.Contains(t, all, "Execute attempt 1 timed out")
	assert.Contains(t, all, "Reconcile attempt")
	assert.Contains(t, all, `signal resolve: completed by "ops", note found in the bank statement`)
	assert.Contains(t, all, "workflow completed: DONE tr_manual")
}
