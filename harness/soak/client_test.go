package soak

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestClientSpreadsOverGateways: the agents' client sends each request to
// the next gateway, as a round-robin load balancer does, and goes on to
// the next one when a gateway's connection cannot be opened (it is down:
// nothing was sent).
func TestClientSpreadsOverGateways(t *testing.T) {
	var hits [2]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i].Add(1)
			_, _ = fmt.Fprint(w, `{"status":"completed"}`)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	down := fmt.Sprintf("http://127.0.0.1:%d", testenv.MustFreePort(t)) // nothing listens there
	c := newClient([]string{urls[0], down, urls[1]}, "", nil)
	for range 30 {
		a, err := c.gateway(context.Background(), http.MethodGet, "/x", "", nil, 5*time.Second)
		require.NoError(t, err, "a gateway that is down is skipped")
		assert.Equal(t, "completed", a.Status)
	}
	assert.Equal(t, int64(30), c.requests.Load(), "one request each, however many gateways were tried")
	assert.Equal(t, int64(30), hits[0].Load()+hits[1].Load())
	assert.Positive(t, hits[0].Load(), "both running gateways take their share")
	assert.Positive(t, hits[1].Load(), "both running gateways take their share")
}
