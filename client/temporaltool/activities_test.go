package temporaltool

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/oncegate/oncegate/client"

	"github.com/oncegate/oncegate/status"
)

// activityEnv runs the activities against a gateway that always answers body with code.
func activityEnv(t *testing.T, code int, body string) *testsuite.TestActivityEnvironment {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "dev-alice", client.WithRetry(1, 0))
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	Register(env, &Activities{Client: c})
	return env
}

func TestPreviewActivityKeepsTheFingerprint(t *testing.T) {
	t.Parallel()
	env := activityEnv(t, 200, `{"status":"preview_ready","meaning":"m","instruction":"i","retryable":false,"trace_id":"t",
		"operation_id":"op1","fingerprint":"fp","expires_at":"2030-01-01T00:00:00Z","preview":{"params":{"amount":"12.5"}},
		"recent_operation":{"operation_id":"op0","state":"completed"}}`)
	v, err := env.ExecuteActivity(ActivityPreview, PreviewRequest{Scope: "payments.transfer", Params: json.RawMessage(`{"amount":"12.50"}`)})
	require.NoError(t, err)
	var p Preview
	require.NoError(t, v.Get(&p))
	assert.Equal(t, "op1", p.OperationID)
	assert.Equal(t, "fp", p.Fingerprint)
	assert.JSONEq(t, `{"amount":"12.50"}`, string(p.Params), "the confirm sends the params previewed")
	assert.JSONEq(t, `{"params":{"amount":"12.5"}}`, string(p.Detail))
	require.NotNil(t, p.RecentOperation)
	assert.Equal(t, "op0", p.RecentOperation.OperationID)
}

func TestConfirmActivityRefusalIsNotRetryable(t *testing.T) {
	t.Parallel()
	env := activityEnv(t, 409, `{"status":"repeat_unacknowledged","meaning":"m","instruction":"i","retryable":false,"trace_id":"t",
		"operation_id":"op1","recent_operation":{"operation_id":"op0","state":"completed"}}`)
	_, err := env.ExecuteActivity(ActivityConfirm, ConfirmRequest{Scope: "payments.transfer", Fingerprint: "fp"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.True(t, app.NonRetryable())
	assert.Equal(t, string(status.RepeatUnacknowledged), app.Type())
	assert.Equal(t, status.RepeatUnacknowledged, StatusOf(err))
	assert.ErrorIs(t, classify(err), client.ErrRepeatUnacknowledged)
	var r Refusal
	require.NoError(t, app.Details(&r))
	require.NotNil(t, r.RecentOperation)
	assert.Equal(t, "op0", r.RecentOperation.OperationID)
}

func TestConfirmActivityTransientIsRetryable(t *testing.T) {
	t.Parallel()
	env := activityEnv(t, 503, `{"status":"temporarily_unavailable","meaning":"m","instruction":"i","retryable":true,"trace_id":"t","retry_after_ms":1}`)
	_, err := env.ExecuteActivity(ActivityConfirm, ConfirmRequest{Scope: "payments.transfer", Fingerprint: "fp"})
	require.Error(t, err)
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		assert.False(t, app.NonRetryable(), "Temporal retries it with the same fingerprint")
	}
	assert.Empty(t, StatusOf(err))
}
