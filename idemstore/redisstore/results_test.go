package redisstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
)

// A kept blob decodes to what unmarshalling it gives, every time; another
// blob never gets its fields; the cache holds at most its size.
func TestResultsDecodeAsUnmarshal(t *testing.T) {
	t.Parallel()
	r := newResults(2)
	done := idemstore.Record{Result: json.RawMessage(`{"id":"tr_1","amount":12.5}`), ResultRef: "tr_1",
		CompletedAt: time.UnixMilli(1_700_000_000_123)}
	failed := idemstore.Record{Reason: "insufficient funds", FailureKind: "permanent", ResolvedBy: "ops",
		ResolutionNote: "refunded", CompletedAt: time.UnixMilli(1_700_000_000_456)}
	other := idemstore.Record{Result: json.RawMessage(`{"id":"tr_2"}`), ResultRef: "tr_2"}
	for range 2 {
		for _, want := range []idemstore.Record{done, failed, other, done} {
			blob, err := encodeResult(want)
			require.NoError(t, err)
			if !want.CompletedAt.IsZero() {
				want.UpdatedAt = want.CompletedAt
			}
			var got idemstore.Record
			require.NoError(t, r.decode(blob, &got))
			assert.Equal(t, want, got, blob)
		}
	}
	assert.Equal(t, 2, r.blobs.Len())
	var none idemstore.Record
	require.NoError(t, r.decode("", &none))
	assert.Equal(t, idemstore.Record{}, none)
	require.Error(t, r.decode("{not json", &none))
	assert.Equal(t, 2, r.blobs.Len(), "a blob that does not decode is not kept")
}
