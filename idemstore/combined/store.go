// Package combined is the store the gateway and the activities use: the
// Redis fast path in front of the PostgreSQL truth.
//
// Redis answers first, within a small budget; every answer that Redis could
// have got wrong after losing data (a FLUSHALL, a failover, an expired key)
// is checked against the truth, and terminal records the truth knows are
// refilled into Redis. When Redis is unreachable or slow the store degrades
// to the PostgreSQL-only path (claim by insert, replay by select): slower and
// as correct, it neither lets duplicates through nor refuses all work. A
// background prober flips back to the fast path when Redis answers again.
package combined

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
)

const (
	// DefaultRedisBudget is Options.RedisBudget when unset.
	DefaultRedisBudget = 150 * time.Millisecond
	// DefaultProbeInterval is Options.ProbeInterval when unset.
	DefaultProbeInterval = time.Second
	// DefaultRefillTTL is the TTL of a refilled terminal record when the
	// claim carries no terminal TTL.
	DefaultRefillTTL = 24 * time.Hour
)

// Options configure a Store.
type Options struct {
	// RedisBudget is the timeout of each Redis call; a call that does not
	// answer within it counts as Redis unavailable. Default 150ms.
	RedisBudget time.Duration
	// ProbeInterval is how often a degraded store PINGs Redis to flip back
	// to the fast path. Default 1s.
	ProbeInterval time.Duration
	// Logger receives the degradation and recovery events and the fast-path
	// failures that are ignored. Default slog.Default().
	Logger *slog.Logger
	// Registerer registers the store's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Store is the combined degrading store.
type Store struct {
	fast  *redisstore.Store
	truth *pgstore.Store
	opts  Options
	log   *slog.Logger

	degraded atomic.Bool
	mu       sync.Mutex // serializes degrade/recover transitions and Close
	closed   bool
	ctx      context.Context // canceled by Close; stops the prober
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	degradedGauge prometheus.Gauge
	fallbacks     prometheus.Counter
	refills       prometheus.Counter
}

var _ idemstore.Store = (*Store)(nil)

// New returns a store with fast in front of truth. Close stops the prober
// and closes truth; the caller still closes its Redis client.
func New(fast *redisstore.Store, truth *pgstore.Store, opts Options) *Store {
	if opts.RedisBudget <= 0 {
		opts.RedisBudget = DefaultRedisBudget
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		fast: fast, truth: truth, opts: opts, log: opts.Logger.With("component", "idemstore"),
		ctx: ctx, cancel: cancel,
		degradedGauge: register(opts.Registerer, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oncegate_idemstore_degraded",
			Help: "1 while Redis is unavailable and the idempotency store runs on PostgreSQL only.",
		})),
		fallbacks: register(opts.Registerer, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oncegate_idemstore_fallbacks_total",
			Help: "Acquires answered by the PostgreSQL-only path because Redis was unavailable.",
		})),
		refills: register(opts.Registerer, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oncegate_idemstore_refills_total",
			Help: "Terminal records refilled into Redis from the PostgreSQL truth.",
		})),
	}
	s.degradedGauge.Set(0)
	return s
}

// register registers c with r, or returns the collector already registered
// under the same name (several stores in one process share the metrics).
func register[C prometheus.Collector](r prometheus.Registerer, c C) C {
	if r == nil {
		return c
	}
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Truth returns the PostgreSQL truth.
func (s *Store) Truth() *pgstore.Store { return s.truth }

// Fast returns the Redis fast path.
func (s *Store) Fast() *redisstore.Store { return s.fast }

// Degraded reports whether the store currently runs on PostgreSQL only.
func (s *Store) Degraded() bool { return s.degraded.Load() }

// Ready reports whether the truth (PostgreSQL) answers; Redis is optional.
func (s *Store) Ready(ctx context.Context) error { return s.truth.Ping(ctx) }

// Close stops the prober and closes the truth's pool.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
	s.truth.Close()
}

// Acquire claims c.Key. Not degraded, Redis decides first and the truth
// checks what Redis could have lost:
//   - Redis ACQUIRED: the truth has no record → ACQUIRED; another
//     param_hash → PARAM_MISMATCH; a terminal record → Redis is refilled and
//     the terminal outcome replayed (replays after FLUSHALL); IN_FLIGHT or
//     NEEDS_REVIEW → ACQUIRED with TruthFound and the record: the key expired
//     or was flushed while its workflow runs, and the caller attaches to
//     that workflow (only the workflow executes, once per ID).
//   - Redis IN_FLIGHT: a terminal truth is refilled and replayed; otherwise
//     Redis's answer, with the truth's record and TruthFound when it exists
//     (Record.State tells NEEDS_REVIEW).
//   - Redis DONE, FAILED, PARAM_MISMATCH: final as they are (Redis is
//     finalized only after the truth).
//
// Redis unavailable: degrade and claim on the truth (insert, or read back
// the existing record). The truth unavailable too: an error wrapping
// idemstore.ErrUnavailable, and nothing was consumed.
//
// Known window: while Redis starts failing, one caller can be ACQUIRED on
// Redis (the truth has no record yet) while another, whose Redis call timed
// out, is ACQUIRED by inserting into the truth. Both then start the
// operation's workflow, whose ID is the operation id: Temporal runs it once,
// and only the workflow executes.
func (s *Store) Acquire(ctx context.Context, c idemstore.Claim) (idemstore.Decision, error) {
	if !s.Degraded() {
		var d idemstore.Decision
		err := s.fastCall(ctx, func(ctx context.Context) (err error) {
			d, err = s.fast.Acquire(ctx, c)
			return err
		})
		if err == nil {
			return s.checkTruth(ctx, c, d)
		}
		if !errors.Is(err, idemstore.ErrUnavailable) || ctx.Err() != nil {
			return idemstore.Decision{}, fmt.Errorf("fast path: %w", err)
		}
	}
	s.fallbacks.Inc()
	d, err := s.truth.Acquire(ctx, c)
	if err != nil {
		return idemstore.Decision{}, fmt.Errorf("truth: %w", err)
	}
	return d, nil
}

// checkTruth checks Redis's decision d against the truth.
//
// A Redis ACQUIRED becomes a claim only once the truth took it too (claim by
// insert on the unique idem_key): the truth alone decides who is first, so
// exactly one caller ever gets ACQUIRED, even when a concurrent caller fell
// back to the PostgreSQL-only path because Redis was slow for it.
func (s *Store) checkTruth(ctx context.Context, c idemstore.Claim, d idemstore.Decision) (idemstore.Decision, error) {
	switch d.Outcome {
	case idemstore.OutcomeAcquired:
		return s.claimTruth(ctx, c, d)
	case idemstore.OutcomeInFlight:
	default:
		return d, nil
	}
	rec, err := s.truth.Get(ctx, c.Key)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return d, nil
	case err != nil:
		if d.Outcome == idemstore.OutcomeAcquired {
			// Without the truth we cannot tell whether this is a replay
			// after a FLUSHALL: give the claim back so nothing is consumed.
			s.release(ctx, c.Key, c.Owner)
		}
		return idemstore.Decision{}, fmt.Errorf("check truth: %w", err)
	}
	switch {
	case rec.ParamHash != c.ParamHash:
		if rec.State.Terminal() {
			s.refill(ctx, rec, c.TerminalTTL)
		} else if d.Outcome == idemstore.OutcomeAcquired {
			s.release(ctx, c.Key, c.Owner)
		}
		return idemstore.Decision{Outcome: idemstore.OutcomeParamMismatch, TruthFound: true}, nil
	case rec.State.Terminal():
		s.refill(ctx, rec, c.TerminalTTL)
		return idemstore.Decision{Outcome: idemstore.Outcome(rec.State), Record: rec, TruthFound: true}, nil
	default: // the truth is IN_FLIGHT or NEEDS_REVIEW: its workflow runs
		d.Record, d.TruthFound = rec, true
		return d, nil
	}
}

// claimTruth inserts the claim that Redis granted into the truth.
func (s *Store) claimTruth(ctx context.Context, c idemstore.Claim, fast idemstore.Decision) (idemstore.Decision, error) {
	d, err := s.truth.Acquire(ctx, c)
	if err != nil {
		// Without the truth we cannot tell whether this is a replay after a
		// FLUSHALL: give the claim back so nothing is consumed.
		s.release(ctx, c.Key, c.Owner)
		return idemstore.Decision{}, fmt.Errorf("claim truth: %w", err)
	}
	switch d.Outcome {
	case idemstore.OutcomeAcquired:
		d.ClaimedAt = fast.ClaimedAt
		return d, nil
	case idemstore.OutcomeParamMismatch:
		s.release(ctx, c.Key, c.Owner)
		if rec, gerr := s.truth.Get(ctx, c.Key); gerr == nil && rec.State.Terminal() {
			s.refill(ctx, rec, c.TerminalTTL)
		}
		return d, nil
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		// Redis had lost a finished operation (FLUSHALL, failover).
		s.refill(ctx, d.Record, c.TerminalTTL)
		return d, nil
	default:
		// The truth holds an earlier claim (its Redis key expired or was
		// lost while its workflow runs, or a caller on the PostgreSQL-only
		// path was first): Redis mirrors the truth's owner again.
		if d.Owner != "" && d.Owner != c.Owner {
			if err := s.fastCall(ctx, func(ctx context.Context) error {
				return s.fast.Takeover(ctx, c.Key, c.Owner, d.Owner, c.InFlightTTL)
			}); err != nil {
				s.log.Warn("mirror the truth's owner in redis failed", "operation_id", c.Key, "err", err)
			}
		}
		d.TruthFound = true
		return d, nil
	}
}

// refill writes the truth's terminal record rec back into Redis; failures
// are only logged (the next acquire checks the truth again).
func (s *Store) refill(ctx context.Context, rec idemstore.Record, ttl time.Duration) {
	if ttl <= 0 {
		ttl = DefaultRefillTTL
	}
	err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Refill(ctx, rec, ttl) })
	if err != nil {
		s.log.Warn("refill redis from the truth failed", "operation_id", rec.Key, "err", err)
		return
	}
	s.refills.Inc()
}

// Release gives back an IN_FLIGHT claim that owner holds and could not act
// on: the caller has made sure that no workflow of the key exists (its start
// failed), so nothing ran and nothing is consumed; the next confirm of the
// same fingerprint claims it at once instead of waiting for the orphan grace
// period. The truth's claim is deleted (owner-checked; ErrNotOwner when
// another owner holds it) and Redis's claim is released when Redis answers.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	if err := s.truth.Release(ctx, key, owner); err != nil && !errors.Is(err, idemstore.ErrNotFound) {
		return fmt.Errorf("truth: %w", err)
	}
	if !s.Degraded() {
		s.release(ctx, key, owner)
	}
	return nil
}

// release gives back a Redis claim this store just took; failures are only
// logged (the claim then expires with its in-flight TTL).
func (s *Store) release(ctx context.Context, key, owner string) {
	err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Release(ctx, key, owner) })
	if err != nil {
		s.log.Warn("release redis claim failed", "operation_id", key, "err", err)
	}
}

// Finalize writes the outcome to the truth first (its errors are returned),
// then to Redis, owner-checked, within the budget. When the truth has no
// record yet (the claim lives only on Redis), the record is inserted from
// the Redis claim if f.Owner holds it (while degraded: ErrNotOwner, the
// truth being the whole view). Redis held by another owner (or
// gone) returns idemstore.ErrFastPathNotOwner: the truth stands and a newer
// owner, or the next acquire, refills Redis. Redis unavailable is ignored
// (logged).
func (s *Store) Finalize(ctx context.Context, f idemstore.Finalization) error {
	if err := s.finalizeTruth(ctx, f); err != nil {
		return err
	}
	if s.Degraded() {
		return nil
	}
	err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Finalize(ctx, f) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idemstore.ErrNotOwner):
		return fmt.Errorf("finalize %s: %w", f.Key, idemstore.ErrFastPathNotOwner)
	case errors.Is(err, idemstore.ErrAlreadyTerminal):
		// Redis disagrees with the truth, which wins.
		if rec, gerr := s.truth.Get(ctx, f.Key); gerr == nil {
			s.refill(ctx, rec, f.TerminalTTL)
		}
		return nil
	case errors.Is(err, idemstore.ErrUnavailable):
		s.log.Warn("finalize on redis skipped: unavailable; the truth is written", "operation_id", f.Key, "err", err)
		return nil
	default:
		return fmt.Errorf("fast path: %w", err)
	}
}

// finalizeTruth finalizes on PostgreSQL, inserting the record from the
// Redis claim when the truth has never seen the key.
func (s *Store) finalizeTruth(ctx context.Context, f idemstore.Finalization) error {
	err := s.truth.Finalize(ctx, f)
	if !errors.Is(err, idemstore.ErrNotOwner) {
		if err != nil {
			return fmt.Errorf("truth: %w", err)
		}
		return nil
	}
	if _, gerr := s.truth.Get(ctx, f.Key); !errors.Is(gerr, idemstore.ErrNotFound) {
		if gerr != nil {
			return fmt.Errorf("truth: %w", gerr)
		}
		return fmt.Errorf("truth: %w", err)
	}
	if s.Degraded() {
		// While degraded the truth is the whole view, and it has no record.
		return fmt.Errorf("truth: %w", err)
	}
	var claim idemstore.Record
	ferr := s.fastCall(ctx, func(ctx context.Context) (err error) {
		claim, err = s.fast.Get(ctx, f.Key)
		return err
	})
	switch {
	case errors.Is(ferr, idemstore.ErrNotFound), errors.Is(ferr, idemstore.ErrUnavailable):
		// No claim of this owner can be proven: the truth has none, and
		// Redis (now degraded) cannot be asked. The degraded view answers.
		return fmt.Errorf("truth: %w", err)
	case ferr != nil:
		return fmt.Errorf("fast path: %w", ferr)
	case claim.State != idemstore.StateInFlight || claim.Owner != f.Owner:
		return fmt.Errorf("finalize %s: %w", f.Key, idemstore.ErrNotOwner)
	}
	if err := s.truth.FinalizeClaim(ctx, claim, f); err != nil {
		return fmt.Errorf("truth: %w", err)
	}
	return nil
}

// FinalizeFast finalizes on Redis only, owner-checked. The gateway uses it
// to refill the fast path after attaching to a finished workflow.
func (s *Store) FinalizeFast(ctx context.Context, f idemstore.Finalization) error {
	if s.Degraded() {
		return fmt.Errorf("finalize %s on the fast path: degraded: %w", f.Key, idemstore.ErrUnavailable)
	}
	if err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Finalize(ctx, f) }); err != nil {
		return fmt.Errorf("fast path: %w", err)
	}
	return nil
}

// Get reads the truth first (terminal and NEEDS_REVIEW records live there);
// when the truth has no record, Redis (an IN_FLIGHT claim before the
// workflow claimed the truth). ErrUnavailable when neither can answer.
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	rec, terr := s.truth.Get(ctx, key)
	if terr == nil {
		return rec, nil
	}
	if !errors.Is(terr, idemstore.ErrNotFound) && !errors.Is(terr, idemstore.ErrUnavailable) {
		return idemstore.Record{}, fmt.Errorf("truth: %w", terr)
	}
	if s.Degraded() {
		return idemstore.Record{}, fmt.Errorf("truth: %w", terr)
	}
	ferr := s.fastCall(ctx, func(ctx context.Context) (err error) {
		rec, err = s.fast.Get(ctx, key)
		return err
	})
	switch {
	case ferr == nil:
		return rec, nil
	case errors.Is(ferr, idemstore.ErrUnavailable) && errors.Is(terr, idemstore.ErrNotFound):
		// The truth answered; a claim only Redis knows cannot be seen now.
		return idemstore.Record{}, fmt.Errorf("truth: %w", terr)
	case errors.Is(ferr, idemstore.ErrNotFound) && errors.Is(terr, idemstore.ErrUnavailable):
		return idemstore.Record{}, fmt.Errorf("truth: %w", terr)
	default:
		return idemstore.Record{}, fmt.Errorf("fast path: %w", ferr)
	}
}

// Takeover moves the IN_FLIGHT claim from fromOwner to toOwner: on the truth
// when it holds a record (then the truth decides, and a stale Redis claim is
// only logged), and on Redis (which decides when the truth has no record).
// While degraded the truth is the whole view: no truth record is ErrNotOwner.
func (s *Store) Takeover(ctx context.Context, key, fromOwner, toOwner string, ttl time.Duration) error {
	_, gerr := s.truth.Get(ctx, key)
	if gerr != nil && !errors.Is(gerr, idemstore.ErrNotFound) {
		return fmt.Errorf("truth: %w", gerr)
	}
	truthFound := gerr == nil
	if truthFound {
		if err := s.truth.Takeover(ctx, key, fromOwner, toOwner, ttl); err != nil {
			return fmt.Errorf("truth: %w", err)
		}
	}
	if s.Degraded() {
		if truthFound {
			return nil
		}
		// While degraded the truth is the whole view, and it has no record.
		return fmt.Errorf("takeover %s: %w", key, idemstore.ErrNotOwner)
	}
	err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Takeover(ctx, key, fromOwner, toOwner, ttl) })
	switch {
	case err == nil:
		return nil
	case truthFound:
		s.log.Warn("takeover on redis failed; the truth was taken over", "operation_id", key, "err", err)
		return nil
	default:
		return fmt.Errorf("fast path: %w", err)
	}
}

// MarkNeedsReview marks the truth record of key NEEDS_REVIEW (Redis keeps
// the claim IN_FLIGHT).
func (s *Store) MarkNeedsReview(ctx context.Context, key, reason string) error {
	return s.truth.MarkNeedsReview(ctx, key, reason)
}

// List lists the truth records f selects (see pgstore.Store.List).
func (s *Store) List(ctx context.Context, f idemstore.ListFilter) ([]idemstore.Record, error) {
	return s.truth.List(ctx, f)
}

// FindRecent finds the most recent truth record of the same intent; see pgstore.Store.FindRecent.
func (s *Store) FindRecent(ctx context.Context, subject, scope, paramHash string, since time.Time) (idemstore.Record, error) {
	return s.truth.FindRecent(ctx, subject, scope, paramHash, since)
}

// RecordWebhook remembers a webhook event in the truth; see
// pgstore.Store.RecordWebhook.
func (s *Store) RecordWebhook(ctx context.Context, scope, signature string) (bool, error) {
	return s.truth.RecordWebhook(ctx, scope, signature)
}

// Reap deletes expired terminal truth records; see pgstore.Store.Reap.
func (s *Store) Reap(ctx context.Context, now time.Time) (int64, error) {
	return s.truth.Reap(ctx, now)
}

// fastCall runs op on Redis within the budget and degrades the store when
// Redis is unavailable (unless the caller's own context ended).
func (s *Store) fastCall(ctx context.Context, op func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RedisBudget)
	defer cancel()
	err := op(rctx)
	if err != nil && errors.Is(err, idemstore.ErrUnavailable) && ctx.Err() == nil {
		s.degrade(err)
	}
	return err
}

// degrade switches to the PostgreSQL-only path and starts the prober.
func (s *Store) degrade(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.degraded.Load() {
		return
	}
	s.degraded.Store(true)
	s.degradedGauge.Set(1)
	s.log.Warn("redis unavailable: idempotency store degraded to PostgreSQL only", "err", cause)
	s.wg.Add(1)
	go s.probe()
}

// probe PINGs Redis every ProbeInterval until it answers, then flips back.
func (s *Store) probe() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.RedisBudget)
		err := s.fast.Ping(ctx)
		cancel()
		if err != nil {
			continue
		}
		s.mu.Lock()
		s.degraded.Store(false)
		s.degradedGauge.Set(0)
		s.mu.Unlock()
		s.log.Info("redis answers again: idempotency store back on the fast path")
		return
	}
}
