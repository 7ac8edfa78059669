// Package worker builds the Temporal worker that runs the operation workflow
// and its activities.
package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/workflows"
)

// New returns a worker polling taskQueue, with workflows.Operation registered
// as workflows.OperationWorkflowName and every method of acts registered as
// an activity under its method name (the workflow calls them by method
// value, which names them the same; histories record these names, see
// workflows.ActivityExecute and its siblings). The caller runs it, for
// example with Run(sdkworker.InterruptCh()).
func New(c client.Client, taskQueue string, acts *activities.Activities, opts sdkworker.Options) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, opts)
	w.RegisterWorkflowWithOptions(operationWorkflow(), workflow.RegisterOptions{Name: workflows.OperationWorkflowName})
	w.RegisterActivity(acts)
	return w
}
