package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// readOnlyRedisCommands are the commands that cannot write; every other
// command's calls count in RedisWriteCalls.
var readOnlyRedisCommands = map[string]bool{
	"get": true, "hget": true, "hgetall": true, "hmget": true, "exists": true, "ttl": true, "pttl": true,
	"ping": true, "info": true, "client": true, "hello": true, "command": true, "select": true,
	"type": true, "scan": true, "dbsize": true, "config": true, "script": true,
	"cluster": true, "readonly": true, "replconf": true, // a cluster client's view of the slots, a replica's acknowledgements
}

// RedisWriteCalls sums the calls (INFO commandstats) of every command that
// may write, so that two readings taken around some work show whether it
// wrote to Redis. Of a Redis Cluster it sums every master's (a replica
// counts again what its master replicates to it).
func RedisWriteCalls(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		var total atomic.Int64
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			n, err := RedisWriteCalls(ctx, m)
			total.Add(n)
			return err
		})
		return total.Load(), err
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("redis commandstats: %w", err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		if readOnlyRedisCommands[strings.SplitN(strings.TrimPrefix(name, "cmdstat_"), "|", 2)[0]] {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("redis commandstats %q: %w", line, err)
				}
				total += n
			}
		}
	}
	return total, nil
}

// Querier is what TruthDigest needs of a pgx connection or pool.
type Querier interface {
	// QueryRow runs a query that returns one row.
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TruthDigest captures every row of the truth (write_record) and its id
// sequence: any insert (even rolled back), update or delete changes it.
// The digest sums a 64-bit hash of each row's text, so that it needs
// memory for one row at a time: one string of every row (the digest
// before) passed PostgreSQL's 1 GB limit on a truth of five million
// operations (make bench-scale).
func TruthDigest(ctx context.Context, q Querier) (string, error) {
	var rows, seq int64
	var digest *string
	if err := q.QueryRow(ctx, `SELECT count(*), sum(hashtextextended(w::text, 0)::numeric)::text FROM write_record w`).Scan(&rows, &digest); err != nil {
		return "", fmt.Errorf("digest truth: %w", err)
	}
	if err := q.QueryRow(ctx, `SELECT last_value FROM write_record_id_seq`).Scan(&seq); err != nil {
		return "", fmt.Errorf("truth sequence: %w", err)
	}
	d := ""
	if digest != nil {
		d = *digest
	}
	return fmt.Sprintf("rows=%d seq=%d digest=%s", rows, seq, d), nil
}
