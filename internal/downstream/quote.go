package downstream

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
)

// maxQuoteBytes bounds a quote answer.
const maxQuoteBytes = 64 << 10

// maxReasonBytes bounds the downstream's words quoted in a refusal's reason.
const maxReasonBytes = 500

// Quoter is the optional part of a Kind that prices an operation before it
// is confirmed (the preview asks it; the fingerprint expires with the quote).
type Quoter interface {
	// Quote asks for a quote of the bound params. Every failure is a *QuoteError.
	Quote(ctx context.Context, q QuoteCall) (Quote, error)
}

// QuoteCall is one quote request.
type QuoteCall struct {
	// URL is the quote endpoint.
	URL string
	// Bound are the normalized bound params.
	Bound map[string]any
	// Timeout bounds the call.
	Timeout time.Duration
	// HTTP sends the request.
	HTTP *http.Client
}

// Quote is a downstream's quote.
type Quote struct {
	// Answer is the quote's JSON object (numbers kept as json.Number).
	Answer map[string]any
	// ExpiresAt is the quote's expires_at; zero when it has none.
	ExpiresAt time.Time
}

// QuoteFailure says why a quote could not be had when it was not refused.
type QuoteFailure string

const (
	// QuoteTimeout means the quote endpoint did not answer in time.
	QuoteTimeout QuoteFailure = "timeout"
	// QuoteUnreachable means the quote endpoint could not be reached.
	QuoteUnreachable QuoteFailure = "unreachable"
	// QuoteStatus means it answered an HTTP status that is not an answer (5xx, 408, 429).
	QuoteStatus QuoteFailure = "status"
	// QuoteBadAnswer means its answer could not be read.
	QuoteBadAnswer QuoteFailure = "bad_answer"
	// QuoteExpired means the quote's expires_at had passed when it was
	// read (the caller checks it against its clock).
	QuoteExpired QuoteFailure = "expired"
)

// FieldRefusal is a field a refusal names, with the downstream's words.
type FieldRefusal struct {
	// Field is the field's name as the downstream wrote it.
	Field string
	// Problem is the downstream's words about it.
	Problem string
}

// QuoteError is a quote that could not be used. A refusal (Refused) is the
// downstream's definite "no" to these params (a 4xx other than 408 and
// 429): asking again cannot help. Anything else (Failure) is transient.
type QuoteError struct {
	// Refused marks a definite refusal.
	Refused bool
	// HTTPStatus is the downstream's HTTP status, 0 without an answer.
	HTTPStatus int
	// Reason is the downstream's own words of a refusal.
	Reason string
	// Fields are the fields a refusal names.
	Fields []FieldRefusal
	// Failure says what went wrong when it was not a refusal.
	Failure QuoteFailure
	// Err is the underlying failure, for the log.
	Err error
}

// Error describes the failure.
func (e *QuoteError) Error() string {
	if e.Refused {
		return fmt.Sprintf("quote refused: HTTP %d: %s", e.HTTPStatus, e.Reason)
	}
	return fmt.Sprintf("quote: %v", e.Err)
}

// Unwrap returns the underlying failure.
func (e *QuoteError) Unwrap() error { return e.Err }

// refusedQuoteStatus reports whether an HTTP status of a quote endpoint is a
// definite refusal of the params.
func refusedQuoteStatus(code int) bool {
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// Quote POSTs the bound params to the quote endpoint and reads its JSON
// answer and expires_at.
func (HTTP) Quote(ctx context.Context, q QuoteCall) (Quote, error) {
	ctx, cancel := context.WithTimeout(ctx, q.Timeout)
	defer cancel()
	transient := func(f QuoteFailure, err error) error { return &QuoteError{Failure: f, Err: err} }
	body, err := json.Marshal(q.Bound)
	if err != nil {
		return Quote{}, transient(QuoteBadAnswer, fmt.Errorf("encode request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.URL, bytes.NewReader(body))
	if err != nil {
		return Quote{}, transient(QuoteUnreachable, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	client := q.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Quote{}, transient(unreachableOrTimeout(err), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxQuoteBytes))
	if err != nil {
		return Quote{}, transient(unreachableOrTimeout(err), fmt.Errorf("read: %w", err))
	}
	if refusedQuoteStatus(resp.StatusCode) {
		reason, fields := RefusalOfBody(resp.StatusCode, raw)
		return Quote{}, &QuoteError{Refused: true, HTTPStatus: resp.StatusCode, Reason: reason, Fields: fields}
	}
	if resp.StatusCode/100 != 2 {
		return Quote{}, &QuoteError{HTTPStatus: resp.StatusCode, Failure: QuoteStatus,
			Err: fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)}
	}
	var answer map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&answer); err != nil {
		return Quote{}, transient(QuoteBadAnswer, fmt.Errorf("decode: %w", err))
	}
	out := Quote{Answer: answer}
	if v, ok := answer["expires_at"]; ok && v != nil {
		str, ok := v.(string)
		if !ok {
			return Quote{}, transient(QuoteBadAnswer, errors.New("expires_at is not a string"))
		}
		if out.ExpiresAt, err = time.Parse(time.RFC3339Nano, str); err != nil {
			return Quote{}, transient(QuoteBadAnswer, fmt.Errorf("expires_at: %w", err))
		}
	}
	return out, nil
}

// unreachableOrTimeout tells a timeout from any other transport failure.
func unreachableOrTimeout(err error) QuoteFailure {
	var t interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout()) {
		return QuoteTimeout
	}
	return QuoteUnreachable
}

// RefusalOfBody reads the reason and the named fields of a refusal body in
// the shapes real APIs use: {"error":"code","message":"..."} (this
// project's simulator), Stripe's {"error":{"message","param","code"}},
// {"message","errors":[{"field"|"param"|"name","message"|"problem"|"reason"}]}
// and RFC 9457 problem details ({"title","detail","invalid-params"}). A body
// in none of them is quoted as text.
func RefusalOfBody(code int, raw []byte) (string, []FieldRefusal) {
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
	var fields []FieldRefusal
	addFields := func(list any) {
		items, _ := list.([]any)
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			if field := str(m, "field", "param", "name", "pointer"); field != "" {
				fields = append(fields, FieldRefusal{Field: field, Problem: str(m, "problem", "message", "reason", "detail")})
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
			fields = append(fields, FieldRefusal{Field: param, Problem: str(e, "message")})
		}
		addFields(e["errors"])
	}
	add(str(body, "code", "title"))
	add(str(body, "message", "detail"))
	addFields(body["errors"])
	addFields(body["invalid-params"])
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d %s", code, http.StatusText(code)))
	}
	return truncateReason(strings.Join(parts, ": ")), fields
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
