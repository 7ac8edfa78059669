package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// fakeGateway answers each request with the next scripted answer and
// records the bodies it received.
type fakeGateway struct {
	mu      sync.Mutex
	answers []func(http.ResponseWriter)
	bodies  []string
	paths   []string
	// query records each path as sent (escaped) with its query.
	query bool
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	path := r.URL.Path
	if f.query {
		path = r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			path += "?" + r.URL.RawQuery
		}
	}
	f.paths = append(f.paths, r.Method+" "+path)
	next := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	f.mu.Unlock()
	next(w)
}

// reply writes an answer with status and extra fields.
func reply(code int, st Status, extra map[string]any) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		body := map[string]any{"status": st, "meaning": "m", "instruction": "i", "retryable": st == status.TemporarilyUnavailable, "trace_id": "t1"}
		for k, v := range extra {
			body[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		if st.Replayed() {
			w.Header().Set(HeaderReplayed, "true")
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	}
}

// hangUp closes the connection without an answer: a transport failure.
func hangUp(w http.ResponseWriter) {
	conn, _, _ := w.(http.Hijacker).Hijack()
	_ = conn.Close()
}

// setup starts a fake gateway and a client whose waits are recorded, not slept.
func setup(t *testing.T, answers ...func(http.ResponseWriter)) (*Client, *fakeGateway, *[]time.Duration) {
	t.Helper()
	f := &fakeGateway{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "dev-alice")
	require.NoError(t, err)
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, f, &waits
}

func TestConfirmRetriesWithTheSameFingerprint(t *testing.T) {
	t.Parallel()
	c, f, waits := setup(t,
		reply(503, status.TemporarilyUnavailable, map[string]any{"retry_after_ms": 1500}),
		hangUp,
		reply(200, status.Completed, map[string]any{"operation_id": "op1", "result": map[string]any{"amount": "12.5"}, "result_ref": "tr_1"}),
	)
	a, err := c.Confirm(context.Background(), "payments.transfer", "fp-1", map[string]any{"amount": "12.50"})
	require.NoError(t, err)
	assert.Equal(t, status.Completed, a.Status)
	assert.Equal(t, "tr_1", a.ResultRef)
	require.Len(t, f.bodies, 3)
	for _, b := range f.bodies {
		assert.JSONEq(t, `{"fingerprint":"fp-1","params":{"amount":"12.50"}}`, b)
	}
	for _, p := range f.paths {
		assert.Equal(t, "POST /v1/actions/payments.transfer/confirm", p, "never a new preview")
	}
	assert.Equal(t, []time.Duration{1500 * time.Millisecond, 2 * DefaultBackoff}, *waits, "retry_after_ms, then the backoff")
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	c, f, waits := setup(t, reply(503, status.TemporarilyUnavailable, map[string]any{"retry_after_ms": 100000}))
	a, err := c.Confirm(context.Background(), "payments.transfer", "fp-1", map[string]any{})
	require.ErrorIs(t, err, ErrTemporarilyUnavailable)
	assert.Equal(t, status.TemporarilyUnavailable, a.Status)
	assert.Len(t, f.bodies, DefaultAttempts)
	require.Len(t, *waits, DefaultAttempts-1)
	assert.Equal(t, DefaultMaxBackoff, (*waits)[0], "retry_after_ms is capped")

	c, f, _ = setup(t, hangUp)
	_, err = c.Status(context.Background(), "op1")
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Len(t, f.bodies, DefaultAttempts)
}

func TestRateLimitedIsRetriedAfterItsWait(t *testing.T) {
	t.Parallel()
	c, f, waits := setup(t, reply(429, status.RateLimited, map[string]any{"retry_after_ms": 700}))
	_, err := c.Confirm(context.Background(), "payments.transfer", "fp-1", map[string]any{})
	require.ErrorIs(t, err, ErrRateLimited)
	assert.Len(t, f.bodies, DefaultAttempts)
	require.Len(t, *waits, DefaultAttempts-1)
	assert.Equal(t, 700*time.Millisecond, (*waits)[0], "the answer's wait is honoured")
	assert.True(t, isTransient(err))
}

func TestRetryStopsWithTheContext(t *testing.T) {
	t.Parallel()
	c, f, _ := setup(t, reply(503, status.TemporarilyUnavailable, map[string]any{"retry_after_ms": 10}))
	ctx, cancel := context.WithCancel(context.Background())
	c.sleep = func(context.Context, time.Duration) error { cancel(); return ctx.Err() }
	_, err := c.Preview(ctx, "payments.transfer", map[string]any{})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, ErrTemporarilyUnavailable)
	assert.Len(t, f.bodies, 1)
}

func TestRefusalsMatchTheirClass(t *testing.T) {
	t.Parallel()
	cases := map[Status]error{}
	for _, s := range status.For(status.Agent) {
		if info, _ := status.Lookup(s); info.Kind == status.Refusal && !isRetried(s) {
			cases[s] = ClassOf(s)
		}
	}
	for st, class := range cases {
		info, _ := status.Lookup(st)
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			c, f, _ := setup(t, reply(info.Code, st, map[string]any{
				"errors":           []map[string]string{{"field": "amount", "problem": "must be positive"}},
				"recent_operation": map[string]any{"operation_id": "op0", "state": "completed", "completed_at": "2026-01-02T03:04:05Z"},
			}))
			_, err := c.Confirm(context.Background(), "payments.transfer", "fp", map[string]any{})
			require.ErrorIs(t, err, class)
			assert.Len(t, f.bodies, 1, "a refusal is not retried")
			for _, other := range cases {
				if other != class {
					assert.NotErrorIs(t, err, other)
				}
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, st, e.Status)
			assert.Equal(t, info.Code, e.HTTPCode)
			assert.Equal(t, []Problem{{Field: "amount", Problem: "must be positive"}}, e.Problems)
			require.NotNil(t, e.RecentOperation)
			assert.Equal(t, "op0", e.RecentOperation.OperationID)
			assert.Contains(t, e.Error(), "amount: must be positive")
		})
	}
}

func TestUnexpectedAnswers(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter) { w.WriteHeader(404); _, _ = io.WriteString(w, "no") })
	_, err := c.Status(context.Background(), "op1")
	require.ErrorIs(t, err, ErrUnexpectedAnswer)

	c, _, _ = setup(t, reply(200, "brand_new_status", nil))
	_, err = c.Status(context.Background(), "op1")
	require.ErrorIs(t, err, ErrUnexpectedAnswer)

	c, f, _ := setup(t, func(w http.ResponseWriter) { w.WriteHeader(502); _, _ = io.WriteString(w, "<html>bad gateway</html>") })
	_, err = c.Status(context.Background(), "op1")
	require.ErrorIs(t, err, ErrUnreachable, "a proxy's 5xx page means the gateway was not reached")
	assert.Len(t, f.bodies, DefaultAttempts)
}

func TestWaitHonoursPollAfter(t *testing.T) {
	t.Parallel()
	c, f, waits := setup(t,
		reply(202, status.InProgress, map[string]any{"operation_id": "op1", "poll_after_ms": 700}),
		reply(503, status.TemporarilyUnavailable, map[string]any{"retry_after_ms": 300}),
		reply(202, status.InProgress, map[string]any{"operation_id": "op1", "poll_after_ms": 900}),
		reply(200, status.Failed, map[string]any{"operation_id": "op1", "reason": "insufficient_funds"}),
	)
	a, err := c.Wait(context.Background(), "op1")
	require.NoError(t, err)
	assert.Equal(t, status.Failed, a.Status)
	assert.Equal(t, "insufficient_funds", a.Reason)
	assert.Len(t, f.bodies, 4)
	assert.Equal(t, []time.Duration{700 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond}, *waits)
}

func TestWaitStopsAtManualReview(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, reply(202, status.NeedsManualReview, map[string]any{"operation_id": "op1", "poll_after_ms": 700}))
	a, err := c.Wait(context.Background(), "op1")
	require.ErrorIs(t, err, ErrNeedsManualReview)
	require.NotNil(t, a)
	assert.Equal(t, status.NeedsManualReview, a.Status)

	c, _, _ = setup(t, reply(404, status.UnknownOperation, nil))
	_, err = c.Wait(context.Background(), "op1")
	require.ErrorIs(t, err, ErrUnknownOperation)
}

func TestWaitStopsWithTheContext(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, reply(202, status.InProgress, map[string]any{"poll_after_ms": 700}))
	ctx, cancel := context.WithCancel(context.Background())
	c.sleep = func(context.Context, time.Duration) error { cancel(); return ctx.Err() }
	a, err := c.Wait(ctx, "op1")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, status.InProgress, a.Status)
}

func TestReplayedHeader(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, reply(200, status.AlreadyCompleted, map[string]any{"result": map[string]any{"amount": 12.5}}))
	a, err := c.Confirm(context.Background(), "payments.transfer", "fp", map[string]any{})
	require.NoError(t, err)
	assert.True(t, a.Replayed)
	var r struct {
		Amount Decimal `json:"amount"`
	}
	require.NoError(t, a.DecodeResult(&r))
	assert.Equal(t, Decimal("12.5"), r.Amount, "a decimal sent as a JSON number is read as its text")
}

func TestDecimal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Decimal{`"12.50"`: "12.50", `12.50`: "12.50", `1e3`: "1e3", `"-0.5"`: "-0.5", `100000000000000000000.01`: "100000000000000000000.01"} {
		var d Decimal
		require.NoError(t, json.Unmarshal([]byte(in), &d), in)
		assert.Equal(t, want, d, in)
	}
	for _, in := range []string{`"abc"`, `true`, `""`, `"1.2.3"`, `null`} {
		var d Decimal
		assert.Error(t, json.Unmarshal([]byte(in), &d), in)
	}
	b, err := json.Marshal(Decimal("12.5"))
	require.NoError(t, err)
	assert.Equal(t, `"12.5"`, string(b))
	_, err = json.Marshal(Decimal("x"))
	assert.Error(t, err)

	f := Fields{"amount": json.RawMessage(`12.5`), "currency": json.RawMessage(`"USD"`)}
	d, ok := f.Decimal("amount")
	assert.True(t, ok)
	assert.Equal(t, Decimal("12.5"), d)
	_, ok = f.Decimal("currency")
	assert.False(t, ok)
	s, ok := f.String("currency")
	assert.True(t, ok)
	assert.Equal(t, "USD", s)
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New("127.0.0.1:8080", "tok")
	assert.Error(t, err)
	_, err = New("http://127.0.0.1:8080", "")
	assert.True(t, errors.Is(err, ErrUnauthenticated))
}

// roundTrips counts the requests of the client it is the transport of.
type roundTrips struct {
	n    int
	lang []string
}

func (r *roundTrips) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n++
	r.lang = append(r.lang, req.Header.Get("Accept-Language"))
	return http.DefaultTransport.RoundTrip(req)
}

func TestOptionsReachTheRequest(t *testing.T) {
	t.Parallel()
	f := &fakeGateway{answers: []func(http.ResponseWriter){reply(200, status.Completed, map[string]any{"operation_id": "op1"})}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	rt := &roundTrips{}
	c, err := New(srv.URL, "dev-alice", WithHTTPClient(&http.Client{Transport: rt}), WithLanguage("zh"))
	require.NoError(t, err)
	_, err = c.Status(context.Background(), "op1")
	require.NoError(t, err)
	assert.Equal(t, 1, rt.n, "the request went through the given HTTP client")
	assert.Equal(t, []string{"zh"}, rt.lang, "the language is asked for")
}
