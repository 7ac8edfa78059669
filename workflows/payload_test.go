package workflows_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// TestRecordedPayloadsKeepTheirShape decodes the Finalize inputs and the
// workflow results of every recorded history into today's types and encodes
// them again: the JSON must be the recorded one, so that no field of the
// outcome was renamed, dropped or moved into a nested object.
func TestRecordedPayloadsKeepTheirShape(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	finalizes, results := 0, 0
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		f.Close()
		require.NoError(t, err, name)
		for _, ev := range hist.GetEvents() {
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == workflows.ActivityFinalize {
				for _, p := range a.GetInput().GetPayloads() {
					assertRoundTrip[operation.FinalizeInput](t, name, p.GetData())
					finalizes++
				}
			}
			if c := ev.GetWorkflowExecutionCompletedEventAttributes(); c != nil {
				for _, p := range c.GetResult().GetPayloads() {
					assertRoundTrip[operation.Final](t, name, p.GetData())
					results++
				}
			}
		}
	}
	assert.Positive(t, finalizes)
	assert.Positive(t, results)
}

// assertRoundTrip decodes recorded into a T and checks that T encodes it back.
func assertRoundTrip[T any](t *testing.T, name string, recorded []byte) {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(recorded, &v), name)
	again, err := json.Marshal(v)
	require.NoError(t, err, name)
	assert.JSONEq(t, string(recorded), string(again), name)
}
