package simulator

import (
	"net/http"
	"strings"
	"time"
)

// Quote is the JSON of POST /v1/quotes: the fee of a transfer and how long
// the quote holds.
type Quote struct {
	// QuoteID is "q_" and random hex; quotes are not stored.
	QuoteID string `json:"quote_id"`
	// Amount is the exact decimal amount, reduced ("12.5").
	Amount string `json:"amount"`
	// Currency is the currency as given.
	Currency string `json:"currency"`
	// Fee is 1% of the amount rounded half up to two decimals, at least "0.25".
	Fee string `json:"fee"`
	// ExpiresAt is RFC 3339 in UTC, the quote TTL (or quote_ttl_ms) after now.
	ExpiresAt string `json:"expires_at"`
}

func (s *Server) handleQuote(w http.ResponseWriter, r *http.Request) {
	p, err := readTransfer(r, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	f, ok := s.beforeCounted(w, r, quoteFailNextColumn, "injected failure (quote_fail_next): no quote")
	if !ok {
		return
	}
	if strings.HasPrefix(p.payeeID, BlockedPayeePrefix) {
		writeError(w, http.StatusUnprocessableEntity, CodePayeeBlocked, "payee "+p.payeeID+" is blocked: no transfer to it can be quoted")
		return
	}
	ttl := s.quoteTTL
	if f.QuoteTTLMS > 0 {
		ttl = time.Duration(f.QuoteTTLMS) * time.Millisecond
	}
	writeJSON(w, http.StatusOK, Quote{
		QuoteID:   newID("q_"),
		Amount:    p.amount,
		Currency:  p.currency,
		Fee:       p.fee,
		ExpiresAt: s.now().Add(ttl).UTC().Format(time.RFC3339),
	})
}
