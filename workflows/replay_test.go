package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/workflows"
)

// TestReplay replays every recorded history in testdata/histories against
// the current workflow code: a non-deterministic change fails here before it
// can break a running operation.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skip("no recorded histories in testdata/histories/*.json: record them with " +
			"ONCEGATE_RECORD_HISTORIES=1 go test ./harness/e2e/ -run TestRecordHistories (see testdata/histories/README.md)")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(workflows.Operation, workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}
