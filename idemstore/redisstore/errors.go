package redisstore

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
)

// interpretError translates go-redis errors: redis.Nil is
// idemstore.ErrNotFound; every failure to reach Redis in time wraps
// idemstore.ErrUnavailable (idemstore.Unavailable, with redisDown).
func interpretError(err error) error {
	if errors.Is(err, redis.Nil) {
		return idemstore.ErrNotFound
	}
	return idemstore.Unavailable(err, redisDown)
}

// redisDown reports go-redis's own unavailability errors: a closed client
// (redis.ErrClosed), an exhausted pool, a server that is loading,
// read-only, without a master or with its cluster down, and a slot whose
// owner the client did not reach within its redirects (a MOVED or ASK
// still answered after them: a failover or a resharding under way, or a
// map of the slots not yet reloaded). None of these says anything of the
// operation; the PostgreSQL truth answers while they last.
func redisDown(err error) bool {
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err)
}
