package worker_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

// TestActivityNamesAreMethods guards the names the workflow calls its
// activities by: each must be a method of *activities.Activities, which the
// worker registers under the method's name.
func TestActivityNamesAreMethods(t *testing.T) {
	typ := reflect.TypeFor[*activities.Activities]()
	for _, name := range []string{
		workflows.ActivityClaimTruth,
		workflows.ActivityExecute,
		workflows.ActivityReconcile,
		workflows.ActivityMarkNeedsReview,
		workflows.ActivityFinalize,
	} {
		_, ok := typ.MethodByName(name)
		assert.True(t, ok, "activities.Activities has no method %s", name)
	}
}

func TestNew(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	w := worker.New(c, workflows.TaskQueue, &activities.Activities{}, sdkworker.Options{})

	assert.NotNil(t, w)
}
