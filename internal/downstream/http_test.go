package downstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/plan"
)

// TestHTTPExecuteIsNeverResentByTheTransport: the execute POST carries
// Idempotency-Key, which Go's http.Transport takes to mean the request may
// be replayed; on a reused keep-alive connection whose reply is lost (the
// server received the request, executed it and the connection closed
// before an answer) the transport would send it again by itself — a
// second execution at a downstream that ignores the key. The call is sent
// once and its outcome is unknown; what to do next is the workflow's to
// decide (reconcile, never a blind resend).
func TestHTTPExecuteIsNeverResentByTheTransport(t *testing.T) {
	kind, err := downstream.For(plan.KindHTTP)
	require.NoError(t, err)
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if received.Add(1) == 1 {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"tr_1"}`))
			return
		}
		// Executed, then the connection is lost before any answer.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	call := downstream.Call{OperationID: "op-1", Params: []byte(`{"amount":"1"}`), HTTP: &http.Client{},
		Downstream: plan.Downstream{Endpoint: plan.Endpoint{Execute: srv.URL}}}

	ans, err := kind.Execute(context.Background(), call)
	require.NoError(t, err, "the first call opens the keep-alive connection")
	assert.Equal(t, http.StatusCreated, ans.StatusCode)

	_, err = kind.Execute(context.Background(), call)
	require.Error(t, err, "the reply was lost: the outcome is unknown")
	assert.NotErrorIs(t, err, downstream.ErrNotSent)
	assert.Equal(t, int64(2), received.Load(), "the lost call reached the downstream once, and only once")
}
