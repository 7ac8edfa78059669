package mcpserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestResultIsAnErrorExactlyForRefusals checks how a gateway answer becomes
// a tool result: an error for an HTTP error and for a status the registry
// does not call an outcome, not for an outcome (a definite failure too).
func TestResultIsAnErrorExactlyForRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code    int
		body    string
		isError bool
	}{
		{http.StatusOK, `{"status":"completed"}`, false},
		{http.StatusOK, `{"status":"failed"}`, false},
		{http.StatusAccepted, `{"status":"needs_manual_review"}`, false},
		{http.StatusOK, `{"status":"brand_new_status"}`, true},
		{http.StatusUnprocessableEntity, `{"status":"param_mismatch"}`, true},
		{http.StatusOK, `not json`, true},
	} {
		assert.Equal(t, c.isError, result(c.code, []byte(c.body)).IsError, "%d %s", c.code, c.body)
	}
}
