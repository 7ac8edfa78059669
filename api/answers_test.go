package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/status"
)

// TestEveryBodyCarriesTheRegistrysRetryable renders every registered status
// and checks its body's retryable (and HTTP code) against the registry, and
// the body the MCP endpoint writes itself for a request without a token.
func TestEveryBodyCarriesTheRegistrysRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, st := range status.All() {
		info, _ := status.Lookup(st)
		rec := httptest.NewRecorder()
		c := b.srv.echo.NewContext(httptest.NewRequest(http.MethodGet, "/v1/operations/x", nil), rec)
		require.NoError(t, b.srv.render(c, gateway.Answer{Status: st, OperationID: "0123456789abcdef0123456789abcdef"}))
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), st)
		assert.Equal(t, string(st), body["status"])
		assert.Equal(t, info.Retryable, body["retryable"], "%s: retryable is the registry's", st)
		assert.Equal(t, info.Code, rec.Code, st)
	}

	r := b.do(t, http.MethodPost, "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
	require.Equal(t, status.Unauthenticated, r.status(), r.raw)
	unauthenticated, _ := status.Lookup(status.Unauthenticated)
	assert.Equal(t, unauthenticated.Retryable, r.body["retryable"], "the MCP endpoint's own body")
	assert.Equal(t, unauthenticated.Code, r.code)
}

// TestFailedAnswersClaimNothingExecutedOnlyWhenProved renders the failed
// answer of every failure kind: operation.FailureKind.ProvesNothingExecuted
// decides whether the texts say that no money moved or warn the agent not
// to claim it; only a refusal, reconciliation after the window and a
// request never sent prove it.
func TestFailedAnswersClaimNothingExecutedOnlyWhenProved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for kind, proved := range map[operation.FailureKind]bool{
		operation.FailureRefused: true, operation.FailureNotExecuted: true, operation.FailureNotSent: true,
		operation.FailureOperator: false, "": false,
	} {
		// The operation's record as its workflow left it: a status poll and
		// a replay answer it.
		opID := b.failedOperation(t, kind)
		r := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
		require.Equal(t, status.Failed, r.status(), r.raw)
		warned := strings.Contains(r.str("instruction"), "Do not tell the user that nothing was executed")
		assert.Equal(t, !proved, warned, "%q: %s", kind, r.str("instruction"))
	}
}
