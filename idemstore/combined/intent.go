package combined

import (
	"context"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/idemstore"
)

// maxWarmEntries bounds a warm-up: a subject with more intents inside the
// horizon keeps a cold index, and the truth answers its previews.
const maxWarmEntries = 2000

// watchRetry is how long the epoch watcher waits before reconnecting.
const watchRetry = time.Second

// needsLease reports whether a claim whose fast path answered fast (its
// recent-intent index written or not: indexed) must take the fast-path
// lease before the truth's claim: when the index does not hold it, the
// truth alone (and a lease every gateway hears of) keeps the amnesia guard
// from trusting an index that misses it.
func needsLease(fast fastAnswer, indexed bool) bool {
	return fast.Unavailable || !indexed
}

// lease makes sure a fast-path lease of this store runs for at least half
// of FastPathLease more, taking a new one in the truth when it does not
// (one statement per half lease, however many claims it covers).
func (s *Store) lease(ctx context.Context) error {
	enough := func() bool {
		return s.now().Add(s.opts.FastPathLease / 2).Before(time.Unix(0, s.leasedUntil.Load()))
	}
	if enough() {
		return nil
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if enough() {
		return nil
	}
	e, err := s.truth.LeaseFastPath(ctx, s.opts.FastPathLease)
	if err != nil {
		return fmt.Errorf("lease the fast path: %w", err)
	}
	s.leasedUntil.Store(e.LeasedUntil.UnixNano())
	s.leases.Inc()
	s.log.Warn("claims on the truth alone: the recent-intent index is not trusted until the lease ends",
		"epoch", e.Value, "leased_until", e.LeasedUntil)
	return nil
}

// watchEpoch starts, once, the watcher that keeps s.epoch current: nil
// until the truth answered, and again while the watch is broken.
func (s *Store) watchEpoch() {
	s.watchOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for s.ctx.Err() == nil {
				err := s.truth.WatchFastPathEpoch(s.ctx, func(e idemstore.FastPathEpoch) {
					s.epoch.Store(&e)
					s.epochGauge.Set(float64(e.Value))
				})
				s.epoch.Store(nil)
				s.epochGauge.Set(0)
				if err != nil {
					s.log.Warn("fast-path epoch watch broke: the amnesia guard asks the truth until it is back", "err", err)
				}
				select {
				case <-s.ctx.Done():
				case <-time.After(watchRetry):
				}
			}
		}()
	})
}

// warmLater warms subject's index at epoch in the background, once at a
// time per subject, after the claim that found it cold has answered.
func (s *Store) warmLater(subject string, epoch int64) {
	if _, busy := s.warming.LoadOrStore(subject, true); busy {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.warming.Delete(subject)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.warming.Delete(subject)
		ctx, cancel := context.WithTimeout(s.ctx, warmTimeout)
		defer cancel()
		s.warm(ctx, subject, epoch)
	}()
}

// warmTimeout bounds one warm-up.
const warmTimeout = 10 * time.Second

// warm completes subject's recent-intent index from the truth, at epoch
// (the epoch the claim that found it cold read): a token first (so that a
// flush while the truth is read aborts the commit), then the truth's
// newest operation of each intent since the horizon, merged under the
// token. Failures are only logged: the truth keeps answering.
func (s *Store) warm(ctx context.Context, subject string, epoch int64) {
	ttl := s.opts.IntentHorizon
	var token string
	err := s.fastCall(ctx, func(ctx context.Context) (err error) {
		token, err = s.fast.BeginWarm(ctx, subject, ttl)
		return err
	})
	if err != nil {
		s.log.Warn("warm the recent-intent index: begin", "subject", subject, "err", err)
		return
	}
	horizon := s.now().Add(-ttl)
	entries, err := s.truth.RecentIntents(ctx, subject, horizon)
	if err != nil {
		s.log.Warn("warm the recent-intent index: read the truth", "subject", subject, "err", err)
		return
	}
	if len(entries) > maxWarmEntries {
		s.log.Info("recent-intent index left cold: too many intents", "subject", subject, "intents", len(entries))
		return
	}
	var committed bool
	err = s.fastCall(ctx, func(ctx context.Context) (err error) {
		committed, err = s.fast.CommitWarm(ctx, idemstore.WarmParams{Subject: subject, Token: token,
			Marker: idemstore.IndexMarker{Epoch: epoch, Horizon: horizon}, Entries: entries, TTL: ttl})
		return err
	})
	switch {
	case err != nil:
		s.log.Warn("warm the recent-intent index: commit", "subject", subject, "err", err)
	case !committed:
		s.log.Info("recent-intent index not warmed: it changed under the warm-up (a flush, an expiry, another warm-up)", "subject", subject)
	}
}
