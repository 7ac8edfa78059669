package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/downstream"
)

// TestEveryQuoteFailureHasItsDetail: each failure a quote can report is
// told to the agent by a detail of its own (DetailKeys lists them for the
// renderer's check of their texts).
func TestEveryQuoteFailureHasItsDetail(t *testing.T) {
	t.Parallel()
	for _, f := range []downstream.QuoteFailure{downstream.QuoteTimeout, downstream.QuoteUnreachable,
		downstream.QuoteStatus, downstream.QuoteBadAnswer, downstream.QuoteExpired} {
		key, ok := quoteDetails[f]
		require.True(t, ok, "quote failure %q has no detail", f)
		assert.Contains(t, DetailKeys(), key)
	}
	assert.Len(t, quoteDetails, 5, "a detail for a failure the list above does not name")
}
