package benche2e

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/harness/testenv"
)

// storageState is what a write to the stack's storage would change: the
// calls of Redis commands that may write, and a digest of every truth row
// with the id sequence.
type storageState struct {
	redisWrites int64
	truth       string
}

// observeStorage reads the storage state.
func observeStorage(ctx context.Context, rdb redis.UniversalClient, truthURL string) (storageState, error) {
	n, err := testenv.RedisWriteCalls(ctx, rdb)
	if err != nil {
		return storageState{}, err
	}
	conn, err := pgx.Connect(ctx, truthURL)
	if err != nil {
		return storageState{}, fmt.Errorf("connect truth: %w", err)
	}
	defer conn.Close(ctx)
	d, err := testenv.TruthDigest(ctx, conn)
	if err != nil {
		return storageState{}, err
	}
	return storageState{redisWrites: n, truth: d}, nil
}

// storageWrites is what changed between two storage states.
type storageWrites struct {
	// Redis counts the calls of Redis commands that may write.
	Redis int64
	// TruthChanged reports whether any truth row or the id sequence changed.
	TruthChanged bool
}

// add accumulates the writes between a and b.
func (w *storageWrites) add(a, b storageState) {
	w.Redis += b.redisWrites - a.redisWrites
	w.TruthChanged = w.TruthChanged || a.truth != b.truth
}
