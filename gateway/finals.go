package gateway

import (
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/idemstore"
)

// finals keeps the terminal records this gateway has read from the store,
// by operation id, so that a replayed confirm and a status poll of a
// finished operation are answered without a store round trip.
//
// A DONE or FAILED record never changes: the truth refuses to overwrite a
// terminal record (idemstore.ErrAlreadyTerminal), an operator resolves
// only NEEDS_REVIEW, and nothing moves a record out of a terminal state.
// What does end is the replay owed: the fast path replays an outcome for
// the action's terminal_ttl after it completed, and the truth keeps it at
// least that long (pgstore's Reap), so an entry is served until
// CompletedAt + terminal_ttl and never after. Every gateway answers a finished operation the
// same from its own finals or from the store. Bounded (least recently
// used out first) and safe for concurrent use; a nil *finals keeps
// nothing (Config.FinalCache 0).
type finals struct {
	records *lru.Cache[string, finalEntry]
	// hits and misses count the lookups
	// (oncegate_final_cache_lookups_total): a kept record served, or none
	// kept (or its replay no longer owed) and the store asked.
	hits, misses prometheus.Counter
}

// The results of a lookup in finals: the labels of
// oncegate_final_cache_lookups_total.
const (
	// finalHit: a kept record answered, without a store round trip.
	finalHit = "hit"
	// finalMiss: no record kept, or its replay no longer owed; the store
	// was asked.
	finalMiss = "miss"
)

// finalEntry is a kept terminal record and the end of its replay.
type finalEntry struct {
	rec   idemstore.Record
	until time.Time
}

// newFinals returns finals of at most size records, nil when size is 0,
// counting its lookups on reg (reusing a collector already registered).
func newFinals(size int, reg prometheus.Registerer) (*finals, error) {
	if size == 0 {
		return nil, nil
	}
	records, err := lru.New[string, finalEntry](size)
	if err != nil {
		return nil, fmt.Errorf("final records: %w", err)
	}
	lookups, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_final_cache_lookups_total",
		Help: "Lookups of finished operations' records the gateway keeps (ONCEGATE_FINAL_CACHE) at a confirm and a status poll, " +
			"by result: hit (answered without a store round trip), miss (not kept, or its replay no longer owed: the store was asked).",
	}, []string{"result"}))
	if err != nil {
		return nil, err
	}
	return &finals{records: records, hits: lookups.WithLabelValues(finalHit), misses: lookups.WithLabelValues(finalMiss)}, nil
}

// keep remembers rec, read from the store, when it is terminal: until
// CompletedAt + terminalTTL (a record without a completion time is never
// served: its end is long past).
func (f *finals) keep(rec idemstore.Record, terminalTTL time.Duration) {
	if f == nil || !rec.State.Terminal() {
		return
	}
	f.records.Add(rec.OperationID, finalEntry{rec: rec, until: rec.CompletedAt.Add(terminalTTL)})
}

// get returns the kept terminal record of opID at now, if its replay is
// still owed; an entry past it is dropped.
func (f *finals) get(opID string, now time.Time) (idemstore.Record, bool) {
	if f == nil {
		return idemstore.Record{}, false
	}
	e, ok := f.records.Get(opID)
	if !ok {
		f.misses.Inc()
		return idemstore.Record{}, false
	}
	if !now.Before(e.until) {
		f.records.Remove(opID)
		f.misses.Inc()
		return idemstore.Record{}, false
	}
	f.hits.Inc()
	return e.rec, true
}
