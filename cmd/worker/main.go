// Command worker runs the Temporal worker of oncegate: the operation
// workflow and its activities, which alone call the downstream APIs.
//
// Environment: DATABASE_URL and REDIS_URL (required), TEMPORAL_ADDRESS
// (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default default),
// ONCEGATE_TASK_QUEUE (default oncegate). It runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "worker")
	slog.SetDefault(logger)
	ctx := context.Background()

	databaseURL := os.Getenv("DATABASE_URL")
	redisURL := os.Getenv("REDIS_URL")
	if databaseURL == "" || redisURL == "" {
		log.Fatal("DATABASE_URL and REDIS_URL are required")
	}

	pg, err := pgstore.Open(ctx, databaseURL)
	if err != nil {
		log.Fatalf("open truth: %v", err)
	}
	redisOpts, err := redis.ParseURL(redisURL)
	if err != nil {
		log.Fatalf("parse REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(redisOpts)
	defer rdb.Close()
	store := combined.New(redisstore.New(rdb), pg, combined.Options{
		Logger:     logger,
		Registerer: prometheus.DefaultRegisterer,
	})
	defer store.Close()

	c, err := client.Dial(client.Options{
		HostPort:  envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace: envOr("TEMPORAL_NAMESPACE", "default"),
		Logger:    temporallog.NewStructuredLogger(logger),
	})
	if err != nil {
		log.Fatalf("dial temporal: %v", err)
	}
	defer c.Close()

	acts := &activities.Activities{
		Truth:  store.Truth(),
		Store:  store,
		HTTP:   &http.Client{},
		Logger: logger,
	}
	w := worker.New(c, envOr("ONCEGATE_TASK_QUEUE", workflows.TaskQueue), acts, sdkworker.Options{})
	logger.Info("worker starting", "task_queue", envOr("ONCEGATE_TASK_QUEUE", workflows.TaskQueue))
	if err := w.Run(sdkworker.InterruptCh()); err != nil {
		logger.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

// envOr returns the variable's value, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
