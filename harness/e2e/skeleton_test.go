package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestWalkingSkeleton drives preview → confirm → replay → status over HTTP
// through the real gateway, Redis, PostgreSQL, Temporal, worker and simulator.
func TestWalkingSkeleton(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	params := map[string]any{"amount": "12.50", "currency": " usd ", "payee_id": "p-1", "memo": "rent"}

	p := preview(t, s, "dev-alice", "payments.transfer", params)
	require.Equal(t, http.StatusOK, p.Code, p.String())
	require.Equal(t, "preview_ready", p.str("status"))
	fp := p.str("fingerprint")
	require.NotEmpty(t, fp)
	opID := p.str("operation_id")
	require.Len(t, opID, 32)

	c := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	if c.str("status") == "in_progress" {
		waitStatus(t, s, "dev-alice", opID, "completed")
		c = confirm(t, s, "dev-alice", "payments.transfer", fp, params)
		require.Equal(t, "already_completed", c.str("status"), c.String())
	} else {
		require.Equal(t, http.StatusOK, c.Code, c.String())
		require.Equal(t, "completed", c.str("status"), c.String())
	}
	ref := c.str("result_ref")
	require.NotEmpty(t, ref)
	assert.Equal(t, opID, c.str("operation_id"))
	assert.NotNil(t, c.Body["result"])

	// The same confirm again, with the memo rewritten: the first result itself.
	params["memo"] = "rent, please"
	r := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, http.StatusOK, r.Code, r.String())
	assert.Equal(t, "already_completed", r.str("status"))
	assert.Equal(t, ref, r.str("result_ref"))
	assert.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, false, r.Body["retryable"])

	st := status(t, s, "dev-alice", opID)
	require.Equal(t, http.StatusOK, st.Code, st.String())
	assert.Equal(t, "completed", st.str("status"))
	assert.Equal(t, ref, st.str("result_ref"))

	// Another subject cannot see it.
	other := status(t, s, "dev-bob", opID)
	assert.Equal(t, http.StatusNotFound, other.Code, other.String())

	// The simulator executed the transfer exactly once.
	assert.Equal(t, 1, executions(t, s, opID))
}
