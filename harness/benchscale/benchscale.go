// Package benchscale is `make bench-scale` (cmd/bench-scale): for each size
// of the truth it starts the dev stack (harness/benche2e), fills the truth
// with that many finished operations by COPY (harness/truthfill), measures
// oncegate's paths against the same floors in the same run, and reads what
// the stores hold: the truth's table and index sizes, Redis's memory per
// live operation, and Temporal's visibility rows. WriteReport and
// WriteCharts turn the points into docs/benchmarks-scale.md and its PNG
// curves. It is a benchmark: it asserts nothing about speed.
package benchscale

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/oncegate/oncegate/harness/benche2e"
	"github.com/oncegate/oncegate/harness/truthfill"
)

// DefaultSizes are the sizes `make bench-scale` measures unless SCALE_SIZES
// says otherwise: the empty truth and a million operations.
var DefaultSizes = []int{0, 1_000_000}

// DefaultGroups are the benche2e groups measured at each size: the paths
// whose cost the issue asks to stay flat (the concurrent and degraded
// groups are left to `make bench-e2e`, for the run's length).
var DefaultGroups = []string{"preview", "replay", "status", "confirm-seq"}

// ParseSizes reads a comma-separated list of sizes (SCALE_SIZES).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("size %q: want a number of operations ≥ 0", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Options tune a scale run.
type Options struct {
	// Sizes are the truth's sizes, in operations, each measured on a stack
	// of its own.
	Sizes []int
	// Bench is the benchmark run at each size (its Hooks are the scale
	// run's own).
	Bench benche2e.Options
	// Fill shapes the operations (its Rows is each size).
	Fill truthfill.Options
	// Log receives progress lines.
	Log io.Writer
	// Measured, when set, is called with the points so far after each
	// size (the command writes the report each time, so that a run cut
	// short keeps what it measured).
	Measured func(points []Point) error
}

// Point is what one size measured.
type Point struct {
	// Size is the number of operations filled in.
	Size int
	// Filled counts the rows written; FillTook is how long the COPY took,
	// and VacuumTook the VACUUM ANALYZE after it.
	Filled               truthfill.Counts
	FillTook, VacuumTook time.Duration
	// Results are the benchmark's.
	Results *benche2e.Results
	// Tables are the truth's tables after the rounds, largest first.
	Tables []TableSize
	// Redis is what Redis holds after the rounds.
	Redis RedisUse
	// VisibilityRows counts the workflow executions Temporal's visibility
	// holds after the rounds (CountWorkflow over the namespace).
	VisibilityRows int64
}

// Run measures every size in turn.
func Run(ctx context.Context, o Options) ([]Point, error) {
	logf := func(f string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, f+"\n", a...)
		}
	}
	var points []Point
	for _, size := range o.Sizes {
		pt := Point{Size: size}
		opts := o.Bench
		opts.Log = o.Log
		opts.Hooks = benche2e.Hooks{
			Prepare: func(ctx context.Context, s benche2e.StackHandle) error {
				return pt.fill(ctx, s, o.Fill, logf)
			},
			Inspect: func(ctx context.Context, s benche2e.StackHandle) error {
				return pt.inspect(ctx, s)
			},
		}
		logf("scale: %d operations", size)
		res, err := benche2e.Run(ctx, opts)
		if err != nil {
			return points, fmt.Errorf("size %d: %w", size, err)
		}
		pt.Results = res
		points = append(points, pt)
		if o.Measured != nil {
			if err := o.Measured(points); err != nil {
				return points, err
			}
		}
	}
	return points, nil
}

// fillTables are the tables the fill writes and VACUUM ANALYZE reads after.
var fillTables = []string{"write_record", "budget_reservation", "approval", "approval_decision", "webhook_receipt"}

// fill writes pt.Size operations into the stack's truth, then vacuums and
// analyzes the tables, so that neither autovacuum nor stale statistics
// fall into the rounds.
func (pt *Point) fill(ctx context.Context, s benche2e.StackHandle, shape truthfill.Options, logf func(string, ...any)) error {
	if pt.Size == 0 {
		return nil
	}
	pool, err := pgxpool.New(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	defer pool.Close()
	shape.Rows = pt.Size
	logf("scale: filling the truth with %d operations by COPY...", pt.Size)
	start := time.Now()
	if pt.Filled, err = truthfill.Fill(ctx, pool, shape); err != nil {
		return err
	}
	pt.FillTook = time.Since(start)
	logf("scale: filled %+v in %s; VACUUM ANALYZE...", pt.Filled, pt.FillTook.Round(time.Second))
	start = time.Now()
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+strings.Join(fillTables, ", ")); err != nil {
		return fmt.Errorf("fill: vacuum: %w", err)
	}
	pt.VacuumTook = time.Since(start)
	return nil
}

// TableSize is one table of the truth, as PostgreSQL sizes it.
type TableSize struct {
	// Name is the table's.
	Name string
	// Rows is its exact row count.
	Rows int64
	// Table, Indexes and Total are pg_table_size, pg_indexes_size and
	// pg_total_relation_size, in bytes.
	Table, Indexes, Total int64
}

// RedisUse is what Redis holds.
type RedisUse struct {
	// UsedMemory is INFO memory's used_memory, in bytes.
	UsedMemory int64
	// Keys is DBSIZE.
	Keys int64
	// KeyBytes sums MEMORY USAGE over every key.
	KeyBytes int64
	// Operations counts the operations the run made itself (the truth's
	// records less the filled ones): the live operations Redis holds.
	Operations int64
}

// PerOperation is KeyBytes per live operation (0 when there is none).
func (r RedisUse) PerOperation() float64 {
	if r.Operations == 0 {
		return 0
	}
	return float64(r.KeyBytes) / float64(r.Operations)
}

// inspect reads the truth's sizes, Redis's memory and the visibility rows.
func (pt *Point) inspect(ctx context.Context, s benche2e.StackHandle) error {
	pool, err := pgxpool.New(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("sizes: %w", err)
	}
	defer pool.Close()
	for _, name := range fillTables {
		t := TableSize{Name: name}
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+name+`), pg_table_size($1), pg_indexes_size($1),
			pg_total_relation_size($1)`, name).Scan(&t.Rows, &t.Table, &t.Indexes, &t.Total); err != nil {
			return fmt.Errorf("sizes: %s: %w", name, err)
		}
		pt.Tables = append(pt.Tables, t)
	}
	var records int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM write_record`).Scan(&records); err != nil {
		return fmt.Errorf("sizes: records: %w", err)
	}
	pt.Redis.Operations = records - pt.Filled.Records
	if pt.Redis, err = redisUse(ctx, s, pt.Redis.Operations); err != nil {
		return err
	}
	resp, err := s.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.Namespace})
	if err != nil {
		return fmt.Errorf("sizes: visibility: %w", err)
	}
	pt.VisibilityRows = resp.GetCount()
	return nil
}

// redisUse reads used_memory and DBSIZE and sums MEMORY USAGE over every
// key (SCAN; the dev stack's Redis holds only the run's own operations).
func redisUse(ctx context.Context, s benche2e.StackHandle, ops int64) (RedisUse, error) {
	u := RedisUse{Operations: ops}
	info, err := s.Redis.Info(ctx, "memory").Result()
	if err != nil {
		return u, fmt.Errorf("redis: info: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			u.UsedMemory, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if u.Keys, err = s.Redis.DBSize(ctx).Result(); err != nil {
		return u, fmt.Errorf("redis: dbsize: %w", err)
	}
	iter := s.Redis.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := s.Redis.MemoryUsage(ctx, iter.Val()).Result()
		if err != nil {
			continue // expired between SCAN and MEMORY USAGE
		}
		u.KeyBytes += n
	}
	if err := iter.Err(); err != nil {
		return u, fmt.Errorf("redis: scan: %w", err)
	}
	return u, nil
}
