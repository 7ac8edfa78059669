package soak

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// sliceDuration is the load of the CI slice: with the stack's start, the
// settling and the audit the test takes about two and a half minutes.
const sliceDuration = 90 * time.Second

// TestSoakSlice runs the harness for sliceDuration with every fault kind
// on the schedule and asserts that the audit finds no violation. The seed
// is drawn (SOAK_SEED fixes it); a failure prints the replay command.
func TestSoakSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak slice runs the whole stack for minutes")
	}
	cfg := Config{Duration: sliceDuration, Agents: DefaultAgents, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if s := os.Getenv("SOAK_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SOAK_SEED")
		cfg.Seed = seed
	}
	r, err := Run(cfg)
	require.NoError(t, err)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	jsonPath, _, err := r.Write(filepath.Join(root, DefaultOutDir))
	require.NoError(t, err)
	t.Log(r.Markdown())
	require.NotZero(t, r.Operations, "the agents created no operation")
	require.NotEmpty(t, r.Faults, "no fault was injected")
	require.Emptyf(t, r.Violations, "the audit found violations (report %s); replay with %s", jsonPath, r.Replay)
}
