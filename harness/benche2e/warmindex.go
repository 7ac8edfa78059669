package benche2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oncegate/oncegate/harness/testenv"
)

// guardByIndex is the gateway's count of amnesia-guard answers the Redis
// recent-intent index gave alone.
const guardByIndex = `oncegate_amnesia_guard_answers_total{by="index"}`

// guardByTruth is the gateway's count of amnesia-guard answers the
// PostgreSQL truth gave (the index could not answer for sure).
const guardByTruth = `oncegate_amnesia_guard_answers_total{by="truth"}`

// guardCounts are the gateway's counts of amnesia-guard answers by who
// gave them.
type guardCounts struct{ index, truth float64 }

// guardAnswers reads g's guardCounts.
func (g gateway) guardAnswers(ctx context.Context) (guardCounts, error) {
	index, err := g.metric(ctx, guardByIndex)
	if err != nil {
		return guardCounts{}, err
	}
	truth, err := g.metric(ctx, guardByTruth)
	return guardCounts{index: index, truth: truth}, err
}

// logGuardAnswers logs who answered the amnesia guard during phase name,
// from the counts before it.
func (b *bench) logGuardAnswers(ctx context.Context, g gateway, name string, before guardCounts) error {
	after, err := g.guardAnswers(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.opts.Log, "%s: amnesia guard answered by the Redis index %.0f times, by PostgreSQL %.0f times\n",
		name, after.index-before.index, after.truth-before.truth)
	return nil
}

// warmIndexTimeout bounds warmIndex: past the fast-path lease a
// degraded period leaves (30 s), one claim warms the subject's index.
const warmIndexTimeout = 90 * time.Second

// warmIndex brings the benchmark subject's recent-intent index to its
// steady state before a preview phase: a subject's previews are answered
// by Redis alone once a claim of theirs warmed the index, and by
// PostgreSQL before that (after a flush, a restart or a degraded period —
// such as the degraded phase that ends every round). It completes an
// operation, then previews until the gateway counts an answer by the
// index, claiming again every few seconds while a lease keeps it cold.
// A subject that stays cold is reported, not hidden: the phase then
// measures the PostgreSQL path.
func (b *bench) warmIndex(ctx context.Context, g gateway, scope string) error {
	deadline := time.Now().Add(warmIndexTimeout)
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		payee := fmt.Sprintf("bench-warm-%s-%d", b.runID, b.seq.Add(1))
		if _, err := g.complete(ctx, scopeTransfer, transferParams(payee)); err != nil {
			return fmt.Errorf("warm the recent-intent index: %w", err)
		}
		for range 5 {
			before, err := g.guardAnswers(ctx)
			if err != nil {
				return err
			}
			if _, _, err := g.preview(ctx, scope, b.params[scope]); err != nil {
				return err
			}
			after, err := g.guardAnswers(ctx)
			if err != nil {
				return err
			}
			if after.index > before.index {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	fmt.Fprintf(b.opts.Log, "warning: the recent-intent index stayed cold for %s; the preview phase measures the PostgreSQL path\n", warmIndexTimeout)
	return nil
}

// metric reads the sum of the series whose name and labels start with
// series, over every gateway of g.
func (g gateway) metric(ctx context.Context, series string) (float64, error) {
	sum := 0.0
	for _, base := range g.urls {
		v, err := g.metricOf(ctx, base, series)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// metricOf is metric of the gateway at base.
func (g gateway) metricOf(ctx context.Context, base, series string) (float64, error) {
	req, err := g.plainRequest(ctx, base, http.MethodGet, "/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape the gateway: %w", err)
	}
	defer resp.Body.Close()
	name, labels, _ := strings.Cut(series, "{")
	v, err := testenv.SumMetric(resp.Body, name, strings.TrimSuffix(labels, "}"))
	if err != nil {
		return 0, fmt.Errorf("scrape the gateway: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return v, nil
}
