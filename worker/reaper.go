package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/idemstore/pgstore"
)

// Reaper deletes the truth's expired rows in bounded batches
// (pgstore.Store.ReapBounded).
type Reaper interface {
	// ReapBounded deletes the rows due at now within limits and reports
	// how many records it deleted and how many due ones are left.
	ReapBounded(ctx context.Context, now time.Time, limits pgstore.ReapLimits) (pgstore.ReapResult, error)
}

// ReaperMetrics are the reaper's Prometheus metrics: the records it
// deleted and the due records a pass left behind.
type ReaperMetrics struct {
	removed prometheus.Counter
	backlog prometheus.Gauge
}

// NewReaperMetrics registers oncegate_reaper_removed_records_total and
// oncegate_reaper_backlog_records on reg.
func NewReaperMetrics(reg prometheus.Registerer) (*ReaperMetrics, error) {
	removed := prometheus.CounterOpts{Name: "oncegate_reaper_removed_records_total",
		Help: "Terminal truth records (write_record) the reaper deleted."}
	backlog := prometheus.GaugeOpts{Name: "oncegate_reaper_backlog_records",
		Help: "Terminal truth records due for reaping but still there after the last reaper pass (left for the next pass)."}
	m := &ReaperMetrics{removed: prometheus.NewCounter(removed), backlog: prometheus.NewGauge(backlog)}
	if err := errors.Join(reg.Register(m.removed), reg.Register(m.backlog)); err != nil {
		return nil, fmt.Errorf("register the reaper's metrics: %w", err)
	}
	return m, nil
}

// RunReaper calls reaper.ReapBounded(ctx, now(), limits) every interval
// until ctx is done, and then returns. It logs how many records each pass
// removed and left due, counts them on metrics (nil: none), and logs an
// error and carries on at the next tick when a pass fails: a database that
// is briefly away must not stop reaping for good. The first pass runs one
// interval after the start. interval must be positive.
func RunReaper(ctx context.Context, reaper Reaper, interval time.Duration, limits pgstore.ReapLimits,
	now func() time.Time, logger *slog.Logger, metrics *ReaperMetrics) {
	if logger == nil {
		logger = slog.Default()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if ctx.Err() != nil {
			return
		}
		cutoff := now()
		r, err := reaper.ReapBounded(ctx, cutoff, limits)
		if metrics != nil {
			metrics.removed.Add(float64(r.Removed))
			if err == nil {
				metrics.backlog.Set(float64(r.Backlog))
			}
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return // stopped mid-pass: not a failure
		case err != nil:
			logger.ErrorContext(ctx, "reap failed", "err", err, "cutoff", cutoff, "removed", r.Removed)
		default:
			logger.InfoContext(ctx, "reaped terminal records", "removed", r.Removed, "backlog", r.Backlog, "cutoff", cutoff)
		}
	}
}

// Removed is the counter of the records the reaper deleted.
func (m *ReaperMetrics) Removed() prometheus.Counter { return m.removed }

// Backlog is the gauge of the due records the last pass left.
func (m *ReaperMetrics) Backlog() prometheus.Gauge { return m.backlog }
