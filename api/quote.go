package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/oncegate/oncegate/internal/catalog"
)

// maxQuoteBytes bounds a quote answer.
const maxQuoteBytes = 64 << 10

// fetchQuote POSTs the normalized bound params to the action's quote
// endpoint and returns its JSON answer and its expires_at (zero when absent).
func (s *Server) fetchQuote(ctx context.Context, action *catalog.Action, bound map[string]any) (map[string]any, time.Time, error) {
	timeout := action.Downstream.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(bound)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("quote: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action.Downstream.Quote, bytes.NewReader(body))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("quote: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("quote: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxQuoteBytes))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("quote: read: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, time.Time{}, fmt.Errorf("quote: HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var q map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&q); err != nil {
		return nil, time.Time{}, fmt.Errorf("quote: decode: %w", err)
	}
	var exp time.Time
	if v, ok := q["expires_at"]; ok && v != nil {
		str, ok := v.(string)
		if !ok {
			return nil, time.Time{}, fmt.Errorf("quote: expires_at is not a string")
		}
		if exp, err = time.Parse(time.RFC3339Nano, str); err != nil {
			return nil, time.Time{}, fmt.Errorf("quote: expires_at: %w", err)
		}
	}
	return q, exp, nil
}
