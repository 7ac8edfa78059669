package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/workflows"
)

// TestVersioningOptions: a deployment and a build id make a versioned,
// auto-upgrade worker, and go together; a held change records the default
// version for new executions while every other change takes the newest;
// holding a change that fast-confirm puts in effect holds fast-confirm
// back to the version before it.
func TestVersioningOptions(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x"}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	c, err := ConfigFromEnv(base)
	require.NoError(t, err)
	o := c.Options()
	assert.False(t, o.DeploymentOptions.UseVersioning, "unversioned unless configured")
	assert.Nil(t, o.PreferredVersionProvider, "nothing held unless configured")

	c, err = ConfigFromEnv(with("ONCEGATE_WORKER_DEPLOYMENT", "oncegate", "ONCEGATE_WORKER_BUILD_ID", "b42",
		"ONCEGATE_HOLD_WORKFLOW_CHANGES", "change-a,change-b"))
	require.NoError(t, err)
	o = c.Options()
	assert.Equal(t, sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: "oncegate", BuildID: "b42"},
		DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade,
	}, o.DeploymentOptions)
	require.NotNil(t, o.PreferredVersionProvider)
	for _, id := range []string{"change-a", "change-b"} {
		pref := o.PreferredVersionProvider(sdkworker.PreferredVersionProviderInput{ChangeID: id, MinSupported: workflow.DefaultVersion, MaxSupported: 2})
		require.NotNil(t, pref, id)
		assert.Equal(t, workflow.DefaultVersion, pref.Version, "%s is held: the old branch", id)
	}
	assert.Nil(t, o.PreferredVersionProvider(sdkworker.PreferredVersionProviderInput{ChangeID: "change-c", MaxSupported: 1}),
		"a change not held takes the newest version")

	assert.Nil(t, o.PreferredVersionProvider(sdkworker.PreferredVersionProviderInput{ChangeID: workflows.ChangeFastConfirm, MaxSupported: 1}),
		"holding changes fast-confirm does not put in effect leaves it alone")

	// fast-confirm's version 1 puts every earlier change in effect: holding
	// one of them holds it too.
	for _, held := range workflows.ChangesBeforeFastConfirm {
		c, err = ConfigFromEnv(with("ONCEGATE_HOLD_WORKFLOW_CHANGES", held))
		require.NoError(t, err)
		pref := c.Options().PreferredVersionProvider(sdkworker.PreferredVersionProviderInput{
			ChangeID: workflows.ChangeFastConfirm, MinSupported: workflow.DefaultVersion, MaxSupported: 1})
		require.NotNil(t, pref, held)
		assert.Equal(t, workflow.DefaultVersion, pref.Version, "holding %s holds %s", held, workflows.ChangeFastConfirm)
	}

	// fast-confirm's version 2 puts execute-finalizes in effect: holding it
	// holds fast-confirm at version 1, and holding an earlier change too
	// holds it at its default.
	for held, want := range map[string]workflow.Version{
		workflows.ChangeExecuteFinalizes:                                     1,
		workflows.ChangeExecuteFinalizes + "," + workflows.ChangeSingleClaim: workflow.DefaultVersion,
		workflows.ChangeExecuteFinalizes + "," + workflows.ChangeFastConfirm: workflow.DefaultVersion,
	} {
		c, err = ConfigFromEnv(with("ONCEGATE_HOLD_WORKFLOW_CHANGES", held))
		require.NoError(t, err)
		pref := c.Options().PreferredVersionProvider(sdkworker.PreferredVersionProviderInput{
			ChangeID: workflows.ChangeFastConfirm, MinSupported: workflow.DefaultVersion, MaxSupported: 2})
		require.NotNil(t, pref, held)
		assert.Equal(t, want, pref.Version, "holding %s", held)
	}

	for _, half := range [][]string{{"ONCEGATE_WORKER_DEPLOYMENT", "oncegate"}, {"ONCEGATE_WORKER_BUILD_ID", "b42"}} {
		_, err := ConfigFromEnv(with(half...))
		assert.ErrorIs(t, err, errDeploymentHalf, half[0])
	}
}
