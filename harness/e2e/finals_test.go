package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestKeptOutcomeOutlivesTheStores: a finished operation the gateway has
// once read from the store is replayed, with the same result and
// receipt, and its status answered, with Redis stopped and the truth's
// database gone: a finished record never changes, and the gateway keeps
// it (ONCEGATE_FINAL_CACHE, on by default). An operation it never read
// back is answered temporarily_unavailable, as without the cache: what
// the gateway did not keep, it does not invent.
func TestKeptOutcomeOutlivesTheStores(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{})
	keptParams, otherParams := transferParams("21.00"), transferParams("22.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", keptParams)
	first := finish(t, s, "payments.transfer", fp, id, keptParams)
	require.Contains(t, []string{"completed", "already_completed"}, first.str("status"), first.String())
	replay := confirm(t, s, "dev-alice", "payments.transfer", fp, keptParams)
	require.Equal(t, "already_completed", replay.str("status"), replay.String())
	st := status(t, s, "dev-alice", id)
	require.Equal(t, "completed", st.str("status"), st.String())
	otherFP, otherID := previewOK(t, s, "dev-alice", "payments.transfer", otherParams)

	s.Redis.Stop()
	dropDatabase(t, s)

	again := confirm(t, s, "dev-alice", "payments.transfer", fp, keptParams)
	require.Equal(t, http.StatusOK, again.Code, again.String())
	assert.Equal(t, "already_completed", again.str("status"))
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, replay.str("result_ref"), again.str("result_ref"))
	assert.Equal(t, replay.str("receipt"), again.str("receipt"))
	stAgain := status(t, s, "dev-alice", id)
	assert.Equal(t, "completed", stAgain.str("status"), stAgain.String())
	assert.Equal(t, st.str("receipt"), stAgain.str("receipt"))
	assert.Equal(t, "unknown_operation", status(t, s, "dev-bob", id).str("status"), "another subject still does not see it")

	unkept := confirm(t, s, "dev-alice", "payments.transfer", otherFP, otherParams)
	assert.Equal(t, http.StatusServiceUnavailable, unkept.Code, unkept.String())
	assert.Equal(t, "temporarily_unavailable", unkept.str("status"), unkept.String())
	assert.Zero(t, executions(t, s, otherID), "nothing ran for the operation the gateway could not claim")
	assert.Equal(t, 1, executions(t, s, id))
}

// dropDatabase drops the stack's truth database, its connections with it.
func dropDatabase(t testing.TB, s *testenv.Stack) {
	t.Helper()
	u, err := url.Parse(s.DatabaseURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	require.NoError(t, err)
}
