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

// TestActivityNamesAreTheMethodNames guards the activity type names that
// recorded histories hold and HistoryTimeline reads: the workflow calls its
// activities by method value and the worker registers
// *activities.Activities, so each name is a method's name, and every
// method is one of them.
func TestActivityNamesAreTheMethodNames(t *testing.T) {
	typ := reflect.TypeFor[*activities.Activities]()
	var methods []string
	for m := range typ.Methods() {
		methods = append(methods, m.Name)
	}
	assert.ElementsMatch(t, []string{
		workflows.ActivityClaimTruth,
		workflows.ActivityExecute,
		workflows.ActivityReconcile,
		workflows.ActivityMarkNeedsReview,
		workflows.ActivityFinalize,
		workflows.ActivityRecordDownstreamState,
	}, methods)
}

func TestNew(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	w := worker.New(c, "oncegate", &activities.Activities{}, sdkworker.Options{})

	assert.NotNil(t, w)
}
