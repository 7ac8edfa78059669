package worker

import (
	"errors"
	"slices"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/workflows"
)

// Versioning is how a worker takes part in the rollout of a new build
// (docs/operators.md, "Rolling out a new build"). The worker's configuration embeds
// it, so its fields read as the worker's own.
type Versioning struct {
	// Deployment and BuildID opt the worker into Temporal's Worker
	// Versioning: it polls as the deployment version Deployment:BuildID,
	// and Temporal sends a workflow's tasks only to the workers of the
	// version it runs on. The workflows are auto-upgrade: once an operator
	// makes a new version current (`temporal worker deployment
	// set-current-version`), every running workflow moves to it at its next
	// task, replaying its history there (its changes are gated with
	// workflow.GetVersion). Both set or both unset (an unversioned worker).
	Deployment string `env:"ONCEGATE_WORKER_DEPLOYMENT"`
	// BuildID is this build's id within Deployment (ONCEGATE_WORKER_BUILD_ID).
	BuildID string `env:"ONCEGATE_WORKER_BUILD_ID"`
	// HeldChanges are workflow.GetVersion change ids whose new branch the
	// workflows this worker starts do not take yet: it records the default
	// version for them, as the previous build behaved. The first step of a
	// rolling upgrade of an unversioned fleet: while old and new workers
	// run side by side, no workflow records a change that an old worker
	// could not replay. Once every worker runs the new build, they are
	// restarted one at a time without it (ONCEGATE_HOLD_WORKFLOW_CHANGES,
	// comma-separated). Holding a change that workflows.ChangeFastConfirm
	// puts in effect holds workflows.ChangeFastConfirm too: back to its
	// default version for one of workflows.ChangesBeforeFastConfirm, to
	// version 1 for workflows.ChangeExecuteFinalizes.
	HeldChanges []string `env:"ONCEGATE_HOLD_WORKFLOW_CHANGES"`
}

// errDeploymentHalf is the configuration error of a deployment without a
// build id or the reverse.
var errDeploymentHalf = errors.New("ONCEGATE_WORKER_DEPLOYMENT and ONCEGATE_WORKER_BUILD_ID go together " +
	"(the Worker Versioning deployment version this worker polls as)")

// Validate reports a deployment without a build id, or the reverse.
func (v Versioning) Validate() error {
	if (v.Deployment == "") != (v.BuildID == "") {
		return errDeploymentHalf
	}
	return nil
}

// apply sets the SDK worker options of v: the deployment version, with
// auto-upgrade as the workflows' behaviour, and the held changes.
func (v Versioning) apply(o *sdkworker.Options) {
	if v.Deployment != "" {
		o.DeploymentOptions = sdkworker.DeploymentOptions{
			UseVersioning:             true,
			Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: v.Deployment, BuildID: v.BuildID},
			DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade,
		}
	}
	if len(v.HeldChanges) > 0 {
		held := heldChanges(v.HeldChanges)
		o.PreferredVersionProvider = func(in sdkworker.PreferredVersionProviderInput) *sdkworker.VersionPreference {
			version, ok := held[in.ChangeID]
			if !ok {
				return nil // the newest version the code supports
			}
			return &sdkworker.VersionPreference{Version: version, ClampToSupportedRange: true}
		}
	}
}

// heldChanges returns the version each held change id records: the
// default version for each of held, and for workflows.ChangeFastConfirm,
// when held names a change it puts in effect (a workflow that took it
// would take that change too), the version before that change: the default
// one for a change of workflows.ChangesBeforeFastConfirm, version 1 for
// workflows.ChangeExecuteFinalizes.
func heldChanges(held []string) map[string]workflow.Version {
	versions := make(map[string]workflow.Version, len(held)+1)
	for _, c := range held {
		versions[c] = workflow.DefaultVersion
	}
	if _, ok := versions[workflows.ChangeFastConfirm]; ok {
		return versions
	}
	switch {
	case slices.ContainsFunc(workflows.ChangesBeforeFastConfirm, func(c string) bool { return slices.Contains(held, c) }):
		versions[workflows.ChangeFastConfirm] = workflow.DefaultVersion
	case slices.Contains(held, workflows.ChangeExecuteFinalizes):
		versions[workflows.ChangeFastConfirm] = 1
	}
	return versions
}
