package listen

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTakenPortNamesPortAndVariable(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	addr := held.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	_, err = TCP("WORKER_METRICS_URL", "http://"+addr+"/metrics", addr)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrPortTaken))
	assert.Contains(t, err.Error(), "port "+port+" (WORKER_METRICS_URL=http://"+addr+"/metrics) is already in use")
	assert.Contains(t, err.Error(), "move this one with WORKER_METRICS_URL")

	ln, err := TCP("GATEWAY_URL", "http://127.0.0.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())

	_, err = TCP("GATEWAY_URL", "http://nowhere.invalid:1", "nowhere.invalid:1")
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrPortTaken))
	assert.Contains(t, err.Error(), "GATEWAY_URL=http://nowhere.invalid:1")
}
