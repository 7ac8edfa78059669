package gatewaytest_test

import (
	"testing"

	"github.com/oncegate/oncegate/gateway/gatewaytest"
)

// TestEngine: the fake engine keeps the port's promises, as the Temporal
// engine does (engine's TestTemporalEngine runs the same suite).
func TestEngine(t *testing.T) {
	t.Parallel()
	gatewaytest.ExerciseEngine(t, gatewaytest.NewEngine(gatewaytest.Scripted))
}
