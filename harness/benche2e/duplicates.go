package benche2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/harness/testenv"
)

// DuplicatesN is how many concurrent duplicate confirms of one operation
// in flight the duplicates phase sends.
const DuplicatesN = 200

// Duplicates is what the duplicates phase measured: DuplicatesN concurrent
// duplicate confirms of one payout in flight on one gateway, which share
// the gateway's one watcher of the operation.
type Duplicates struct {
	// N is the number of duplicate confirms.
	N int
	// Elapsed is how long they took from the first sent to the last answered.
	Elapsed time.Duration
	// Outcomes counts the answers by status.
	Outcomes map[string]int
	// TemporalRequests and TemporalLongRequests are the gateway's Temporal
	// SDK client's requests during the phase (temporal_request,
	// temporal_long_request on its /metrics).
	TemporalRequests, TemporalLongRequests float64
	// Watchers is how many watchers the gateway started during the phase.
	Watchers float64
}

// AnswersPerSecond is the phase's throughput.
func (d Duplicates) AnswersPerSecond() float64 { return float64(d.N) / d.Elapsed.Seconds() }

// TemporalCallsPerAnswer is what each answer cost Temporal.
func (d Duplicates) TemporalCallsPerAnswer() float64 {
	return (d.TemporalRequests + d.TemporalLongRequests) / float64(d.N)
}

// duplicates runs the duplicates phase: a payout that settles in 6 s is
// confirmed once, then DuplicatesN times at once.
func (b *bench) duplicates(ctx context.Context) (*Duplicates, error) {
	if err := b.setFaults(ctx, `{"payout_settle_ms":6000}`); err != nil {
		return nil, err
	}
	defer func() { _ = b.setFaults(ctx, `{}`) }()
	params := transferParams("dup-" + b.runID)
	p, _, err := b.gw.preview(ctx, "payments.payout", params)
	if err != nil {
		return nil, err
	}
	if a, err := b.gw.agent().Confirm(ctx, "payments.payout", p.Fingerprint, params); a == nil {
		return nil, err
	}
	before, err := b.gatewayCounters(ctx)
	if err != nil {
		return nil, err
	}
	d := &Duplicates{N: DuplicatesN, Outcomes: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	for range DuplicatesN {
		wg.Go(func() {
			a, _ := b.gw.agent().Confirm(ctx, "payments.payout", p.Fingerprint, params)
			st := "error" // no answer, or not an oncegate answer
			if a != nil && a.Status != "" {
				st = string(a.Status)
			}
			mu.Lock()
			d.Outcomes[st]++
			mu.Unlock()
		})
	}
	wg.Wait()
	d.Elapsed = time.Since(began)
	after, err := b.gatewayCounters(ctx)
	if err != nil {
		return nil, err
	}
	d.TemporalRequests = after["temporal_request"] - before["temporal_request"]
	d.TemporalLongRequests = after["temporal_long_request"] - before["temporal_long_request"]
	d.Watchers = after["oncegate_watchers_started_total"] - before["oncegate_watchers_started_total"]
	return d, nil
}

// setFaults replaces the simulator's faults.
func (b *bench) setFaults(ctx context.Context, faults string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, b.t.downstreamURL+"/_sim/faults", strings.NewReader(faults))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("set faults: %w", err)
	}
	resp.Body.Close()
	return nil
}

// gatewayCounters sums the gateway's counters the duplicates phase reads,
// over their labels.
func (b *bench) gatewayCounters(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.gw.urls[0]+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape the gateway: %w", err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape the gateway: %w", err)
	}
	out := map[string]float64{}
	for _, name := range []string{"temporal_request", "temporal_long_request", "oncegate_watchers_started_total"} {
		if out[name], err = testenv.SumMetric(bytes.NewReader(text), name, ""); err != nil {
			return nil, fmt.Errorf("scrape the gateway: %w", err)
		}
	}
	return out, nil
}
