package benche2e

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
)

// Hooks let a caller act on the stack a run measures: the scale benchmark
// (cmd/bench-scale) fills the truth in Prepare and reads the stores' sizes
// in Inspect. A nil hook is skipped.
type Hooks struct {
	// Prepare runs once the stack is up, before the operation the replay
	// and status phases read is made, the floors start and the warm-up.
	Prepare func(ctx context.Context, s StackHandle) error
	// Inspect runs after the rounds, the timelines and the duplicates
	// phase, before the profiles.
	Inspect func(ctx context.Context, s StackHandle) error
}

// StackHandle is what a hook sees of the stack a run measures.
type StackHandle struct {
	// DatabaseURL is the truth's PostgreSQL.
	DatabaseURL string
	// Redis is a client of the stack's Redis, the run's own (a hook must
	// not close it).
	Redis redis.UniversalClient
	// Temporal is the run's Temporal client (a hook must not close it),
	// and Namespace the namespace oncegate's workflows run in.
	Temporal  client.Client
	Namespace string
}

// handle is the stack as the hooks see it.
func (b *bench) handle() StackHandle {
	return StackHandle{DatabaseURL: b.t.databaseURL, Redis: b.rdb, Temporal: b.temporal, Namespace: b.t.temporal.Namespace}
}
