package idemstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/idemstore"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	errClosed := errors.New("client closed")
	backendDown := func(err error) bool { return errors.Is(err, errClosed) }
	for name, tt := range map[string]struct {
		err  error
		want bool
	}{
		"deadline":       {context.DeadlineExceeded, true},
		"refused":        {fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		"reset":          {syscall.ECONNRESET, true},
		"broken pipe":    {syscall.EPIPE, true},
		"eof":            {io.EOF, true},
		"unexpected eof": {io.ErrUnexpectedEOF, true},
		"net closed":     {net.ErrClosed, true},
		"net error":      {&net.OpError{Op: "read", Err: errors.New("timeout")}, true},
		"backend's own":  {fmt.Errorf("query: %w", errClosed), true},
		"canceled":       {context.Canceled, false},
		"other":          {errors.New("syntax error"), false},
		"not found":      {idemstore.ErrNotFound, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := idemstore.Unavailable(tt.err, backendDown)
			assert.Equal(t, tt.want, errors.Is(got, idemstore.ErrUnavailable))
			assert.ErrorIs(t, got, tt.err, "the cause stays in the chain")
		})
	}
	assert.NoError(t, idemstore.Unavailable(nil, backendDown))
	once := idemstore.Unavailable(io.EOF, nil)
	assert.Same(t, once, idemstore.Unavailable(once, nil), "never wrapped twice")
}
