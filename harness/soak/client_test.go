package soak

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/testenv"
)

// TestClientSpreadsOverGateways: the agents' client sends each request to
// the next gateway, as a round-robin load balancer does, and goes on to
// the next one when a gateway's connection cannot be opened (it is down:
// nothing was sent), a request's body too.
func TestClientSpreadsOverGateways(t *testing.T) {
	var hits [2]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			body, _ := io.ReadAll(r.Body)
			status := "completed"
			if r.Method == http.MethodPost && !strings.Contains(string(body), `"fingerprint":"fp"`) {
				status = "malformed_request"
			}
			_, _ = fmt.Fprintf(w, `{"status":%q,"operation_id":"op1"}`, status)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	down := fmt.Sprintf("http://127.0.0.1:%d", testenv.MustFreePort(t)) // nothing listens there
	c := newClient([]string{urls[0], down, urls[1]}, "", nil)
	for i := range 30 {
		var a answer
		var err error
		if i%2 == 0 {
			a, err = c.status(context.Background(), "tok", "op1")
		} else {
			a, err = c.confirm(context.Background(), "tok", "payments.transfer", "fp", map[string]any{"amount": "1"}, "", 5*time.Second)
		}
		require.NoError(t, err, "a gateway that is down is skipped")
		assert.Equal(t, "completed", a.Status, "the body reached the gateway")
		assert.Equal(t, http.StatusOK, a.Code)
	}
	assert.Equal(t, int64(30), c.requests.Load(), "one request each, however many gateways were tried")
	assert.Equal(t, int64(30), hits[0].Load()+hits[1].Load())
	assert.Positive(t, hits[0].Load(), "both running gateways take their share")
	assert.Positive(t, hits[1].Load(), "both running gateways take their share")
}

// TestClientRecordsWhatTheGatewaySaid: a refusal is an answer the soak
// records like any other; a body without a status is errMalformed; an
// answer later than the client's timeout is errLost.
func TestClientRecordsWhatTheGatewaySaid(t *testing.T) {
	answers := map[string]func(http.ResponseWriter){
		"/v1/operations/refused": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusConflict)
			_, _ = fmt.Fprint(w, `{"status":"repeat_unacknowledged","retryable":false,"recent_operation":{"operation_id":"op0"}}`)
		},
		"/v1/operations/html": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = fmt.Fprint(w, `<html>bad gateway</html>`)
		},
		"/v1/operations/slow": func(w http.ResponseWriter) {
			time.Sleep(300 * time.Millisecond)
			_, _ = fmt.Fprint(w, `{"status":"completed"}`)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answers[r.URL.Path](w) }))
	t.Cleanup(srv.Close)
	c := newClient([]string{srv.URL}, "", nil)

	a, err := c.status(context.Background(), "tok", "refused")
	require.NoError(t, err)
	assert.Equal(t, answer{Code: http.StatusConflict, Status: "repeat_unacknowledged",
		RecentOperation: &struct {
			OperationID string `json:"operation_id"`
		}{"op0"}}, a)

	a, err = c.status(context.Background(), "tok", "html")
	require.ErrorIs(t, err, errMalformed)
	assert.Equal(t, http.StatusBadGateway, a.Code)

	_, err = c.call(context.Background(), "tok", 50*time.Millisecond, func(ctx context.Context, gw *oncegate.Client) (*oncegate.Answer, error) {
		return gw.Status(ctx, "slow")
	})
	require.ErrorIs(t, err, errLost)
	assert.Equal(t, int64(3), c.requests.Load())
}
