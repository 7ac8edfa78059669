package clientpool

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

	"github.com/oncegate/oncegate/client"
)

func TestPoolKeepsOneClientPerTokenAndSendsOnce(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/v1/operations/slow" {
			time.Sleep(200 * time.Millisecond)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"status":"temporarily_unavailable","retryable":true,"auth":%q}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	p := New(srv.URL, srv.Client())

	a1, err := p.Agent("tok-a")
	require.NoError(t, err)
	a2, err := p.Agent("tok-a")
	require.NoError(t, err)
	b, err := p.Agent("tok-b")
	require.NoError(t, err)
	assert.Same(t, a1, a2, "one client per token")
	assert.NotSame(t, a1, b)
	o1, err := p.Operator("tok-ops")
	require.NoError(t, err)
	o2, err := p.Operator("tok-ops")
	require.NoError(t, err)
	assert.Same(t, o1, o2)
	_, err = p.Agent("")
	require.ErrorIs(t, err, client.ErrUnauthenticated)

	a, lost, err := p.Call(context.Background(), "tok-b", time.Minute, func(ctx context.Context, c *client.Client) (*client.Answer, error) {
		return c.Status(ctx, "op1")
	})
	require.ErrorIs(t, err, client.ErrTemporarilyUnavailable)
	assert.False(t, lost)
	require.NotNil(t, a)
	assert.Contains(t, string(a.Raw), "Bearer tok-b", "sent as the call's token")
	assert.Equal(t, int64(1), hits.Load(), "sent once, retryable or not")

	_, lost, err = p.Call(context.Background(), "tok-b", 20*time.Millisecond, func(ctx context.Context, c *client.Client) (*client.Answer, error) {
		return c.Status(ctx, "slow")
	})
	require.Error(t, err)
	assert.True(t, lost, "cut by its own timeout")
}
