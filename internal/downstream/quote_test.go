package downstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/plan"
)

// TestHTTPQuote checks the HTTP kind's quote: the answer and its
// expires_at, a refusal with the downstream's words and fields in each shape
// real APIs use, and the transient failures.
func TestHTTPQuote(t *testing.T) {
	kind, err := downstream.For(plan.KindHTTP)
	require.NoError(t, err)
	quoter, ok := kind.(downstream.Quoter)
	require.True(t, ok, "the HTTP kind quotes")

	var status int
	var body string
	var delay time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got map[string]any
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil || got["amount"] != "12.50" {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		time.Sleep(delay)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	quote := func() (downstream.Quote, *downstream.QuoteError) {
		q, err := quoter.Quote(context.Background(), downstream.QuoteCall{
			URL: srv.URL, Bound: map[string]any{"amount": "12.50"}, Timeout: 200 * time.Millisecond})
		if err == nil {
			return q, nil
		}
		var qe *downstream.QuoteError
		require.True(t, errors.As(err, &qe), "every failure is a *QuoteError: %v", err)
		return q, qe
	}

	status, body = 200, `{"fee":"0.25","expires_at":"2026-12-01T12:00:00Z"}`
	q, qe := quote()
	require.Nil(t, qe)
	assert.Equal(t, json.Number("0.25"), json.Number(q.Answer["fee"].(string)))
	assert.Equal(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), q.ExpiresAt)

	refusals := []struct {
		body, reason string
		fields       []downstream.FieldRefusal
	}{
		{`{"error":"payee_blocked","message":"this payee cannot receive money"}`, "payee_blocked: this payee cannot receive money", nil},
		{`{"error":{"code":"amount_too_large","message":"too much","param":"amount"}}`, "amount_too_large: too much",
			[]downstream.FieldRefusal{{Field: "amount", Problem: "too much"}}},
		{`{"title":"Invalid","detail":"bad payee","invalid-params":[{"name":"payee_id","reason":"unknown"}]}`, "Invalid: bad payee",
			[]downstream.FieldRefusal{{Field: "payee_id", Problem: "unknown"}}},
		{`not json`, "not json", nil},
		{``, "HTTP 422 Unprocessable Entity", nil},
	}
	for _, r := range refusals {
		status, body = 422, r.body
		_, qe := quote()
		require.NotNil(t, qe, r.body)
		assert.True(t, qe.Refused, r.body)
		assert.Equal(t, 422, qe.HTTPStatus)
		assert.Equal(t, r.reason, qe.Reason, r.body)
		assert.Equal(t, r.fields, qe.Fields, r.body)
	}

	for _, c := range []struct {
		status int
		body   string
		want   downstream.QuoteFailure
	}{
		{503, `{"error":"down"}`, downstream.QuoteStatus},
		{429, `{"error":"slow down"}`, downstream.QuoteStatus},
		{200, `{"fee":`, downstream.QuoteBadAnswer},
		{200, `{"expires_at":12}`, downstream.QuoteBadAnswer},
	} {
		status, body = c.status, c.body
		_, qe := quote()
		require.NotNil(t, qe, c.body)
		assert.False(t, qe.Refused, "HTTP %d is not a refusal", c.status)
		assert.Equal(t, c.want, qe.Failure, c.body)
	}

	status, body, delay = 200, `{}`, time.Second
	_, qe = quote()
	require.NotNil(t, qe)
	assert.Equal(t, downstream.QuoteTimeout, qe.Failure)
	delay = 0

	srv.Close()
	_, qe = quote()
	require.NotNil(t, qe)
	assert.Equal(t, downstream.QuoteUnreachable, qe.Failure)
}
