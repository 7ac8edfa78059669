package redisstore

import (
	"encoding/json"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// resultsSize is how many decoded result blobs a store keeps (the outcomes
// replayed or polled most recently), as many as the gateway keeps their
// answer forms.
const resultsSize = 4096

// results keeps result blobs decoded, keyed by the blob's bytes: a terminal
// record's blob never changes, so a replay or status poll of a finished
// operation does not unmarshal it again, and other bytes never get another
// blob's fields. Bounded (least recently used out first) and safe for
// concurrent use; the Result of a decoded blob is shared and never changed.
type results struct {
	blobs *lru.Cache[string, resultBlob]
}

// newResults returns a results of at most size blobs (size > 0).
func newResults(size int) *results {
	blobs, err := lru.New[string, resultBlob](size)
	if err != nil {
		panic(fmt.Sprintf("redisstore: results of size %d: %v", size, err))
	}
	return &results{blobs: blobs}
}

// decode fills rec from a result blob ("" is no result), unmarshalling
// only a blob it has not kept.
func (r *results) decode(s string, rec *idemstore.Record) error {
	if s == "" {
		return nil
	}
	b, ok := r.blobs.Get(s)
	if !ok {
		if err := json.Unmarshal([]byte(s), &b); err != nil {
			return fmt.Errorf("decode result: %w", err)
		}
		r.blobs.Add(s, b)
	}
	rec.Result, rec.ResultRef, rec.Reason, rec.FailureKind = b.Result, b.ResultRef, b.Reason, operation.FailureKind(b.FailureKind)
	rec.ResolvedBy, rec.ResolutionNote = b.ResolvedBy, b.ResolutionNote
	if b.CompletedAt > 0 {
		rec.CompletedAt = time.UnixMilli(b.CompletedAt)
		rec.UpdatedAt = rec.CompletedAt
	}
	return nil
}
