package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
)

// interpretError translates go-redis errors: every failure to reach Redis in
// time (connection refused or reset, timeouts, a closed client, an exhausted
// pool, a server that is loading, read-only or without a master) wraps
// idemstore.ErrUnavailable; redis.Nil is idemstore.ErrNotFound. A context
// canceled by the caller is returned as is: the backend did nothing wrong.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		return idemstore.ErrNotFound
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", idemstore.ErrUnavailable, err)
	}
	return err
}

func unavailable(err error) bool {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &netErr):
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err)
}
