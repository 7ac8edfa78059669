package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// truthOnly is a store running on the truth alone (degraded).
type truthOnly struct{ gateway.Claims }

func (truthOnly) Degraded() bool { return true }

// TestStatusWhileDegraded: on the truth alone a status query cannot rule
// out a claim only Redis holds: an operation the truth does not know is
// temporarily_unavailable (retryable), never unknown_operation; one the
// truth knows is answered as always, and another subject's stays unknown.
func TestStatusWhileDegraded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *gateway.Deps) { d.Claims = truthOnly{d.Claims} })
	r := b.do(t, "GET", "/v1/operations/0123456789abcdef0123456789abcdef", "dev-alice", "")
	assert.Equal(t, status.TemporarilyUnavailable, r.status(), r.raw)
	assert.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
	assert.Equal(t, true, r.body["retryable"], r.raw)

	pv := b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams)
	c := b.confirm(t, "dev-alice", "payments.legacy_transfer", pv.str("fingerprint"), transferParams)
	require.Equal(t, status.Completed, c.status(), c.raw)
	assert.Equal(t, status.Completed, b.do(t, "GET", "/v1/operations/"+pv.str("operation_id"), "dev-alice", "").status())
	assert.Equal(t, status.UnknownOperation, b.do(t, "GET", "/v1/operations/"+pv.str("operation_id"), "dev-bob", "").status())
}
