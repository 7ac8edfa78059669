package idemstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// IsTransport reports whether err is a failure to reach a backend in time
// that any client library can meet: a deadline, a connection refused, reset
// or closed, an unexpected EOF, any net.Error. A context canceled by the
// caller is not one: the backend did nothing wrong.
func IsTransport(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &netErr)
}

// Unavailable is the one classifier of backend errors: err wrapped in
// ErrUnavailable when it is a transport error (IsTransport) or one that
// backendDown reports (the client library's own sentinels: a closed pool or
// client, a server starting or shutting down); otherwise err as it is. nil
// stays nil, and an err that already wraps ErrUnavailable is not wrapped
// twice. backendDown may be nil.
func Unavailable(err error, backendDown func(error) bool) error {
	switch {
	case err == nil, errors.Is(err, ErrUnavailable):
		return err
	case IsTransport(err), backendDown != nil && backendDown(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	default:
		return err
	}
}
