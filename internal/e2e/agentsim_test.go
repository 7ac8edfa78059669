package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/cmd/agentsim/agentsim"
	"github.com/oncegate/oncegate/internal/testenv"
)

// TestAgentSimulator plays 200 scripted agent episodes (retries after lost
// answers, amnesia, free-text drift, "do it again") against the real stack
// and requires that nothing executed twice.
func TestAgentSimulator(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := agentsim.Run(ctx, agentsim.Config{
		GatewayURL:    s.GatewayURL,
		DownstreamURL: s.DownstreamURL,
		Episodes:      200,
		Seed:          7,
		Concurrency:   4,
	})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	t.Logf("agent simulator finished in %s\n%s", time.Since(start).Round(time.Millisecond), b.String())
	require.Equal(t, 200, rep.Episodes)
	require.Positive(t, rep.Operations, "no operation was checked downstream")
	require.Zero(t, rep.DuplicateExecutions, "duplicate executions: %v", rep.DuplicateOperations)
	require.Zero(t, rep.UnintendedExecutions, "unintended executions: %v", rep.UnintendedOperations)
	require.Zero(t, rep.DriftMismatches, "param_mismatch caused by drift")
	require.True(t, rep.OK(), "the report is not OK")
}
