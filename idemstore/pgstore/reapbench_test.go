package pgstore_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
)

// reapBenchRows is how many expired records BenchmarkConfirmDuringReap
// fills in unless ONCEGATE_REAP_BENCH_ROWS says otherwise.
const reapBenchRows = 200_000

// BenchmarkConfirmDuringReap is a measurement, not a timed test: it fills
// write_record with N expired DONE records by COPY, then times a
// confirm's truth writes (Acquire, then Finalize DONE) one after another,
// first on a quiet table, then while ReapBounded (DefaultReapLimits) drains
// the N records, and reports both p99s and their ratio (reap/quiet) of the
// same run. docs/benchmarks-scale.md has the command and the numbers.
func BenchmarkConfirmDuringReap(b *testing.B) {
	n := benchEnvInt(b, "ONCEGATE_REAP_BENCH_ROWS", reapBenchRows)
	ctx := context.Background()
	url := testenv.NewDatabase(b)
	s, err := pgstore.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)

	past := time.Now().Add(-48 * time.Hour)
	copied, err := pool.CopyFrom(ctx, pgx.Identifier{"write_record"},
		[]string{"idem_key", "subject", "scope", "param_hash", "state", "owner", "fingerprint_exp", "terminal_ttl", "reap_after", "completed_at", "claimed_at", "created_at", "updated_at"},
		pgx.CopyFromFunc(func() func() ([]any, error) {
			i := 0
			return func() ([]any, error) {
				if i == n {
					return nil, nil
				}
				i++
				at := past.Add(time.Duration(i) * time.Millisecond)
				return []any{"expired-" + strconv.Itoa(i), "alice", "payments.transfer", "e625dcbb23216d0d011ac838c5703c7ae5cd01afa8ae5abcc315cfe62a6f8af7",
					"DONE", "bench", at, time.Hour, at.Add(time.Hour), at, at, at, at}, nil
			}
		}()))
	if err != nil || copied != int64(n) {
		b.Fatalf("copy %d expired records: %d, %v", n, copied, err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE write_record"); err != nil {
		b.Fatal(err)
	}

	claims := benchClaims(100_000)
	next := 0
	confirm := func() time.Duration {
		c := claims[next]
		next++
		start := time.Now()
		if _, err := s.Acquire(ctx, c); err != nil {
			b.Fatal(err)
		}
		if err := s.Finalize(ctx, storetest.Done(c, c.Owner)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	p99 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)*99/100]
	}

	b.ResetTimer()
	var quiet []time.Duration
	for range 2000 {
		quiet = append(quiet, confirm())
	}
	reaped := make(chan pgstore.ReapResult, 1)
	reapStart := time.Now()
	go func() {
		var total pgstore.ReapResult
		for {
			r, err := s.ReapBounded(ctx, time.Now(), pgstore.ReapLimits{})
			if err != nil {
				b.Error(err)
			}
			total.Removed += r.Removed
			if err != nil || r.Backlog == 0 {
				reaped <- total
				return
			}
		}
	}()
	var during []time.Duration
	var total pgstore.ReapResult
	for done := false; !done; {
		select {
		case total = <-reaped:
			done = true
		default:
			during = append(during, confirm())
		}
	}
	reapTook := time.Since(reapStart)
	b.StopTimer()
	if total.Removed != int64(n) {
		b.Fatalf("reaped %d, want %d", total.Removed, n)
	}
	if len(during) < 100 {
		b.Fatalf("only %d confirms ran during the reap: too few for a p99", len(during))
	}
	q, d := p99(quiet), p99(during)
	b.ReportMetric(float64(q.Microseconds()), "quiet-p99-µs")
	b.ReportMetric(float64(d.Microseconds()), "reap-p99-µs")
	b.ReportMetric(float64(d)/float64(q), "p99-ratio")
	b.Logf("rows %d reaped in %s; confirms quiet %d p99 %s, during reap %d p99 %s; ratio %.2f",
		n, reapTook.Round(time.Millisecond), len(quiet), q, len(during), d, float64(d)/float64(q))
}
