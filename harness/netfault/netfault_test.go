package netfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineServer answers each line it reads with "ok <line>" and counts the
// lines it received: the server side of a hop.
type lineServer struct {
	ln       net.Listener
	received atomic.Int64
}

func startLineServer(t *testing.T) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &lineServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.received.Add(1)
					if _, err := io.WriteString(c, "ok "+line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// ask sends one line through addr and returns the answer read within wait.
func ask(t *testing.T, addr string, wait time.Duration) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(wait)))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestHop(t *testing.T) {
	srv := startLineServer(t)
	n := New()
	h, err := n.Add(GatewayRedis, srv.ln.Addr().String())
	require.NoError(t, err)
	_, err = n.Add(GatewayRedis, srv.ln.Addr().String())
	require.Error(t, err, "a hop is added once")
	_, err = n.Hop("nowhere")
	require.ErrorIs(t, err, ErrUnknownHop)

	got, err := ask(t, h.Addr(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, "ok ping\n", got, "a healthy hop passes the request and the reply")

	t.Run("cut replies: the server got the request, the client no byte of the answer", func(t *testing.T) {
		before := srv.received.Load()
		name, err := h.CutReplies(0)
		require.NoError(t, err)
		assert.Equal(t, []string{name}, h.Toxics())
		got, err := ask(t, h.Addr(), 2*time.Second)
		assert.Empty(t, got)
		assert.ErrorIs(t, err, io.EOF, "the connection is closed, not timed out")
		assert.Equal(t, before+1, srv.received.Load(), "the request reached the server")
		require.NoError(t, h.Remove(name))
		assert.Empty(t, h.Toxics())
	})

	t.Run("partition: nothing arrives, nothing answers, until healed", func(t *testing.T) {
		before := srv.received.Load()
		names, err := h.Partition("cut")
		require.NoError(t, err)
		assert.Equal(t, []string{"cut_upstream", "cut_downstream"}, names)
		_, err = ask(t, h.Addr(), 300*time.Millisecond)
		assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "a black hole times out: %v", err)
		assert.Equal(t, before, srv.received.Load(), "the request never reached the server")
		h.Heal()
		got, err := ask(t, h.Addr(), time.Second)
		require.NoError(t, err)
		assert.Equal(t, "ok ping\n", got)
	})

	t.Run("reset: a fresh proxy on the same address, no toxic, the old connections closed", func(t *testing.T) {
		addr := h.Addr()
		old, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer old.Close()
		_, err = h.Partition("stuck")
		require.NoError(t, err)
		require.NoError(t, h.Reset())
		assert.Equal(t, addr, h.Addr())
		assert.Empty(t, h.Toxics())
		require.NoError(t, old.SetReadDeadline(time.Now().Add(time.Second)))
		_, err = old.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "a connection through the old proxy is closed")
		got, err := ask(t, h.Addr(), time.Second)
		require.NoError(t, err)
		assert.Equal(t, "ok ping\n", got)
	})

	t.Run("close: every port the hops opened is closed", func(t *testing.T) {
		addr := h.Addr()
		require.NoError(t, n.Close())
		_, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		assert.Error(t, err, "the hop's port no longer accepts")
		assert.Empty(t, n.Names())
	})
}

func TestStillListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.Error(t, StillListening([]string{addr}), "an open port is reported")
	ln.Close()
	require.NoError(t, StillListening([]string{addr}), "a closed one is not")
}
