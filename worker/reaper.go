package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncegate/oncegate/idemstore"
)

// RunReaper calls store.Reap(ctx, now()) every interval until ctx is done, and
// then returns. It logs how many records each pass removed, and logs an
// error and carries on at the next tick when a pass fails: a database that
// is briefly away must not stop reaping for good. The first pass runs one
// interval after the start. interval must be positive.
func RunReaper(ctx context.Context, store idemstore.Store, interval time.Duration, now func() time.Time, logger *slog.Logger) {
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
		n, err := store.Reap(ctx, cutoff)
		switch {
		case err != nil && ctx.Err() != nil:
			return // stopped mid-pass: not a failure
		case err != nil:
			logger.ErrorContext(ctx, "reap failed", "err", err, "cutoff", cutoff)
		default:
			logger.InfoContext(ctx, "reaped terminal records", "removed", n, "cutoff", cutoff)
		}
	}
}
