package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncegate/oncegate/idemstore"
)

// interpretError translates pgx errors: pgx.ErrNoRows is
// idemstore.ErrNotFound; every failure to reach PostgreSQL in time
// (connection refused or lost, timeouts, a closed pool, a server shutting
// down or starting) wraps idemstore.ErrUnavailable. A context canceled by
// the caller is returned as is.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.ErrNotFound
	}
	if errors.Is(err, idemstore.ErrNotFound) || errors.Is(err, idemstore.ErrUnavailable) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", idemstore.ErrUnavailable, err)
	}
	return err
}

func unavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		pgconn.Timeout(err),
		errors.As(err, &connectErr),
		errors.As(err, &netErr),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &pgErr):
		// 08: connection exception; 57P01-57P03: shutdown, crash, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	// pgxpool (puddle) reports a closed pool only by its message.
	return strings.Contains(err.Error(), "closed pool")
}
