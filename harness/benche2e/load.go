// Package benche2e is the end-to-end benchmark of `make bench-e2e`: it starts
// the whole oncegate stack on free ports (harness/testenv) — or, with
// Options.ProdStack, measures a running production-like profile and every
// one of its processes' CPU (`make bench-e2e PROFILE=prod`) —, builds floors
// into the same process (a bare Echo handler, Echo plus one EVALSHA, a bare
// Temporal workflow with one activity), drives both with one load generator
// in alternating rounds, and reports the numbers, their ratios and the goals
// of issue 12 in docs/benchmarks.md with a chart of the latency percentiles.
// It measures; it asserts nothing about speed.
package benche2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewClient returns the load generator's HTTP client: keep-alive
// connections to loopback, at most conns of them per host, all kept idle
// between requests so that no request pays for a new connection, no
// compression, no proxy.
func NewClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4 * conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Op is one operation of a phase: the i-th request, sent and answered. It
// returns the label counted in Sample.Outcomes (such as an agent-facing
// status), or an error when the answer is not what the phase expects
// (counted in Sample.Errors, its latency not recorded).
type Op func(ctx context.Context, i int) (string, error)

// Request builds the i-th request of an HTTP phase.
type Request func(ctx context.Context, i int) (*http.Request, error)

// Check classifies one HTTP answer for HTTPOp, as Op does.
type Check func(code int, header http.Header, body []byte) (string, error)

// HTTPOp is the Op that sends req's request with client and checks the
// answer, body read to the end.
func HTTPOp(client *http.Client, req Request, check Check) Op {
	return func(ctx context.Context, i int) (string, error) {
		r, err := req(ctx, i)
		if err != nil {
			return "", fmt.Errorf("build request %d: %w", i, err)
		}
		resp, err := client.Do(r)
		if err != nil {
			return "", fmt.Errorf("request %d: %w", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", fmt.Errorf("read answer %d: %w", i, err)
		}
		label, err := check(resp.StatusCode, resp.Header, body)
		if err != nil {
			return "", fmt.Errorf("answer %d (HTTP %d): %w", i, resp.StatusCode, err)
		}
		return label, nil
	}
}

// Load is one phase of closed-loop load: Conns workers, each starting its
// next operation as soon as the last one was answered, until Duration has
// passed or MaxRequests were started, whichever comes first.
type Load struct {
	// Conns is the number of concurrent workers (connections).
	Conns int
	// Duration bounds the phase in time.
	Duration time.Duration
	// MaxRequests bounds the phase in operations; 0 means no bound but time.
	MaxRequests int
}

// Run drives the phase and returns what it recorded. The first error an
// operation reports is returned with the sample, so that a broken phase is
// visible rather than counted as fast. An operation cut off by the end of
// the phase counts neither as answered nor as an error.
func (l Load) Run(ctx context.Context, op Op) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Duration)
	defer cancel()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		out      = Sample{Outcomes: map[string]int{}}
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range max(1, l.Conns) {
		wg.Go(func() {
			var lat []time.Duration
			outcomes := map[string]int{}
			errs := 0
			var werr error
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if l.MaxRequests > 0 && i >= l.MaxRequests {
					break
				}
				t0 := time.Now()
				label, err := op(ctx, i)
				d := time.Since(t0)
				switch {
				case err != nil && ctx.Err() != nil:
				case err != nil:
					errs++
					if werr == nil {
						werr = err
					}
				default:
					lat = append(lat, d)
					outcomes[label]++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			out.Latencies = append(out.Latencies, lat...)
			out.Errors += errs
			for k, v := range outcomes {
				out.Outcomes[k] += v
			}
			if firstErr == nil {
				firstErr = werr
			}
		})
	}
	wg.Wait()
	out.Elapsed = time.Since(start)
	return out, firstErr
}
