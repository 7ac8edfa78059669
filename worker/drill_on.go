//go:build upgradedrill

package worker

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// This file is compiled only with -tags upgradedrill: the upgrade drill of
// the production-like profile (harness/e2eprod, TestUpgradeWhileBusy)
// builds the worker so, to roll out a workflow that changed behind
// workflow.GetVersion while operations run. No other build has it.

// ChangeUpgradeDrill is the drill's workflow.GetVersion change id.
const ChangeUpgradeDrill = "upgrade-drill"

// drillVersion is the newest version of ChangeUpgradeDrill this build
// supports, set at link time (-ldflags "-X
// github.com/oncegate/oncegate/worker.drillVersion=2" for the drill's
// second build; 1 otherwise): version 1 upserts the memo upgrade_drill,
// version 2 also sleeps a millisecond — each a command the build before
// never issues, so that a history recorded by one would not replay on the
// other.
var drillVersion = "1"

// drillMaxVersion is drillVersion as a workflow.Version (1 when malformed).
var drillMaxVersion = func() workflow.Version {
	if n, err := strconv.Atoi(drillVersion); err == nil && n >= 1 {
		return workflow.Version(n)
	}
	return 1
}()

// operationWorkflow is workflows.Operation behind the drill's change.
func operationWorkflow() any { return drillOperation }

// drillOperation is workflows.Operation preceded by the drill's change.
func drillOperation(ctx workflow.Context, in operation.Input) (operation.Final, error) {
	v := workflow.GetVersion(ctx, ChangeUpgradeDrill, workflow.DefaultVersion, drillMaxVersion)
	if v >= 1 {
		if err := workflow.UpsertMemo(ctx, map[string]any{"upgrade_drill": int(v)}); err != nil {
			return operation.Final{}, err
		}
	}
	if v >= 2 {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return operation.Final{}, err
		}
	}
	return workflows.Operation(ctx, in)
}
