//go:build upgradedrill

package worker

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/workflows"
)

// TestDrillReplaysTheRecordedHistories: the upgrade drill's build (-tags
// upgradedrill, run by `make test-prod`) replays every history the
// current build recorded (workflows/testdata/histories): its change sits
// behind workflow.GetVersion, so a history without the change takes the
// old branch. Removing the gate makes this fail with a non-determinism
// error.
func TestDrillReplaysTheRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "workflows", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "recorded histories in workflows/testdata/histories")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			replayer := sdkworker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(operationWorkflow(), workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}
