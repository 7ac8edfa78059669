package api

import (
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

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
}

// finalEntry is a kept terminal record and the end of its replay.
type finalEntry struct {
	rec   idemstore.Record
	until time.Time
}

// newFinals returns finals of at most size records, nil when size is 0.
func newFinals(size int) (*finals, error) {
	if size == 0 {
		return nil, nil
	}
	records, err := lru.New[string, finalEntry](size)
	if err != nil {
		return nil, fmt.Errorf("final records: %w", err)
	}
	return &finals{records: records}, nil
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
		return idemstore.Record{}, false
	}
	if !now.Before(e.until) {
		f.records.Remove(opID)
		return idemstore.Record{}, false
	}
	return e.rec, true
}
