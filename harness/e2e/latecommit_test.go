package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/harness/testenv"
)

// Actions of the late-commit catalog, besides the dev catalog's own.
const (
	// legacyNoWindow is payments.legacy_transfer without max_processing_time:
	// a status "not found" proves nothing for it.
	legacyNoWindow = "payments.legacy_transfer_no_window"
	// legacyShortWindow is payments.legacy_transfer with a 3s processing
	// window and no status lag, so that "not executed" is proved quickly.
	legacyShortWindow = "payments.legacy_transfer_short_window"
)

// lateCommitCatalog writes the dev catalog plus legacyNoWindow and
// legacyShortWindow, derived from its payments.legacy_transfer, to a file
// and returns its path.
func lateCommitCatalog(t *testing.T) string {
	return catalogWith(t, map[string]derivation{
		legacyNoWindow: {from: "payments.legacy_transfer", change: func(d map[string]any) {
			delete(d, "max_processing_time")
			delete(d, "status_lag")
		}},
		legacyShortWindow: {from: "payments.legacy_transfer", change: func(d map[string]any) {
			d["max_processing_time"] = "3s"
			delete(d, "status_lag")
			d["reconcile_delay"] = "1s"
		}},
	})
}

// derivation is an action copied from the dev catalog's action from, with
// change applied to its downstream.
type derivation struct {
	from   string
	change func(downstream map[string]any)
}

// catalogWith writes the dev catalog plus the derived actions (by scope)
// to a file and returns its path.
func catalogWith(t *testing.T, derived map[string]derivation) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "deployments", "catalog.dev.yaml"))
	require.NoError(t, err)
	var doc struct {
		Actions map[string]map[string]any `yaml:"actions"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	for scope, d := range derived {
		from := doc.Actions[d.from]
		require.NotNil(t, from, d.from)
		b, err := yaml.Marshal(from)
		require.NoError(t, err)
		var a map[string]any
		require.NoError(t, yaml.Unmarshal(b, &a))
		d.change(a["downstream"].(map[string]any))
		doc.Actions[scope] = a
	}
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "catalog.derived.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

// followUntil confirms and then polls the status tool until the operation
// reaches one of want, and returns every status an agent was told on the
// way (the confirm's first) and the last answer.
func followUntil(t *testing.T, s *testenv.Stack, scope, fp, id string, params map[string]any, want ...string) ([]string, answer) {
	t.Helper()
	c := confirm(t, s, "dev-alice", scope, fp, params)
	require.Less(t, c.Code, 500, c.String())
	seen := []string{c.str("status")}
	last := c
	deadline := time.Now().Add(90 * time.Second)
	for !slices.Contains(want, last.str("status")) {
		if time.Now().After(deadline) {
			t.Fatalf("operation %s never reached %v; told so far %v; last: %s", id, want, seen, last)
		}
		time.Sleep(250 * time.Millisecond)
		last = status(t, s, "dev-alice", id)
		if st := last.str("status"); st != seen[len(seen)-1] {
			seen = append(seen, st)
		}
	}
	return seen, last
}

// transferRef is the id of the transfer the simulator committed for the
// operation, read from its status endpoint.
func transferRef(t *testing.T, s *testenv.Stack, id string) string {
	t.Helper()
	resp, err := httpClient.Get(s.DownstreamURL + "/legacy/transfers?client_reference=" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var transfer struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&transfer))
	return transfer.ID
}

// TestLateCommit drives downstreams that, like real servers, commit after
// the caller gave up: a timeout is never reported as "failed, not executed".
func TestLateCommit(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{Catalog: lateCommitCatalog(t)})

	t.Run("legacy commit after the timeout completes with the late transfer", func(t *testing.T) {
		params := transferParams("40.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		// The catalog's timeout is 5s; the simulator commits 8s after receipt.
		setFaults(t, s, map[string]any{"commit_delay_ms": 8000})
		defer clearFaults(t, s)
		seen, done := followUntil(t, s, "payments.legacy_transfer", fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "failed", "no answer along the way said failed")
		require.Equal(t, "completed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, transferRef(t, s, id), done.str("result_ref"), "the late transfer's reference")
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("legacy commit seen late by the status endpoint completes", func(t *testing.T) {
		params := transferParams("41.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		// Committed 6s after receipt (after the 5s timeout), visible to the
		// status endpoint 4s later: the first status answers are 404.
		setFaults(t, s, map[string]any{"commit_delay_ms": 6000, "status_lag_ms": 4000})
		defer clearFaults(t, s)
		seen, done := followUntil(t, s, "payments.legacy_transfer", fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "failed", "no answer along the way said failed")
		require.Equal(t, "completed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, transferRef(t, s, id), done.str("result_ref"))
		assert.Equal(t, 1, executions(t, s, id))
	})

	t.Run("legacy without a processing window goes to review, never failed", func(t *testing.T) {
		params := transferParams("42.00")
		fp, id := previewOK(t, s, "dev-alice", legacyNoWindow, params)
		setFaults(t, s, map[string]any{"commit_delay_ms": 8000})
		defer clearFaults(t, s)
		seen, done := followUntil(t, s, legacyNoWindow, fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "failed")
		assert.Equal(t, "needs_manual_review", done.str("status"), "told %v; last %s", seen, done)
		waitExecutions(t, s, id, 1) // the late commit happened: "not found" was right to prove nothing
	})

	t.Run("honouring downstream that commits then answers 500 is retried with the same key", func(t *testing.T) {
		params := transferParams("43.00")
		fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
		setFaults(t, s, map[string]any{"fail_after_commit": 1})
		defer clearFaults(t, s)
		seen, done := followUntil(t, s, "payments.transfer", fp, id, params, "completed", "failed", "needs_manual_review")
		assert.NotContains(t, seen, "failed")
		require.Equal(t, "completed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, 1, executions(t, s, id))
		assert.NotEmpty(t, done.str("result_ref"))
	})

	t.Run("not executed is proved after the window, and a re-preview reports it", func(t *testing.T) {
		params := transferParams("44.00")
		fp, id := previewOK(t, s, "dev-alice", legacyShortWindow, params)
		// 503 without executing: the outcome is unknown to the workflow.
		setFaults(t, s, map[string]any{"fail_next": 1})
		defer clearFaults(t, s)
		seen, done := followUntil(t, s, legacyShortWindow, fp, id, params, "completed", "failed", "needs_manual_review")
		require.Equal(t, "failed", done.str("status"), "told %v; last %s", seen, done)
		assert.Equal(t, "not_executed", done.str("failure_kind"), done.String())
		assert.Contains(t, done.str("meaning"), "Reconciliation proved that it was not executed")
		assert.Equal(t, 0, executions(t, s, id))

		again := preview(t, s, "dev-alice", legacyShortWindow, params)
		require.Equal(t, "preview_ready", again.str("status"), again.String())
		recent, ok := again.Body["recent_operation"].(map[string]any)
		require.True(t, ok, "a failure not refused by the downstream is a recent operation: %s", again)
		assert.Equal(t, id, recent["operation_id"])
		assert.Equal(t, "failed", recent["state"])
		assert.Equal(t, "not_executed", recent["failure_kind"])
		assert.Contains(t, again.str("instruction"), "acknowledge_repeat_of")
	})

	t.Run("a business refusal is not a recent operation", func(t *testing.T) {
		params := transferParams("10000.01")
		fp, id := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
		done := confirmUntilTerminal(t, s, "dev-alice", "payments.legacy_transfer", fp, id, params)
		require.Equal(t, "failed", done.str("status"), done.String())
		assert.Equal(t, "downstream_refused", done.str("failure_kind"), done.String())
		again := preview(t, s, "dev-alice", "payments.legacy_transfer", params)
		assert.Nil(t, again.Body["recent_operation"], again.String())
	})
}
