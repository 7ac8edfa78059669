package redisstore

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// CountRoundTrips makes rdb count what it sends Redis in
// oncegate_redis_round_trips_total (a command alone, or a pipeline: its
// commands travel together and the caller waits once; a cluster client
// sends each node its part in parallel) and oncegate_redis_commands_total
// (every command, a pipeline's each). TestFirstConfirmRoundTrips reads them.
func CountRoundTrips(rdb redis.UniversalClient, reg prometheus.Registerer) error {
	h := roundTrips{
		trips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oncegate_redis_round_trips_total",
			Help: "Round trips to Redis: a command alone, or a pipeline of commands sent together.",
		}),
		commands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oncegate_redis_commands_total",
			Help: "Commands sent to Redis, each command of a pipeline counted.",
		}),
	}
	for _, c := range []prometheus.Collector{h.trips, h.commands} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register redis round trips: %w", err)
		}
	}
	rdb.AddHook(h)
	return nil
}

// roundTrips is the go-redis hook of CountRoundTrips.
type roundTrips struct {
	trips, commands prometheus.Counter
}

// DialHook passes dials through.
func (h roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one round trip and one command.
func (h roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Inc()
		h.commands.Inc()
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip and each command.
func (h roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Inc()
		h.commands.Add(float64(len(cmds)))
		return next(ctx, cmds)
	}
}
