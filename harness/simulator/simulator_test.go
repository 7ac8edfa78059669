package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is one simulator on its own fresh database.
type testBundle struct {
	url    string
	pool   *pgxpool.Pool
	client *http.Client
}

func setup(ctx context.Context, t *testing.T, opts ...simulator.Option) *testBundle {
	t.Helper()
	pool, err := pgxpool.New(ctx, testenv.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &testBundle{url: startServer(ctx, t, pool, opts...), pool: pool, client: &http.Client{Timeout: 30 * time.Second}}
}

// startServer starts a simulator over pool and returns its base URL.
func startServer(ctx context.Context, t *testing.T, pool *pgxpool.Pool, opts ...simulator.Option) string {
	t.Helper()
	s, err := simulator.New(ctx, pool, slog.New(slog.DiscardHandler), opts...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// answer is one HTTP response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.body, &m), "body: %s", a.body)
	return m
}

func (b *testBundle) do(t *testing.T, method, path string, body any, header map[string]string) answer {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

func (b *testBundle) count(t *testing.T, ref string) int {
	t.Helper()
	a := b.do(t, http.MethodGet, "/_sim/executions?ref="+ref, nil, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	return int(a.json(t)["count"].(float64))
}

func (b *testBundle) setFaults(t *testing.T, f string) {
	t.Helper()
	a := b.do(t, http.MethodPut, "/_sim/faults", f, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
}

func key(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }

func transferBody(amount any) map[string]any {
	return map[string]any{"amount": amount, "currency": "USD", "payee_id": "p-1", "memo": "rent", "client_reference": "op-1"}
}

func TestIdempotentTransfer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("executes once under concurrent identical requests", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		const n = 50
		answers := make([]answer, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = b.do(t, http.MethodPost, "/v1/transfers", `{"amount":"12.50","currency":"USD","payee_id":"p-1","client_reference":"k-conc"}`, key("k-conc"))
			})
		}
		close(start)
		wg.Wait()
		for i, a := range answers {
			assert.Equal(t, http.StatusCreated, a.status, "answer %d: %s", i, a.body)
			assert.Equal(t, string(answers[0].body), string(a.body), "answer %d", i)
		}
		first := answers[0].json(t)
		assert.Regexp(t, `^tr_[0-9a-f]{24}$`, first["id"])
		assert.Equal(t, "succeeded", first["status"])
		assert.Equal(t, "12.5", first["amount"])
		assert.Equal(t, 1, b.count(t, "k-conc"))
	})

	t.Run("replay carries the first response and the replay header", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		first := b.do(t, http.MethodPost, "/v1/transfers", transferBody(12.5), key("k-1"))
		require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
		assert.Empty(t, first.header.Get("Idempotent-Replayed"))
		// 12.50 as a string is the same amount.
		again := b.do(t, http.MethodPost, "/v1/transfers", transferBody("12.50"), key("k-1"))
		assert.Equal(t, http.StatusCreated, again.status)
		assert.Equal(t, string(first.body), string(again.body))
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.Equal(t, 1, b.count(t, "k-1"))
		got := first.json(t)
		assert.Equal(t, "rent", got["memo"])
		assert.Equal(t, "op-1", got["client_reference"])
		_, err := time.Parse(time.RFC3339Nano, got["created_at"].(string))
		assert.NoError(t, err)
	})

	t.Run("key reuse with another body is 409", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/transfers", transferBody("10"), key("k-2")).status)
		a := b.do(t, http.MethodPost, "/v1/transfers", transferBody("11"), key("k-2"))
		assert.Equal(t, http.StatusConflict, a.status)
		assert.Equal(t, "idempotency_key_reuse", a.json(t)["error"])
		assert.Equal(t, 1, b.count(t, "k-2"))
	})

	t.Run("missing key is 400", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		a := b.do(t, http.MethodPost, "/v1/transfers", transferBody("10"), nil)
		assert.Equal(t, http.StatusBadRequest, a.status)
		assert.Equal(t, "missing_idempotency_key", a.json(t)["error"])
	})

	t.Run("insufficient funds is 422, replayed, not counted", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		a := b.do(t, http.MethodPost, "/v1/transfers", transferBody("10000.01"), key("k-poor"))
		assert.Equal(t, http.StatusUnprocessableEntity, a.status)
		assert.Equal(t, "insufficient_funds", a.json(t)["error"])
		assert.NotEmpty(t, a.json(t)["message"])
		again := b.do(t, http.MethodPost, "/v1/transfers", transferBody("10000.01"), key("k-poor"))
		assert.Equal(t, http.StatusUnprocessableEntity, again.status)
		assert.Equal(t, string(a.body), string(again.body))
		assert.Equal(t, 0, b.count(t, "k-poor"))
		assert.Equal(t, 0, b.count(t, "op-1"))
		// Exactly 10000 is allowed.
		assert.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/transfers", transferBody(10000), key("k-rich")).status)
	})
}

func TestLegacyTransfer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("executes on every call and is found by status", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		before := b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-9", nil, nil)
		assert.Equal(t, http.StatusNotFound, before.status)
		assert.Equal(t, "not_found", before.json(t)["error"])

		body := map[string]any{"amount": "7.00", "currency": "EUR", "payee_id": "p-2", "client_reference": "op-9"}
		first := b.do(t, http.MethodPost, "/legacy/transfers", body, key("op-9"))
		require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
		second := b.do(t, http.MethodPost, "/legacy/transfers", body, key("op-9"))
		require.Equal(t, http.StatusCreated, second.status, "%s", second.body)
		assert.NotEqual(t, first.json(t)["id"], second.json(t)["id"])
		assert.Equal(t, 2, b.count(t, "op-9"))

		found := b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-9", nil, nil)
		require.Equal(t, http.StatusOK, found.status)
		assert.Equal(t, second.json(t), found.json(t))
		assert.Equal(t, "7", found.json(t)["amount"])
	})

	t.Run("requires client_reference", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		a := b.do(t, http.MethodPost, "/legacy/transfers", `{"amount":1,"currency":"USD","payee_id":"p"}`, nil)
		assert.Equal(t, http.StatusBadRequest, a.status)
		assert.Equal(t, "invalid_request", a.json(t)["error"])
	})

	t.Run("insufficient funds is 422 and not counted", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		a := b.do(t, http.MethodPost, "/legacy/transfers", `{"amount":20000,"currency":"USD","payee_id":"p","client_reference":"op-x"}`, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, a.status)
		assert.Equal(t, "insufficient_funds", a.json(t)["error"])
		assert.Equal(t, 0, b.count(t, "op-x"))
		assert.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-x", nil, nil).status)
	})
}

func TestFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("fail_next answers 503 without executing", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"fail_next":2}`)
		for i := range 2 {
			a := b.do(t, http.MethodPost, "/v1/transfers", transferBody("5"), key("k-f"))
			assert.Equal(t, http.StatusServiceUnavailable, a.status, "attempt %d", i)
			assert.Equal(t, "unavailable", a.json(t)["error"])
			assert.Equal(t, 0, b.count(t, "k-f"))
		}
		a := b.do(t, http.MethodPost, "/v1/transfers", transferBody("5"), key("k-f"))
		assert.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		assert.Equal(t, 1, b.count(t, "k-f"))
		assert.Equal(t, 0, int(b.do(t, http.MethodGet, "/_sim/faults", nil, nil).json(t)["fail_next"].(float64)))
	})

	t.Run("quote_fail_next answers 503 to quotes only", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"quote_fail_next":1}`)
		assert.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/transfers", transferBody("5"), key("k-q")).status)
		a := b.do(t, http.MethodPost, "/v1/quotes", transferBody("5"), nil)
		assert.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, "unavailable", a.json(t)["error"])
		assert.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/v1/quotes", transferBody("5"), nil).status)
		assert.Equal(t, 0, int(b.do(t, http.MethodGet, "/_sim/faults", nil, nil).json(t)["quote_fail_next"].(float64)))
	})

	t.Run("fail_next applies to legacy transfers", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"fail_next":1}`)
		body := `{"amount":1,"currency":"USD","payee_id":"p","client_reference":"op-l"}`
		assert.Equal(t, http.StatusServiceUnavailable, b.do(t, http.MethodPost, "/legacy/transfers", body, nil).status)
		assert.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/legacy/transfers", body, nil).status)
		assert.Equal(t, 1, b.count(t, "op-l"))
	})

	t.Run("fail_next is consumed exactly under concurrency", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"fail_next":5}`)
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				body := map[string]any{"amount": 1, "currency": "USD", "payee_id": "p", "client_reference": "op-c" + string(rune('a'+i))}
				a := b.do(t, http.MethodPost, "/legacy/transfers", body, nil)
				mu.Lock()
				statuses[a.status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		assert.Equal(t, map[int]int{http.StatusServiceUnavailable: 5, http.StatusCreated: 15}, statuses)
	})

	t.Run("hang_after_commit holds a committed transfer", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"hang_after_commit_ms":1500}`)
		done := make(chan answer, 1)
		startedAt := time.Now()
		go func() { done <- b.do(t, http.MethodPost, "/v1/transfers", transferBody("3"), key("k-hang")) }()
		require.Eventually(t, func() bool { return b.count(t, "k-hang") == 1 }, time.Second, 20*time.Millisecond)
		select {
		case <-done:
			t.Fatal("the response was not held")
		default:
		}
		a := <-done
		assert.Equal(t, http.StatusCreated, a.status)
		assert.GreaterOrEqual(t, time.Since(startedAt), 1500*time.Millisecond)
		assert.Equal(t, 1, b.count(t, "k-hang"))
		// A repeat during or after the hang is a prompt replay.
		again := b.do(t, http.MethodPost, "/v1/transfers", transferBody("3"), key("k-hang"))
		assert.Equal(t, string(a.body), string(again.body))
	})

	t.Run("hang_after_commit respects client cancellation", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"hang_after_commit_ms":60000}`)
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, b.url+"/legacy/transfers",
			bytes.NewBufferString(`{"amount":1,"currency":"USD","payee_id":"p","client_reference":"op-h"}`))
		require.NoError(t, err)
		_, err = b.client.Do(req)
		require.Error(t, err)
		assert.Equal(t, 1, b.count(t, "op-h"))
	})

	t.Run("commit_delay commits after the caller gave up", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"commit_delay_ms":1200}`)
		for _, tc := range []struct{ path, ref string }{{"/legacy/transfers", "op-late"}, {"/v1/transfers", "k-late"}} {
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			body := fmt.Sprintf(`{"amount":1,"currency":"USD","payee_id":"p","client_reference":%q}`, tc.ref)
			req, err := http.NewRequestWithContext(rctx, http.MethodPost, b.url+tc.path, bytes.NewBufferString(body))
			require.NoError(t, err)
			req.Header.Set("Idempotency-Key", tc.ref)
			sentAt := time.Now()
			_, err = b.client.Do(req)
			cancel()
			require.Error(t, err, "the caller times out before the commit")
			assert.Equal(t, 0, b.count(t, tc.ref), "%s: nothing is committed before the delay", tc.path)
			require.Eventually(t, func() bool { return b.count(t, tc.ref) == 1 }, 10*time.Second, 50*time.Millisecond,
				"%s: the abandoned request commits anyway", tc.path)
			assert.GreaterOrEqual(t, time.Since(sentAt), 1200*time.Millisecond)
		}
		// A waiting caller gets the answer after the delay.
		start := time.Now()
		a := b.do(t, http.MethodPost, "/legacy/transfers", `{"amount":2,"currency":"USD","payee_id":"p","client_reference":"op-wait"}`, nil)
		assert.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		assert.GreaterOrEqual(t, time.Since(start), 1200*time.Millisecond)
		assert.Equal(t, 1, b.count(t, "op-wait"))
	})

	t.Run("status_lag hides a commit from the status endpoint for a while", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"status_lag_ms":1500}`)
		a := b.do(t, http.MethodPost, "/legacy/transfers", `{"amount":3,"currency":"USD","payee_id":"p","client_reference":"op-lag"}`, nil)
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		committedAt := time.Now()
		assert.Equal(t, 1, b.count(t, "op-lag"), "the transfer is committed")
		assert.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-lag", nil, nil).status,
			"the status endpoint does not see it yet")
		require.Eventually(t, func() bool {
			return b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-lag", nil, nil).status == http.StatusOK
		}, 10*time.Second, 50*time.Millisecond)
		assert.GreaterOrEqual(t, time.Since(committedAt), 1400*time.Millisecond)
	})

	t.Run("fail_after_commit commits, then answers 500", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"fail_after_commit":1}`)
		first := b.do(t, http.MethodPost, "/v1/transfers", transferBody("4"), key("k-fac"))
		assert.Equal(t, http.StatusInternalServerError, first.status, "%s", first.body)
		assert.Equal(t, 1, b.count(t, "op-1"), "committed despite the 500")
		again := b.do(t, http.MethodPost, "/v1/transfers", transferBody("4"), key("k-fac"))
		assert.Equal(t, http.StatusCreated, again.status, "a retry with the same key replays the committed transfer")
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.Equal(t, 1, b.count(t, "op-1"))
		assert.Equal(t, 0, int(b.do(t, http.MethodGet, "/_sim/faults", nil, nil).json(t)["fail_after_commit"].(float64)))

		b.setFaults(t, `{"fail_after_commit":1}`)
		legacy := b.do(t, http.MethodPost, "/legacy/transfers", `{"amount":5,"currency":"USD","payee_id":"p","client_reference":"op-fac"}`, nil)
		assert.Equal(t, http.StatusInternalServerError, legacy.status)
		assert.Equal(t, 1, b.count(t, "op-fac"))
		assert.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-fac", nil, nil).status)
	})

	t.Run("latency delays requests", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"latency_ms":300}`)
		start := time.Now()
		a := b.do(t, http.MethodPost, "/v1/quotes", `{"amount":1,"currency":"USD","payee_id":"p"}`, nil)
		assert.Equal(t, http.StatusOK, a.status)
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	})

	t.Run("status_unavailable makes the status endpoint 503", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"status_unavailable":true}`)
		a := b.do(t, http.MethodGet, "/legacy/transfers?client_reference=op-1", nil, nil)
		assert.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, "unavailable", a.json(t)["error"])
	})

	t.Run("PUT replaces the set, DELETE clears it, reset clears everything", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"latency_ms":5,"fail_next":3,"hang_after_commit_ms":7,"status_unavailable":true}`)
		b.setFaults(t, `{"fail_next":1}`)
		got := b.do(t, http.MethodGet, "/_sim/faults", nil, nil)
		assert.JSONEq(t, `{"latency_ms":0,"fail_next":1,"hang_after_commit_ms":0,"status_unavailable":false,"commit_delay_ms":0,"status_lag_ms":0,"fail_after_commit":0,"quote_fail_next":0,"payout_settle_ms":0,"quote_ttl_ms":0}`, string(got.body))
		assert.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/_sim/faults", nil, nil).status)
		got = b.do(t, http.MethodGet, "/_sim/faults", nil, nil)
		assert.JSONEq(t, `{"latency_ms":0,"fail_next":0,"hang_after_commit_ms":0,"status_unavailable":false,"commit_delay_ms":0,"status_lag_ms":0,"fail_after_commit":0,"quote_fail_next":0,"payout_settle_ms":0,"quote_ttl_ms":0}`, string(got.body))

		bad := b.do(t, http.MethodPut, "/_sim/faults", `{"fail_next":-1}`, nil)
		assert.Equal(t, http.StatusBadRequest, bad.status)
		bad = b.do(t, http.MethodPut, "/_sim/faults", `{"fail_nxt":1}`, nil)
		assert.Equal(t, http.StatusBadRequest, bad.status)

		require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/transfers", transferBody("1"), key("k-r")).status)
		b.setFaults(t, `{"fail_next":4}`)
		assert.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/_sim/reset", nil, nil).status)
		assert.Equal(t, 0, b.count(t, "k-r"))
		got = b.do(t, http.MethodGet, "/_sim/faults", nil, nil)
		assert.Equal(t, 0, int(got.json(t)["fail_next"].(float64)))
	})

	t.Run("faults survive a new server on the same database", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"fail_next":1,"status_unavailable":true,"commit_delay_ms":5}`)
		other := &testBundle{url: startServer(ctx, t, b.pool), client: b.client}
		got := other.do(t, http.MethodGet, "/_sim/faults", nil, nil)
		assert.JSONEq(t, `{"latency_ms":0,"fail_next":1,"hang_after_commit_ms":0,"status_unavailable":true,"commit_delay_ms":5,"status_lag_ms":0,"fail_after_commit":0,"quote_fail_next":0,"payout_settle_ms":0,"quote_ttl_ms":0}`, string(got.body))
		assert.Equal(t, http.StatusServiceUnavailable, other.do(t, http.MethodPost, "/v1/transfers", transferBody("1"), key("k-s")).status)
		assert.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/transfers", transferBody("1"), key("k-s")).status)
	})
}

func TestIdempotencyAcrossServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(ctx, t)
	// A second simulator with its own pool on the same database: the key's
	// uniqueness holds across processes, not only in one.
	pool2, err := pgxpool.New(ctx, b.pool.Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(pool2.Close)
	other := &testBundle{url: startServer(ctx, t, pool2), client: b.client}
	var wg sync.WaitGroup
	answers := make([]answer, 20)
	for i := range answers {
		target := b
		if i%2 == 1 {
			target = other
		}
		wg.Go(func() { answers[i] = target.do(t, http.MethodPost, "/v1/transfers", transferBody("2"), key("k-x")) })
	}
	wg.Wait()
	for _, a := range answers {
		assert.Equal(t, string(answers[0].body), string(a.body))
	}
	assert.Equal(t, 1, b.count(t, "k-x"))
}

func TestQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(ctx, t)
	for _, tc := range []struct {
		amount   string
		wantAmt  string
		wantFee  string
		currency string
	}{
		{`"12.50"`, "12.5", "0.25", "USD"},
		{`1000`, "1000", "10.00", "EUR"},
		{`1.25e2`, "125", "1.25", "USD"},
		{`"30.50"`, "30.5", "0.31", "USD"}, // 0.305 rounds half up
		{`99.99`, "99.99", "1.00", "USD"},
	} {
		t.Run(tc.amount, func(t *testing.T) {
			a := b.do(t, http.MethodPost, "/v1/quotes", `{"amount":`+tc.amount+`,"currency":"`+tc.currency+`","payee_id":"p-1"}`, nil)
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			q := a.json(t)
			assert.Regexp(t, `^q_[0-9a-f]{24}$`, q["quote_id"])
			assert.Equal(t, tc.wantAmt, q["amount"])
			assert.Equal(t, tc.wantFee, q["fee"])
			assert.Equal(t, tc.currency, q["currency"])
			exp, err := time.Parse(time.RFC3339, q["expires_at"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, time.Now().Add(10*time.Minute), exp, 5*time.Second)
		})
	}

	t.Run("TTL option", func(t *testing.T) {
		fixed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		b2 := setup(ctx, t, simulator.WithQuoteTTL(time.Minute), simulator.WithClock(func() time.Time { return fixed }))
		a := b2.do(t, http.MethodPost, "/v1/quotes", `{"amount":1,"currency":"USD","payee_id":"p"}`, nil)
		assert.Equal(t, "2030-01-02T03:05:05Z", a.json(t)["expires_at"])

		// A blocked payee is refused definitively.
		a = b2.do(t, http.MethodPost, "/v1/quotes", `{"amount":1,"currency":"USD","payee_id":"blocked-1"}`, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, a.status)
		assert.Equal(t, simulator.CodePayeeBlocked, a.json(t)["error"], "%s", a.body)

		// The quote_ttl_ms fault wins over the option while it is set.
		b2.setFaults(t, `{"quote_ttl_ms":3000}`)
		a = b2.do(t, http.MethodPost, "/v1/quotes", `{"amount":1,"currency":"USD","payee_id":"p"}`, nil)
		assert.Equal(t, "2030-01-02T03:04:08Z", a.json(t)["expires_at"])
		b2.setFaults(t, `{}`)
		a = b2.do(t, http.MethodPost, "/v1/quotes", `{"amount":1,"currency":"USD","payee_id":"p"}`, nil)
		assert.Equal(t, "2030-01-02T03:05:05Z", a.json(t)["expires_at"])
	})
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(ctx, t)
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
		code                     string
	}{
		{"bad JSON", http.MethodPost, "/v1/transfers", `{"amount":`, 400, "invalid_request"},
		{"trailing data", http.MethodPost, "/v1/transfers", `{"amount":1,"currency":"USD","payee_id":"p"} {}`, 400, "invalid_request"},
		{"not an object", http.MethodPost, "/v1/transfers", `[1]`, 400, "invalid_request"},
		{"float-looking garbage", http.MethodPost, "/v1/transfers", `{"amount":"12,5","currency":"USD","payee_id":"p"}`, 400, "invalid_request"},
		{"negative amount", http.MethodPost, "/v1/transfers", `{"amount":-1,"currency":"USD","payee_id":"p"}`, 400, "invalid_request"},
		{"zero amount", http.MethodPost, "/v1/quotes", `{"amount":"0.00","currency":"USD","payee_id":"p"}`, 400, "invalid_request"},
		{"infinite amount", http.MethodPost, "/v1/quotes", `{"amount":"Infinity","currency":"USD","payee_id":"p"}`, 400, "invalid_request"},
		{"huge exponent", http.MethodPost, "/v1/quotes", `{"amount":1e400,"currency":"USD","payee_id":"p"}`, 400, "invalid_request"},
		{"missing currency", http.MethodPost, "/v1/transfers", `{"amount":1,"payee_id":"p"}`, 400, "invalid_request"},
		{"missing payee", http.MethodPost, "/v1/transfers", `{"amount":1,"currency":"USD"}`, 400, "invalid_request"},
		{"bad JSON legacy", http.MethodPost, "/legacy/transfers", `nope`, 400, "invalid_request"},
		{"status without reference", http.MethodGet, "/legacy/transfers", ``, 400, "invalid_request"},
		{"executions without ref", http.MethodGet, "/_sim/executions", ``, 400, "invalid_request"},
		{"unknown path", http.MethodGet, "/nope", ``, 404, "not_found"},
		{"wrong method", http.MethodDelete, "/v1/transfers", ``, 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.do(t, tc.method, tc.path, tc.body, key("k-bad"))
			assert.Equal(t, tc.want, a.status, "%s", a.body)
			assert.Equal(t, "application/json", a.header.Get("Content-Type"))
			assert.Equal(t, tc.code, a.json(t)["error"])
		})
	}
	assert.Equal(t, 0, b.count(t, "k-bad"))
	assert.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/healthz", nil, nil).status)
}

func TestPayouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("pending, then paid; a repeat replays the first answer", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		b.setFaults(t, `{"payout_settle_ms":600}`)
		first := b.do(t, http.MethodPost, "/v1/payouts", `{"amount":"25.00","currency":"EUR","payee_id":"p-9","client_reference":"op-po"}`, key("k-po"))
		require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
		po := first.json(t)
		assert.Regexp(t, `^po_[0-9a-f]{24}$`, po["id"])
		assert.Equal(t, "pending", po["status"])
		assert.Equal(t, "25", po["amount"])
		again := b.do(t, http.MethodPost, "/v1/payouts", `{"amount":"25.00","currency":"EUR","payee_id":"p-9","client_reference":"op-po"}`, key("k-po"))
		assert.Equal(t, string(first.body), string(again.body))
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.Equal(t, 1, b.count(t, "op-po"))

		status := func() map[string]any {
			a := b.do(t, http.MethodGet, "/v1/payouts?client_reference=op-po", nil, nil)
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			return a.json(t)
		}
		assert.Equal(t, "pending", status()["status"])
		require.Eventually(t, func() bool { return status()["status"] == "paid" }, 10*time.Second, 50*time.Millisecond)
		assert.Equal(t, po["id"], status()["id"])
		assert.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/payouts?client_reference=nope", nil, nil).status)
	})

	t.Run("a fail- payee fails with a reason, and the webhook is signed", func(t *testing.T) {
		t.Parallel()
		b := setup(ctx, t)
		events := make(chan answer, 4)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			events <- answer{status: 200, header: r.Header.Clone(), body: body}
		}))
		t.Cleanup(hook.Close)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/_sim/webhook", map[string]string{"url": hook.URL, "secret": "s3cret"}, nil).status)
		b.setFaults(t, `{"payout_settle_ms":300}`)
		a := b.do(t, http.MethodPost, "/v1/payouts", `{"amount":"5","currency":"EUR","payee_id":"fail-1","client_reference":"op-f"}`, key("k-f"))
		require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
		var ev answer
		select {
		case ev = <-events:
		case <-time.After(10 * time.Second):
			t.Fatal("no webhook event")
		}
		var event simulator.WebhookEvent
		require.NoError(t, json.Unmarshal(ev.body, &event))
		assert.Equal(t, "payout.failed", event.Type)
		assert.Equal(t, "failed", event.Data.Status)
		assert.Equal(t, "account_closed", event.Data.FailureReason)
		assert.Equal(t, "op-f", event.Data.ClientReference)
		sig := ev.header.Get(simulator.SignatureHeader)
		require.Regexp(t, `^t=\d+,v1=[0-9a-f]{64}$`, sig)
		var ts int64
		_, err := fmt.Sscanf(sig, "t=%d,", &ts)
		require.NoError(t, err)
		assert.Equal(t, simulator.Sign("s3cret", time.Unix(ts, 0), ev.body), sig, "HMAC-SHA256 of <t>.<body>")
		assert.Equal(t, 1, b.count(t, "op-f"))
		select {
		case extra := <-events:
			t.Fatalf("a second event for one settlement: %s", extra.body)
		case <-time.After(500 * time.Millisecond):
		}
	})
}

func TestMCPTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(ctx, t)
	client := mcp.NewClient(&mcp.Implementation{Name: "sim-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url + simulator.MCPPath}, nil)
	require.NoError(t, err)
	defer cs.Close()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	transfer := map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-1", "client_reference": "op-mcp", "idempotency_key": "op-mcp"}
	first := call(simulator.ToolCreateTransfer, transfer)
	require.False(t, first.IsError)
	again := call(simulator.ToolCreateTransfer, transfer)
	assert.Equal(t, first.StructuredContent, again.StructuredContent, "the same idempotency_key replays")
	assert.Equal(t, 1, b.count(t, "op-mcp"))

	got := call(simulator.ToolGetTransfer, map[string]any{"client_reference": "op-mcp"})
	assert.Equal(t, first.StructuredContent.(map[string]any)["id"], got.StructuredContent.(map[string]any)["id"])
	none := call(simulator.ToolGetTransfer, map[string]any{"client_reference": "nope"})
	assert.False(t, none.IsError)
	assert.Equal(t, map[string]any{"found": false}, none.StructuredContent)

	legacy := map[string]any{"amount": "1", "currency": "USD", "payee_id": "p", "client_reference": "op-leg"}
	call(simulator.ToolCreateLegacyTransfer, legacy)
	call(simulator.ToolCreateLegacyTransfer, legacy)
	assert.Equal(t, 2, b.count(t, "op-leg"), "the legacy tool executes on every call")

	refused := call(simulator.ToolCreateTransfer, map[string]any{"amount": "10000.01", "currency": "USD", "payee_id": "p", "idempotency_key": "k-big"})
	assert.True(t, refused.IsError, "a definite refusal is a tool error")
	assert.Equal(t, "insufficient_funds", refused.StructuredContent.(map[string]any)["error"])

	b.setFaults(t, `{"fail_next":1}`)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: simulator.ToolCreateTransfer, Arguments: map[string]any{"amount": "2", "currency": "USD", "payee_id": "p", "idempotency_key": "k-503"}})
	require.Error(t, err, "an unavailable simulator is a protocol error, not a refusal")
	assert.Equal(t, 0, b.count(t, "k-503"))
}
