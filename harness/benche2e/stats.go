package benche2e

import (
	"math"
	"slices"
	"time"
)

// Sample is what one measured phase recorded: every request's latency,
// the wall-clock time of the phase, and how the answers were classified.
type Sample struct {
	// Latencies holds one entry per answered request, in no order.
	Latencies []time.Duration
	// Elapsed is the wall-clock duration of the phase.
	Elapsed time.Duration
	// Errors counts requests that got no answer or an unexpected one.
	Errors int
	// Outcomes counts answers by the label the phase gave them (such as an
	// agent-facing status).
	Outcomes map[string]int
}

// Merge appends o's requests to s; the elapsed times add up, as the phases
// ran one after the other.
func (s *Sample) Merge(o Sample) {
	s.Latencies = append(s.Latencies, o.Latencies...)
	s.Elapsed += o.Elapsed
	s.Errors += o.Errors
	for k, v := range o.Outcomes {
		if s.Outcomes == nil {
			s.Outcomes = map[string]int{}
		}
		s.Outcomes[k] += v
	}
}

// Summary is a Sample reduced to the numbers a report shows.
type Summary struct {
	// N is the number of answered requests.
	N int
	// Errors is Sample.Errors.
	Errors int
	// Throughput is answered requests per second of wall-clock time.
	Throughput float64
	// P50, P90, P95, P99 and Max are latency percentiles (nearest rank).
	P50, P90, P95, P99, Max time.Duration
}

// Quantiles are the latency quantiles a Summary and the chart show.
var Quantiles = []float64{0.50, 0.90, 0.95, 0.99}

// Summarize reduces s. An empty sample summarizes to zeros.
func Summarize(s Sample) Summary {
	sorted := sortedLatencies(s.Latencies)
	out := Summary{N: len(sorted), Errors: s.Errors}
	if s.Elapsed > 0 {
		out.Throughput = float64(len(sorted)) / s.Elapsed.Seconds()
	}
	out.P50 = Percentile(sorted, 0.50)
	out.P90 = Percentile(sorted, 0.90)
	out.P95 = Percentile(sorted, 0.95)
	out.P99 = Percentile(sorted, 0.99)
	if len(sorted) > 0 {
		out.Max = sorted[len(sorted)-1]
	}
	return out
}

// Percentile returns the q-quantile (0 < q ≤ 1) of sorted latencies by the
// nearest-rank method: the smallest value with at least q of the values at
// or below it. It is 0 for no values.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Median returns the median of xs (the mean of the two middle values for an
// even count), or 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Ratio returns a/b, or NaN when b is 0 (nothing to compare with).
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// sortedLatencies returns a sorted copy of xs.
func sortedLatencies(xs []time.Duration) []time.Duration {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
