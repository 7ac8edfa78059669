package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/agentsim"
	"github.com/oncegate/oncegate/harness/testenv"
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
	if !rep.OK() {
		logOperations(t, s, append(append(rep.Errors, rep.Violations...), rep.DuplicateOperations...))
	}
	require.Equal(t, 200, rep.Episodes)
	require.Positive(t, rep.Operations, "no operation was checked downstream")
	require.Zero(t, rep.DuplicateExecutions, "duplicate executions: %v", rep.DuplicateOperations)
	require.Zero(t, rep.UnintendedExecutions, "unintended executions: %v", rep.UnintendedOperations)
	require.Zero(t, rep.DriftMismatches, "param_mismatch caused by drift")
	require.True(t, rep.OK(), "the report is not OK")
}

// logOperations logs every line of the gateway's, worker's and simulator's
// logs that names an operation id found in texts.
func logOperations(t *testing.T, s *testenv.Stack, texts []string) {
	ids := map[string]bool{}
	for _, txt := range texts {
		for _, id := range opIDRE.FindAllString(txt, -1) {
			ids[id] = true
		}
	}
	for _, p := range []*testenv.Process{s.Gateway, s.Worker} {
		raw, _ := os.ReadFile(p.LogPath)
		var b strings.Builder
		n := 0
		for _, line := range strings.Split(string(raw), "\n") {
			if n < 200 && (strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`)) &&
				!strings.Contains(line, "context canceled") {
				fmt.Fprintf(&b, "%s\n", line)
				n++
			}
		}
		t.Logf("%s warnings and errors:\n%s", p.Name, b.String())
	}
	for id := range ids {
		var b strings.Builder
		for _, p := range []*testenv.Process{s.Gateway, s.Worker, s.Downstream} {
			raw, _ := os.ReadFile(p.LogPath)
			for _, line := range strings.Split(string(raw), "\n") {
				if strings.Contains(line, id) {
					fmt.Fprintf(&b, "%s: %s\n", p.Name, line)
				}
			}
		}
		t.Logf("operation %s:\n%s", id, b.String())
	}
}

var opIDRE = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
