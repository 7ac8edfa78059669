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
	"github.com/oncegate/oncegate/operation"
)

const (
	// DefaultRedisBudget is Options.RedisBudget when unset.
	DefaultRedisBudget = 150 * time.Millisecond
	// DefaultProbeInterval is Options.ProbeInterval when unset.
	DefaultProbeInterval = time.Second
	// DefaultRefillTTL is the TTL of a refilled terminal record when the
	// claim carries no terminal TTL.
	DefaultRefillTTL = 24 * time.Hour
	// DefaultFastPathLease is Options.FastPathLease when unset.
	DefaultFastPathLease = 30 * time.Second
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
	// IntentHorizon is how far back a warm-up of the recent-intent index
	// loads a subject's intents from the truth: the longest
	// duplicate_intent_window of the catalog. Default
	// operation.DefaultIntentWindow.
	IntentHorizon time.Duration
	// FastPathLease is how long a claim made on the truth alone (Redis
	// unavailable, or its recent-intent index not written) keeps every
	// gateway from trusting the recent-intent index: the lease is taken in
	// the truth before such a claim and renewed while they go on. Longer
	// than the clock skew between the gateways. Default 30s.
	FastPathLease time.Duration
}

// Store is the combined degrading store: an idemstore.Store.
type Store struct {
	fast  idemstore.FastPath
	truth idemstore.Truth
	opts  Options
	log   *slog.Logger
	now   func() time.Time

	// epoch is the fast-path epoch as the watcher last heard it; nil:
	// unknown (not heard yet, or the watch broke).
	epoch     atomic.Pointer[idemstore.FastPathEpoch]
	watchOnce sync.Once
	// leasedUntil is when the lease this store last took ends (unix ns).
	leasedUntil atomic.Int64
	leaseMu     sync.Mutex
	// warming holds the subjects whose index a warm-up is completing.
	warming sync.Map

	degraded atomic.Bool
	mu       sync.Mutex // serializes degrade/recover transitions and Close
	closed   bool
	ctx      context.Context // canceled by Close; stops the prober
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	degradedGauge prometheus.Gauge
	fallbacks     prometheus.Counter
	refills       prometheus.Counter
	recentAnswers *prometheus.CounterVec
	leases        prometheus.Counter
	epochGauge    prometheus.Gauge
}

var _ idemstore.Store = (*Store)(nil)

// New returns a store with fast (the Redis fast path) in front of truth (the
// PostgreSQL truth). Close stops the prober; the caller owns both backends
// and closes them after it.
func New(fast idemstore.FastPath, truth idemstore.Truth, opts Options) *Store {
	if opts.RedisBudget <= 0 {
		opts.RedisBudget = DefaultRedisBudget
	}
	if opts.IntentHorizon <= 0 {
		opts.IntentHorizon = operation.DefaultIntentWindow
	}
	if opts.FastPathLease <= 0 {
		opts.FastPathLease = DefaultFastPathLease
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		fast: fast, truth: truth, opts: opts, log: opts.Logger.With("component", "idemstore"), now: time.Now,
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
		recentAnswers: register(opts.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_amnesia_guard_answers_total",
			Help: "Amnesia guard lookups by who answered them: index (Redis's recent-intent index alone), truth (PostgreSQL).",
		}, []string{"by"})),
		leases: register(opts.Registerer, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oncegate_fast_path_leases_total",
			Help: "Fast-path leases taken in the truth before claims the recent-intent index missed.",
		})),
		epochGauge: register(opts.Registerer, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oncegate_fast_path_epoch",
			Help: "The fast-path epoch this store last heard from the truth (0: not heard, or the watch is broken).",
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

// Degraded reports whether the store currently runs on PostgreSQL only.
func (s *Store) Degraded() bool { return s.degraded.Load() }

// Ready reports whether the truth (PostgreSQL) answers; Redis is optional.
func (s *Store) Ready(ctx context.Context) error { return s.truth.Ready(ctx) }

// Close stops the prober. It does not close the backends.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
}

// Acquire claims c.OperationID: Redis answers first (unless degraded), the truth
// is asked what Redis could have got wrong, and decide (decide.go) merges
// the two answers and plans the repairs of Redis: a terminal record Redis
// lost is refilled, a Redis claim the truth refused is released, a Redis
// claim the truth holds under an earlier owner mirrors that owner. Redis
// unavailable: the store degrades and the truth alone claims (insert, or
// read back the existing record). The truth unavailable too: an error
// wrapping idemstore.ErrUnavailable, and nothing was consumed.
//
// Known window: while Redis starts failing, one caller can be ACQUIRED on
// Redis while another, whose Redis call timed out, inserts into the truth
// first; the truth's unique key lets only one of them be ACQUIRED, and the
// other answers IN_FLIGHT (its Redis claim mirrors the truth's owner).
func (s *Store) Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	s.watchEpoch()
	fast := fastAnswer{Unavailable: true}
	indexed := false
	var marker *idemstore.IndexMarker
	if !s.Degraded() {
		err := s.fastCall(ctx, func(ctx context.Context) error {
			fc, err := s.fast.Acquire(ctx, c)
			fast.Decision, indexed, marker = fc.ClaimDecision, fc.Indexed, fc.Marker
			return err
		})
		switch {
		case err == nil:
			fast.Unavailable = false
		case !errors.Is(err, idemstore.ErrUnavailable) || ctx.Err() != nil:
			return idemstore.ClaimDecision{}, fmt.Errorf("fast path: %w", err)
		}
	}
	if fast.Unavailable {
		s.fallbacks.Inc()
	}
	var truth truthAnswer
	switch queryFor(fast) {
	case queryClaim:
		if !needsLease(fast, indexed) {
			truth = s.claimTruth(ctx, c)
		} else if err := s.lease(ctx); err != nil {
			// No claim the recent-intent index misses without a lease.
			truth = truthAnswer{Kind: truthFailed, Err: err}
		} else {
			truth = s.claimTruth(ctx, c)
		}
	case queryLookup:
		truth = s.lookUpTruth(ctx, c.OperationID)
	case queryNone:
	}
	p := decide(c, fast, truth)
	if p.ReleaseFast {
		s.release(ctx, c.OperationID, c.Owner)
	}
	if p.Refill {
		s.refill(ctx, p.RefillRecord, c.TerminalTTL)
	}
	if p.MirrorOwner != "" {
		err := s.fastCall(ctx, func(ctx context.Context) error {
			return s.fast.Takeover(ctx, idemstore.TakeoverParams{OperationID: c.OperationID, FromOwner: c.Owner, ToOwner: p.MirrorOwner, TTL: c.InFlightTTL})
		})
		if err != nil {
			s.log.Warn("mirror the truth's owner in redis failed", "operation_id", c.OperationID, "err", err)
		}
	}
	if p.Err != nil {
		return idemstore.ClaimDecision{}, p.Err
	}
	if epoch := epochAt(s.epoch.Load(), s.now()); p.Answer.Outcome == idemstore.OutcomeAcquired && warmAfterClaim(epoch, indexed, marker) {
		s.warmLater(c.Subject, epoch.Value)
	}
	return p.Answer, nil
}

// claimTruth claims c on the truth (queryClaim).
func (s *Store) claimTruth(ctx context.Context, c idemstore.Claim) truthAnswer {
	d, err := s.truth.Acquire(ctx, c)
	switch {
	case err != nil:
		return truthAnswer{Kind: truthFailed, Err: err}
	case d.Outcome == idemstore.OutcomeAcquired:
		return truthAnswer{Kind: truthClaimed, Record: d.Record, Usage: d.Usage}
	case d.Outcome == idemstore.OutcomeLimitExceeded, d.Outcome == idemstore.OutcomeMandateRefused:
		return truthAnswer{Kind: truthRefused, Usage: d.Usage, MandateRefusal: d.MandateRefusal}
	default:
		return truthAnswer{Kind: truthFound, Record: d.Record}
	}
}

// lookUpTruth reads the truth's record of the operation (queryLookup).
func (s *Store) lookUpTruth(ctx context.Context, opID string) truthAnswer {
	rec, err := s.truth.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return truthAnswer{Kind: truthAbsent}
	case err != nil:
		return truthAnswer{Kind: truthFailed, Err: err}
	default:
		return truthAnswer{Kind: truthFound, Record: rec}
	}
}

// refill writes the truth's terminal record rec back into Redis; failures
// are only logged (the next acquire checks the truth again).
func (s *Store) refill(ctx context.Context, rec idemstore.Record, ttl time.Duration) {
	if ttl <= 0 {
		ttl = DefaultRefillTTL
	}
	err := s.fastCall(ctx, func(ctx context.Context) error {
		return s.fast.Refill(ctx, idemstore.RefillParams{Record: rec, TTL: ttl})
	})
	if err != nil {
		s.log.Warn("refill redis from the truth failed", "operation_id", rec.OperationID, "err", err)
		return
	}
	s.refills.Inc()
}

// Release gives back an IN_FLIGHT claim that p.Owner holds and could not act
// on: the caller has made sure that no workflow of the operation exists (its start
// failed), so nothing ran and nothing is consumed; the next confirm of the
// same fingerprint claims it at once instead of waiting for the orphan grace
// period. The truth's claim is deleted (owner-checked; ErrNotOwner when
// another owner holds it) and Redis's claim is released when Redis answers.
// A claim only Redis holds is released there; ErrNotFound when neither
// holds a claim of p.Owner that can be released. decideRelease
// (decide_release.go) decides.
func (s *Store) Release(ctx context.Context, p idemstore.ReleaseParams) error {
	var in releaseFacts
	for {
		plan := decideRelease(in)
		switch plan.Ask {
		case releaseAskTruth:
			in.Truth = replied(s.truth.Release(ctx, p))
		case releaseAskFast:
			in.Fast = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) {
				return idemstore.Record{}, s.fast.Release(ctx, p)
			})
		case releaseDecided:
			if plan.Ignored != nil {
				s.log.Warn("release redis claim failed", "operation_id", p.OperationID, "err", plan.Ignored)
			}
			return plan.Err
		}
	}
}

// release gives back a Redis claim this store just took; failures are only
// logged (the claim then expires with its in-flight TTL).
func (s *Store) release(ctx context.Context, opID, owner string) {
	err := s.fastCall(ctx, func(ctx context.Context) error {
		return s.fast.Release(ctx, idemstore.ReleaseParams{OperationID: opID, Owner: owner})
	})
	if err != nil {
		s.log.Warn("release redis claim failed", "operation_id", opID, "err", err)
	}
}

// Finalize writes the outcome to the truth first (its errors are returned),
// then to Redis, owner-checked, within the budget: decideFinalize
// (decide_finalize.go) decides. When the truth has no record (the claim
// lives only on Redis: an orphan taken over before any truth claim), the
// Redis claim is claimed on the truth first if f.Owner holds it (while
// degraded: ErrNotOwner, the truth being the whole view). Redis held by
// another owner (or gone) returns idemstore.ErrFastPathNotOwner: the truth
// stands and a newer owner, or the next acquire, refills Redis. Redis
// unavailable is ignored (logged).
func (s *Store) Finalize(ctx context.Context, f idemstore.Finalization) error {
	var in finalizeFacts
	for {
		p := decideFinalize(f, in)
		switch p.Ask {
		case finalizeAskTruth:
			in.Truth = replied(s.truth.Finalize(ctx, f))
		case finalizeAskTruthRecord:
			in.TruthRecord = answerOf(s.truth.Get(ctx, f.OperationID))
		case finalizeAskFastClaim:
			in.FastClaim = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) { return s.fast.Get(ctx, f.OperationID) })
		case finalizeAskClaimTruth:
			_, err := s.truth.Acquire(ctx, p.Claim)
			in.ClaimTruth = replied(err)
		case finalizeAskTruthAgain:
			in.TruthAgain = replied(s.truth.Finalize(ctx, f))
		case finalizeAskFast:
			in.Fast = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) {
				return idemstore.Record{}, s.fast.Finalize(ctx, f)
			})
		case finalizeAskRefillRecord:
			in.RefillRecord = answerOf(s.truth.Get(ctx, f.OperationID))
		case finalizeDecided:
			if p.Ignored != nil {
				s.log.Warn("finalize on redis skipped: unavailable; the truth is written", "operation_id", f.OperationID, "err", p.Ignored)
			}
			if p.Refill {
				s.refill(ctx, p.RefillRecord, f.TerminalTTL)
			}
			return p.Err
		}
	}
}

// FinalizeFast finalizes on Redis only, owner-checked. The gateway uses it
// to refill the fast path after attaching to a finished workflow.
func (s *Store) FinalizeFast(ctx context.Context, f idemstore.Finalization) error {
	if s.Degraded() {
		return fmt.Errorf("finalize %s on the fast path: degraded: %w", f.OperationID, idemstore.ErrUnavailable)
	}
	if err := s.fastCall(ctx, func(ctx context.Context) error { return s.fast.Finalize(ctx, f) }); err != nil {
		return fmt.Errorf("fast path: %w", err)
	}
	return nil
}

// Get reads the truth first, then Redis when the truth has no record or
// cannot answer: decideGet (decide_get.go) decides. ErrUnavailable when
// neither can answer.
func (s *Store) Get(ctx context.Context, opID string) (idemstore.Record, error) {
	var in getFacts
	for {
		p := decideGet(in)
		switch p.Ask {
		case getAskTruth:
			in.Truth = answerOf(s.truth.Get(ctx, opID))
		case getAskFast:
			in.Fast = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) { return s.fast.Get(ctx, opID) })
		case getDecided:
			return p.Record, p.Err
		}
	}
}

// Outcome answers an agent's status query: from Redis alone when Redis
// holds the operation's terminal record (written there only after the
// truth's, never overwritten, and what a replayed confirm answers too),
// else Get's answer (an IN_FLIGHT claim may hide a NEEDS_REVIEW or an
// outcome Redis lost, which the truth knows). outcomeOfFast decides.
func (s *Store) Outcome(ctx context.Context, opID string) (idemstore.Record, error) {
	fast := s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) { return s.fast.Get(ctx, opID) })
	if rec, final := outcomeOfFast(fast); final {
		return rec, nil
	}
	return s.Get(ctx, opID)
}

// outcomeOfFast says whether Redis's answer fast is a status's answer on
// its own: a terminal record. It does no I/O.
func outcomeOfFast(fast answer) (idemstore.Record, bool) {
	if fast.Reply == replyOK && fast.Record.State.Terminal() {
		return fast.Record, true
	}
	return idemstore.Record{}, false
}

// Takeover moves the IN_FLIGHT claim from p.FromOwner to p.ToOwner: on the
// truth when it holds a record (then the truth decides, and a stale Redis
// claim is only logged), and on Redis (which decides when the truth has no
// record): decideTakeover (decide_takeover.go) decides. While degraded the
// truth is the whole view: no truth record is ErrNotOwner.
func (s *Store) Takeover(ctx context.Context, p idemstore.TakeoverParams) error {
	var in takeoverFacts
	for {
		plan := decideTakeover(p, in)
		switch plan.Ask {
		case takeoverAskTruthRecord:
			in.TruthRecord = answerOf(s.truth.Get(ctx, p.OperationID))
		case takeoverAskTruth:
			in.Truth = replied(s.truth.Takeover(ctx, p))
		case takeoverAskFast:
			in.Fast = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) {
				return idemstore.Record{}, s.fast.Takeover(ctx, p)
			})
		case takeoverDecided:
			if plan.Ignored != nil {
				s.log.Warn("takeover on redis failed; the truth was taken over", "operation_id", p.OperationID, "err", plan.Ignored)
			}
			return plan.Err
		}
	}
}

// MarkNeedsReview marks the truth record NEEDS_REVIEW (Redis keeps the
// claim IN_FLIGHT).
func (s *Store) MarkNeedsReview(ctx context.Context, p idemstore.MarkNeedsReviewParams) error {
	return s.truth.MarkNeedsReview(ctx, p)
}

// RecordDownstreamState keeps the downstream's state on the truth record.
func (s *Store) RecordDownstreamState(ctx context.Context, p idemstore.DownstreamStateParams) error {
	return s.truth.RecordDownstreamState(ctx, p)
}

// List lists the truth records f selects.
func (s *Store) List(ctx context.Context, f idemstore.ListFilter) ([]idemstore.Record, error) {
	return s.truth.List(ctx, f)
}

// FindRecent finds the most recent operation of the same intent (the
// amnesia guard): from Redis's recent-intent index when it can answer for
// sure, else from the truth. It only reads. decideRecent
// (decide_recent.go) decides.
func (s *Store) FindRecent(ctx context.Context, p idemstore.FindRecentParams) (idemstore.Record, error) {
	s.watchEpoch()
	in := recentFacts{Intent: p, Epoch: epochAt(s.epoch.Load(), s.now())}
	for {
		plan := decideRecent(in)
		switch plan.Ask {
		case recentAskIndex:
			in.Index = s.askFast(ctx, func(ctx context.Context) (_ idemstore.Record, err error) {
				in.Read, err = s.fast.RecentIntent(ctx, p.Subject, p.Scope, p.ParamHash)
				return idemstore.Record{}, err
			})
		case recentAskRecord:
			in.Record = s.askFast(ctx, func(ctx context.Context) (idemstore.Record, error) {
				return s.fast.Get(ctx, plan.Entry.OperationID)
			})
		case recentAskTruth:
			in.Truth = answerOf(s.truth.FindRecent(ctx, p))
		case recentDecided:
			by := "index"
			if in.Truth.Reply != replyNotAsked {
				by = "truth"
			}
			s.recentAnswers.WithLabelValues(by).Inc()
			return plan.Record, plan.Err
		}
	}
}

// RecordWebhook remembers a webhook event in the truth.
func (s *Store) RecordWebhook(ctx context.Context, p idemstore.WebhookParams) (bool, error) {
	return s.truth.RecordWebhook(ctx, p)
}

// Reap deletes expired terminal truth records.
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

// askFast runs op on Redis (fastCall) and classifies its answer; while the
// store is degraded Redis is not asked: replySkipped.
func (s *Store) askFast(ctx context.Context, op func(context.Context) (idemstore.Record, error)) answer {
	if s.Degraded() {
		return answer{Reply: replySkipped}
	}
	var rec idemstore.Record
	err := s.fastCall(ctx, func(ctx context.Context) (err error) {
		rec, err = op(ctx)
		return err
	})
	return answerOf(rec, err)
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
