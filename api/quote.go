package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/params"
)

// maxQuoteBytes bounds a quote answer.
const maxQuoteBytes = 64 << 10

// maxReasonBytes bounds the downstream's words quoted in a reason.
const maxReasonBytes = 500

// Message keys of the details of a failed quote.
const (
	detailQuoteTimeout     = "detail.quote_timeout"
	detailQuoteUnreachable = "detail.quote_unreachable"
	detailQuoteStatus      = "detail.quote_status"
	detailQuoteBadAnswer   = "detail.quote_bad_answer"
	detailQuoteExpired     = "detail.quote_expired"
)

// quoteError is a quote that could not be used. A refusal is the
// downstream's definite "no" to these params (a 4xx other than 408 and 429):
// sending them again cannot help. Anything else (transport errors, timeouts,
// 5xx, 408, 429, an unreadable answer) is transient.
type quoteError struct {
	// refused marks a definite refusal.
	refused bool
	// httpStatus is the downstream's HTTP status, 0 without an answer.
	httpStatus int
	// reason is the downstream's own words of a refusal.
	reason string
	// problems are the fields a refusal names.
	problems []params.FieldProblem
	// detail is the message key telling the agent what went wrong.
	detail string
	// err is the underlying failure, for the log.
	err error
}

// Error implements error.
func (e *quoteError) Error() string {
	if e.refused {
		return fmt.Sprintf("quote refused: HTTP %d: %s", e.httpStatus, e.reason)
	}
	return fmt.Sprintf("quote: %v", e.err)
}

// Unwrap returns the underlying failure.
func (e *quoteError) Unwrap() error { return e.err }

// refusedStatus reports whether an HTTP status of a quote endpoint is a
// definite refusal of the params.
func refusedStatus(code int) bool {
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// fetchQuote POSTs the normalized bound params to the action's quote
// endpoint and returns its JSON answer and its expires_at (zero when absent).
// Every failure is a *quoteError.
func (s *Server) fetchQuote(ctx context.Context, action *catalog.Action, bound map[string]any) (map[string]any, time.Time, error) {
	timeout := action.Downstream.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	transient := func(detail string, err error) error {
		return &quoteError{detail: detail, err: err}
	}
	body, err := json.Marshal(bound)
	if err != nil {
		return nil, time.Time{}, transient(detailQuoteBadAnswer, fmt.Errorf("encode request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action.Downstream.Quote, bytes.NewReader(body))
	if err != nil {
		return nil, time.Time{}, transient(detailQuoteUnreachable, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, time.Time{}, transient(detailQuoteTimeout, err)
		}
		return nil, time.Time{}, transient(detailQuoteUnreachable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxQuoteBytes))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, time.Time{}, transient(detailQuoteTimeout, fmt.Errorf("read: %w", err))
		}
		return nil, time.Time{}, transient(detailQuoteUnreachable, fmt.Errorf("read: %w", err))
	}
	if refusedStatus(resp.StatusCode) {
		reason, problems := downstreamRefusal(resp.StatusCode, raw)
		return nil, time.Time{}, &quoteError{refused: true, httpStatus: resp.StatusCode, reason: reason, problems: problems}
	}
	if resp.StatusCode/100 != 2 {
		return nil, time.Time{}, &quoteError{httpStatus: resp.StatusCode, detail: detailQuoteStatus,
			err: fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)}
	}
	var q map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&q); err != nil {
		return nil, time.Time{}, transient(detailQuoteBadAnswer, fmt.Errorf("decode: %w", err))
	}
	var exp time.Time
	if v, ok := q["expires_at"]; ok && v != nil {
		str, ok := v.(string)
		if !ok {
			return nil, time.Time{}, transient(detailQuoteBadAnswer, errors.New("expires_at is not a string"))
		}
		if exp, err = time.Parse(time.RFC3339Nano, str); err != nil {
			return nil, time.Time{}, transient(detailQuoteBadAnswer, fmt.Errorf("expires_at: %w", err))
		}
	}
	return q, exp, nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// downstreamRefusal reads the reason and the named fields of a refusal body
// in the shapes real APIs use: {"error":"code","message":"..."} (this
// project's simulator), Stripe's {"error":{"message","param","code"}},
// {"message","errors":[{"field"|"param"|"name","message"|"problem"|"reason"}]}
// and RFC 9457 problem details ({"title","detail","invalid-params"}). A body
// in none of them is quoted as text.
func downstreamRefusal(code int, raw []byte) (string, []params.FieldProblem) {
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		text := strings.TrimSpace(string(raw))
		if text == "" {
			return fmt.Sprintf("HTTP %d %s", code, http.StatusText(code)), nil
		}
		return truncateReason(text), nil
	}
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	var parts []string
	add := func(p string) {
		if p != "" && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	var problems []params.FieldProblem
	addProblems := func(list any) {
		items, _ := list.([]any)
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			field := str(m, "field", "param", "name", "pointer")
			problem := str(m, "problem", "message", "reason", "detail")
			if field != "" {
				problems = append(problems, params.FieldProblem{Field: field, Problem: problem})
			}
		}
	}
	switch e := body["error"].(type) {
	case string:
		add(e)
	case map[string]any:
		add(str(e, "code", "type"))
		add(str(e, "message"))
		if param := str(e, "param", "field"); param != "" {
			problems = append(problems, params.FieldProblem{Field: param, Problem: str(e, "message")})
		}
		addProblems(e["errors"])
	}
	add(str(body, "code", "title"))
	add(str(body, "message", "detail"))
	addProblems(body["errors"])
	addProblems(body["invalid-params"])
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d %s", code, http.StatusText(code)))
	}
	return truncateReason(strings.Join(parts, ": ")), problems
}

// truncateReason bounds the downstream's words quoted to the agent.
func truncateReason(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
