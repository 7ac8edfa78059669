package redisstore_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
)

// BenchmarkHotSubjectIntentIndex claims N operations (default 100k,
// ONCEGATE_HOT_SUBJECT_OPS) of one subject, each a different intent, one
// after another, with a duplicate-intent window of ONCEGATE_HOT_SUBJECT_WINDOW
// (default 2s: a day's 100k claims at the default window of 24h hold 100k
// live entries; a short window lets the entries end during the run, so
// that the pruning runs). It reports the claim's time, the largest size
// the subject's index reached (HLEN, sampled every 1000 claims) against
// the live entries at that time, and the index's MEMORY USAGE at the end
// per field. docs/benchmarks-scale.md has the command and the numbers.
func BenchmarkHotSubjectIntentIndex(b *testing.B) {
	n := 100_000
	if v := os.Getenv("ONCEGATE_HOT_SUBJECT_OPS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("ONCEGATE_HOT_SUBJECT_OPS=%q: %v", v, err)
		}
	}
	window := 2 * time.Second
	if v := os.Getenv("ONCEGATE_HOT_SUBJECT_WINDOW"); v != "" {
		var err error
		if window, err = time.ParseDuration(v); err != nil {
			b.Fatalf("ONCEGATE_HOT_SUBJECT_WINDOW=%q: %v", v, err)
		}
	}
	srv := testenv.StartRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.New(rdb)
	ctx := context.Background()
	claims := benchClaims(n)
	for i := range claims {
		claims[i].ParamHash = strconv.Itoa(i)
		claims[i].IntentWindow = window
	}
	key := redisstore.RecentKey("alice")
	b.ResetTimer()
	for range b.N {
		var maxLen, liveAtMax int64
		var times []time.Time
		start := time.Now()
		for i, c := range claims {
			at := time.Now()
			if d, err := s.Acquire(ctx, c); err != nil || d.Outcome != idemstore.OutcomeAcquired {
				b.Fatalf("claim %d: %v, %v", i, d.Outcome, err)
			}
			times = append(times, at)
			if i%1000 == 999 {
				l, err := rdb.HLen(ctx, key).Result()
				if err != nil {
					b.Fatal(err)
				}
				if l > maxLen {
					maxLen = l
					live := int64(0)
					for _, t := range times {
						if at.Sub(t) < window {
							live++
						}
					}
					liveAtMax = live
				}
			}
		}
		took := time.Since(start)
		mem, err := rdb.MemoryUsage(ctx, key).Result()
		if err != nil {
			b.Fatal(err)
		}
		l, err := rdb.HLen(ctx, key).Result()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(took.Microseconds())/float64(n), "µs/claim")
		b.ReportMetric(float64(maxLen), "max-fields")
		b.ReportMetric(float64(liveAtMax), "live-at-max")
		b.ReportMetric(float64(mem)/float64(max(l, 1)), "bytes/field")
		b.Logf("%d claims in %s (%.0f/s), window %s: index at most %d fields (%d live then), at the end %d fields, %d bytes",
			n, took.Round(time.Millisecond), float64(n)/took.Seconds(), window, maxLen, liveAtMax, l, mem)
	}
}
