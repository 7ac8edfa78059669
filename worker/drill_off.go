//go:build !upgradedrill

package worker

import "github.com/oncegate/oncegate/workflows"

// operationWorkflow is the operation workflow this build registers:
// workflows.Operation (the upgrade drill's builds, -tags upgradedrill,
// register it behind a test-only change; see drill_on.go).
func operationWorkflow() any { return workflows.Operation }
