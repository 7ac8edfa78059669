package pgstore

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/oncegate/oncegate/idemstore"
)

// interpretError translates pgx errors: pgx.ErrNoRows is
// idemstore.ErrNotFound; every failure to reach PostgreSQL in time wraps
// idemstore.ErrUnavailable (idemstore.Unavailable, with pgDown).
func interpretError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.ErrNotFound
	}
	return idemstore.Unavailable(err, pgDown)
}

// pgDown reports pgx's own unavailability errors: a closed pool
// (puddle.ErrClosedPool, which pgxpool returns as is), a failed connect, a
// timeout, and the server's connection exceptions (SQLSTATE class 08) and
// shutdown, crash and cannot-connect-now (57P01-57P03).
func pgDown(err error) bool {
	var connectErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, puddle.ErrClosedPool), errors.As(err, &connectErr), pgconn.Timeout(err):
		return true
	case errors.As(err, &pgErr):
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}
