package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// OutcomesChannel is the Redis Pub/Sub channel on which the finalize and
// refill scripts announce every terminal record they write, in the same
// atomic step as the write (outcomeMessage is its form). In a Redis Cluster
// a publish reaches the subscribers of every node.
const OutcomesChannel = "oncegate:outcomes"

// outcomesRetry is how long the feed waits before receiving again after its
// subscription broke (go-redis dials and subscribes again on that receive).
const outcomesRetry = 100 * time.Millisecond

// Outcomes is an idemstore.OutcomeFeed on OutcomesChannel: one subscription
// per process, and the watches of the operations the process waits for.
// Every process hears every outcome and keeps only those it watches (a
// message is one operation's record, a few hundred bytes).
type Outcomes struct {
	store *Store
	ps    *redis.PubSub
	log   *slog.Logger
	// ready says the subscription holds: from its confirmation until the
	// subscription breaks. It is set false under mu, with the watches lost
	// in the same step, so that no watch begins in between.
	ready atomic.Bool
	// subscriptions counts the subscription's confirmations (the first, and
	// one per subscription made again).
	subscriptions atomic.Int64
	mu            sync.Mutex
	watches       map[string][]*outcomeWatch
	done          chan struct{}
}

var _ idemstore.OutcomeFeed = (*Outcomes)(nil)

// outcomeWatch is one Watch's channels.
type outcomeWatch struct {
	outcome chan operation.Final
	lost    chan struct{}
}

// WatchOutcomes subscribes to OutcomesChannel and returns the feed, which
// watches answer once the subscription is confirmed (until then Watch says
// false). Close ends it.
func (s *Store) WatchOutcomes(logger *slog.Logger) *Outcomes {
	if logger == nil {
		logger = slog.Default()
	}
	o := &Outcomes{store: s, log: logger, watches: map[string][]*outcomeWatch{}, done: make(chan struct{})}
	o.ps = s.rdb.Subscribe(context.Background(), OutcomesChannel)
	go o.receive()
	return o
}

// Watch starts watching opID's outcome; false while the subscription is
// not confirmed or is broken.
func (o *Outcomes) Watch(opID string) (idemstore.OutcomeWatch, bool) {
	w := &outcomeWatch{outcome: make(chan operation.Final, 1), lost: make(chan struct{})}
	o.mu.Lock()
	if !o.ready.Load() {
		o.mu.Unlock()
		return idemstore.OutcomeWatch{}, false
	}
	o.watches[opID] = append(o.watches[opID], w)
	o.mu.Unlock()
	return idemstore.OutcomeWatch{Outcome: w.outcome, Lost: w.lost, Stop: func() { o.stop(opID, w) }}, true
}

// Ready reports whether the subscription holds.
func (o *Outcomes) Ready() bool { return o.ready.Load() }

// Subscriptions returns how many times the subscription was confirmed.
func (o *Outcomes) Subscriptions() int64 { return o.subscriptions.Load() }

// Close ends the subscription; watches still running are lost.
func (o *Outcomes) Close() error {
	err := o.ps.Close()
	<-o.done
	o.loseAll()
	return err
}

// stop removes w from opID's watches (when still there).
func (o *Outcomes) stop(opID string, w *outcomeWatch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ws := o.watches[opID]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(o.watches, opID)
	} else {
		o.watches[opID] = ws
	}
}

// receive reads the subscription until Close: outcomes go to their
// watches; a broken subscription loses every watch (an outcome may be
// published while it is broken) and is not ready until go-redis made it
// again (on the next receive: it dials and subscribes again).
func (o *Outcomes) receive() {
	defer close(o.done)
	ctx := context.Background()
	for {
		msg, err := o.ps.Receive(ctx)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			if o.loseAll() {
				o.log.Warn("outcome feed: subscription broken; confirms wait on their workflows until it is back", "err", err)
			}
			time.Sleep(outcomesRetry)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			// Made again only after a receive failed, which lost every
			// watch of the time in between.
			if o.subscriptions.Add(1) > 1 {
				o.log.Info("outcome feed: subscribed again")
			}
			o.ready.Store(true)
		case *redis.Message:
			o.deliver(m.Payload)
		}
	}
}

// deliver tells the watches of a message's operation its outcome. Every
// process hears every outcome: a message no watch waits for is dropped
// before its result blob is decoded.
func (o *Outcomes) deliver(payload string) {
	opID, state, blob, ok := splitOutcome(payload)
	if !ok {
		o.log.Warn("outcome feed: malformed message", "message", payload)
		return
	}
	o.mu.Lock()
	ws := o.watches[opID]
	delete(o.watches, opID)
	o.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	rec := idemstore.Record{State: state}
	if err := o.store.results.decode(blob, &rec); err != nil {
		o.log.Warn("outcome feed: undecodable result; its confirms wait on their workflows", "operation_id", opID, "err", err)
		for _, w := range ws {
			close(w.lost)
		}
		return
	}
	for _, w := range ws {
		w.outcome <- rec.Final() // buffered for one, and each watch is told once
	}
}

// splitOutcome reads an outcome message, "<key>\n<state>\n<result blob>"
// (see finalizeScript and refillScript), without decoding the blob.
func splitOutcome(payload string) (opID string, state operation.State, blob string, ok bool) {
	key, rest, ok := strings.Cut(payload, "\n")
	if !ok {
		return "", "", "", false
	}
	st, blob, ok := strings.Cut(rest, "\n")
	opID, isKey := opIDOfKey(key)
	if !ok || !isKey || !operation.State(st).Terminal() {
		return "", "", "", false
	}
	return opID, operation.State(st), blob, true
}

// loseAll marks the subscription broken, closes every watch's Lost and
// forgets them; it reports whether the subscription held until then.
func (o *Outcomes) loseAll() bool {
	o.mu.Lock()
	held := o.ready.Swap(false)
	ws := o.watches
	o.watches = map[string][]*outcomeWatch{}
	o.mu.Unlock()
	for _, list := range ws {
		for _, w := range list {
			close(w.lost)
		}
	}
	return held
}

// opIDOfKey returns the operation_id of an operation's key (Key's inverse).
func opIDOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, keySuffix)
}
