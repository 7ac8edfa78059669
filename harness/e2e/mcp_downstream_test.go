package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestMCPDownstreams drives actions whose downstream is a tool on another
// MCP server (the simulator's, over streamable HTTP): the tool that takes an
// idempotency argument is retried with the operation id in it; the one that
// does not is called once and reconciled through the status tool; a tool
// error is a definite refusal.
func TestMCPDownstreams(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{})

	for _, scope := range []string{"payments.mcp_transfer", "payments.mcp_legacy_transfer"} {
		t.Run(scope+" happy path and replay", func(t *testing.T) {
			params := transferParams("51.00")
			fp, id := previewOK(t, s, "dev-alice", scope, params)
			done := confirmUntilTerminal(t, s, "dev-alice", scope, fp, id, params)
			require.Equal(t, "completed", done.str("status"), done.String())
			assert.Regexp(t, `^tr_[0-9a-f]{24}$`, done.str("result_ref"))
			replay := confirm(t, s, "dev-alice", scope, fp, params)
			assert.Equal(t, "already_completed", replay.str("status"), replay.String())
			assert.Equal(t, done.str("result_ref"), replay.str("result_ref"))
			assert.Equal(t, 1, executions(t, s, id))
		})

		t.Run(scope+" worker killed during the tool call", func(t *testing.T) {
			params := transferParams("52.00")
			fp, id := previewOK(t, s, "dev-alice", scope, params)
			// The tool commits at once and holds its answer: the worker dies
			// inside the call.
			confirmThenKillWorker(t, s, scope, fp, id, params, map[string]any{"hang_after_commit_ms": 20000})
			clearFaults(t, s)
			done := waitStatus(t, s, "dev-alice", id, "completed", "failed", "needs_manual_review")
			require.Equal(t, "completed", done.str("status"), done.String())
			assert.Equal(t, 1, executions(t, s, id), "retried with the same key, or reconciled through the status tool")
		})

		t.Run(scope+" tool error ends failed", func(t *testing.T) {
			params := transferParams("10000.01")
			fp, id := previewOK(t, s, "dev-alice", scope, params)
			done := confirmUntilTerminal(t, s, "dev-alice", scope, fp, id, params)
			require.Equal(t, "failed", done.str("status"), done.String())
			assert.Equal(t, "insufficient_funds", done.str("reason"))
			assert.Equal(t, "downstream_refused", done.str("failure_kind"))
			assert.Equal(t, 0, executions(t, s, id))
		})
	}
}
