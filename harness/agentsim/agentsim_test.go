package agentsim

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrift(t *testing.T) {
	in := Params{"amount": "12.50", "currency": " usd ", "payee_id": "p-1", "memo": "asap"}
	out := Drift(in)
	assert.Equal(t, json.Number("12.5"), out["amount"])
	assert.Equal(t, "USD", out["currency"])
	assert.Equal(t, "p-1", out["payee_id"])
	assert.Equal(t, "please, as soon as possible", out["memo"])
	assert.Equal(t, "12.50", in["amount"], "the input is not modified")
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"amount":12.5`)

	assert.Equal(t, "re: hello", Drift(Params{"memo": "hello"})["memo"])
	for in, want := range map[string]string{"12.50": "12.5", "3.00": "3", "7": "7", "0.10": "0.1", "100": "100"} {
		assert.Equal(t, want, trimDecimal(in), in)
	}
}

func TestNewParamsDriftHasSomethingToReformat(t *testing.T) {
	cfg := Config{RunID: "r"}.withDefaults()
	for i := range 200 {
		p := newParams(episodeRand(1, i), cfg, i, KindDrift)
		amount := p["amount"].(string)
		assert.True(t, strings.HasSuffix(amount, "0"), amount)
		assert.NotEqual(t, amount, trimDecimal(amount))
		assert.Equal(t, " usd ", p["currency"])
		assert.Contains(t, p["payee_id"], "sim-r-")
	}
}

func TestOperationIDOf(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"n":"0123456789abcdef0123456789abcdef","exp":1}`))
	assert.Equal(t, "0123456789abcdef0123456789abcdef", operationIDOf(payload+".sig"))
	assert.Empty(t, operationIDOf("nonsense"))
	assert.Empty(t, operationIDOf("!!!.sig"))
}

func TestAggregate(t *testing.T) {
	results := []episodeResult{
		{kind: KindRetry, statuses: map[string]int{"preview_ready": 1, "completed": 1}, lostAnswers: 2,
			ops: []opExpect{{id: "a", maxExecutions: 1}}},
		{kind: KindAmnesia, statuses: map[string]int{"preview_ready": 2, "completed": 1, "repeat_unacknowledged": 1},
			ops: []opExpect{{id: "b", maxExecutions: 1}, {id: "c", maxExecutions: 0}}},
		{kind: KindDrift, statuses: map[string]int{"preview_ready": 1, "param_mismatch": 1}, driftMismatch: 1,
			ops: []opExpect{{id: "d", maxExecutions: 1}}, violations: []string{"drift"}},
		{kind: KindDoItAgain, statuses: map[string]int{"preview_ready": 2, "completed": 2}, intendedRepeat: 1,
			ops: []opExpect{{id: "e", maxExecutions: 1}, {id: "f", maxExecutions: 1}}},
		{kind: KindRetry, statuses: map[string]int{"preview_ready": 1, "failed": 1},
			ops: []opExpect{{id: "g", maxExecutions: 0}}, errs: []string{"boom"}},
	}
	counts := map[string]int{"a": 3, "b": 1, "c": 1, "d": 0, "e": 1, "f": 1, "g": 0}
	r := aggregate(results, counts)
	assert.Equal(t, 5, r.Episodes)
	assert.Equal(t, map[Kind]int{KindRetry: 2, KindAmnesia: 1, KindDrift: 1, KindDoItAgain: 1}, r.EpisodesByKind)
	assert.Equal(t, 7, r.Statuses["preview_ready"])
	assert.Equal(t, 4, r.Statuses["completed"])
	assert.Equal(t, 2, r.LostAnswers)
	assert.Equal(t, 7, r.Operations)
	assert.Equal(t, 7, r.Executions)
	assert.Equal(t, 2, r.DuplicateExecutions)
	assert.Equal(t, []string{"a"}, r.DuplicateOperations)
	assert.Equal(t, 1, r.UnintendedExecutions)
	assert.Equal(t, []string{"c"}, r.UnintendedOperations)
	assert.Equal(t, 1, r.DriftMismatches)
	assert.Equal(t, 1, r.IntendedRepeats)
	assert.Equal(t, []string{"drift"}, r.Violations)
	assert.Equal(t, []string{"boom"}, r.Errors)
	assert.False(t, r.OK())

	clean := aggregate(results[3:4], map[string]int{"e": 1, "f": 1})
	assert.True(t, clean.OK())
	var b strings.Builder
	require.NoError(t, clean.WriteText(&b))
	assert.Contains(t, b.String(), "duplicate executions:           0 (must be 0)")
	assert.Contains(t, b.String(), "result: PASS")
}

// fakeStack is an in-process gateway and downstream that follow the
// protocol closely enough to drive the episodes.
type fakeStack struct {
	mu      sync.Mutex
	issued  map[string]string // nonce → binding key
	done    map[string]answerBody
	recent  map[string]string // binding key → last completed nonce
	count   map[string]int
	pending map[string]bool

	// bugs
	executeEveryConfirm bool // the two-state bug: every confirm executes
	bindMemo            bool // the memo wrongly enters the binding
	noAmnesiaGuard      bool
}

type answerBody map[string]any

func newFakeStack() *fakeStack {
	return &fakeStack{issued: map[string]string{}, done: map[string]answerBody{}, recent: map[string]string{},
		count: map[string]int{}, pending: map[string]bool{}}
}

func nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (f *fakeStack) key(subject, scope string, p map[string]any) string {
	amount := fmt.Sprint(p["amount"])
	r, ok := new(big.Rat).SetString(amount)
	if ok {
		amount = r.RatString()
	}
	k := fmt.Sprintf("%s|%s|%s|%s|%s", subject, scope, amount,
		strings.ToUpper(strings.TrimSpace(fmt.Sprint(p["currency"]))), strings.TrimSpace(fmt.Sprint(p["payee_id"])))
	if f.bindMemo {
		k += "|" + fmt.Sprint(p["memo"])
	}
	return k
}

func write(w http.ResponseWriter, code int, body answerBody) {
	body["meaning"], body["instruction"], body["trace_id"] = "m", "i", "t"
	if _, ok := body["retryable"]; !ok {
		body["retryable"] = false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeStack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		write(w, 200, answerBody{"status": "alive"})
		return
	}
	if r.URL.Path == "/_sim/executions" {
		f.mu.Lock()
		n := f.count[r.URL.Query().Get("ref")]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"count": n})
		return
	}
	subject := strings.TrimPrefix(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), "dev-")
	if strings.HasPrefix(r.URL.Path, "/v1/operations/") {
		id := strings.TrimPrefix(r.URL.Path, "/v1/operations/")
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.pending[id] {
			delete(f.pending, id)
			write(w, 202, answerBody{"status": "in_progress", "operation_id": id, "poll_with": "get_operation_status", "poll_after_ms": 10})
			return
		}
		if a, ok := f.done[id]; ok {
			write(w, 200, answerBody{"status": strings.TrimPrefix(a["status"].(string), "already_"), "operation_id": id, "result_ref": a["result_ref"]})
			return
		}
		write(w, 404, answerBody{"status": "unknown_operation"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/actions/"), "/")
	if len(parts) != 2 {
		write(w, 404, answerBody{"status": "not_found"})
		return
	}
	scope, step := parts[0], parts[1]
	var body struct {
		Fingerprint string         `json:"fingerprint"`
		Params      map[string]any `json:"params"`
		Ack         string         `json:"acknowledge_repeat_of"`
	}
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		write(w, 400, answerBody{"status": "malformed_request"})
		return
	}
	key := f.key(subject, scope, body.Params)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch step {
	case "preview":
		n := nonce()
		f.issued[n] = key
		payload := map[string]any{"n": n}
		out := answerBody{"status": "preview_ready", "expires_at": "2030-01-01T00:00:00Z", "preview": body.Params}
		if prev, ok := f.recent[key]; ok && !f.noAmnesiaGuard {
			payload["r"] = prev
			out["recent_operation"] = map[string]any{"operation_id": prev, "state": "DONE"}
		}
		raw, _ := json.Marshal(payload)
		out["fingerprint"] = base64.RawURLEncoding.EncodeToString(raw) + ".sig"
		write(w, 200, out)
	case "confirm":
		seg, _, _ := strings.Cut(body.Fingerprint, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(seg)
		var p struct{ N, R string }
		_ = json.Unmarshal(raw, &p)
		issuedKey, ok := f.issued[p.N]
		if !ok {
			write(w, 400, answerBody{"status": "fingerprint_invalid"})
			return
		}
		if issuedKey != key {
			write(w, 422, answerBody{"status": "param_mismatch", "operation_id": p.N})
			return
		}
		if p.R != "" && body.Ack != p.R {
			write(w, 409, answerBody{"status": "repeat_unacknowledged", "recent_operation": map[string]any{"operation_id": p.R, "state": "DONE"}})
			return
		}
		if a, ok := f.done[p.N]; ok && !f.executeEveryConfirm {
			replay := answerBody{}
			for k, v := range a {
				replay[k] = v
			}
			replay["status"] = "already_" + strings.TrimPrefix(a["status"].(string), "already_")
			w.Header().Set("Idempotent-Replayed", "true")
			write(w, 200, replay)
			return
		}
		amount, _ := new(big.Rat).SetString(fmt.Sprint(body.Params["amount"]))
		var out answerBody
		if amount != nil && amount.Cmp(big.NewRat(10000, 1)) > 0 {
			out = answerBody{"status": "failed", "operation_id": p.N, "reason": "insufficient_funds"}
		} else {
			f.count[p.N]++
			f.recent[key] = p.N
			out = answerBody{"status": "completed", "operation_id": p.N, "result_ref": "tr_" + p.N[:8], "result": map[string]any{"id": "tr_" + p.N[:8]}}
		}
		f.done[p.N] = out
		// The answer is slower than the agents' lost-answer timeout.
		f.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
		if len(f.done)%3 == 0 {
			f.pending[p.N] = true
			write(w, 202, answerBody{"status": "in_progress", "operation_id": p.N, "poll_with": "get_operation_status", "poll_after_ms": 10})
			return
		}
		copied := answerBody{}
		for k, v := range out {
			copied[k] = v
		}
		write(w, 200, copied)
	default:
		write(w, 404, answerBody{"status": "not_found"})
	}
}

func runAgainst(t *testing.T, f *fakeStack, episodes int) Report {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Config{GatewayURL: srv.URL, DownstreamURL: srv.URL, Episodes: episodes, Seed: 7, Concurrency: 8})
	require.NoError(t, err)
	return rep
}

func TestRunAgainstFakeStack(t *testing.T) {
	t.Parallel()
	t.Run("correct gateway", func(t *testing.T) {
		t.Parallel()
		rep := runAgainst(t, newFakeStack(), 80)
		var b strings.Builder
		require.NoError(t, rep.WriteText(&b))
		t.Log("\n" + b.String())
		assert.True(t, rep.OK(), b.String())
		assert.Equal(t, 80, rep.Episodes)
		for _, k := range Kinds {
			assert.Positive(t, rep.EpisodesByKind[k], k)
		}
		assert.Positive(t, rep.LostAnswers)
		assert.Positive(t, rep.Statuses["already_completed"])
		assert.Positive(t, rep.Statuses["repeat_unacknowledged"])
		assert.Positive(t, rep.Statuses["in_progress"])
		assert.Equal(t, rep.EpisodesByKind[KindDoItAgain], rep.IntendedRepeats)
		assert.Zero(t, rep.DuplicateExecutions)
	})
	t.Run("two-state gateway executes retries", func(t *testing.T) {
		t.Parallel()
		f := newFakeStack()
		f.executeEveryConfirm = true
		rep := runAgainst(t, f, 40)
		assert.Positive(t, rep.DuplicateExecutions)
		assert.False(t, rep.OK())
	})
	t.Run("memo bound by mistake", func(t *testing.T) {
		t.Parallel()
		f := newFakeStack()
		f.bindMemo = true
		rep := runAgainst(t, f, 40)
		assert.Positive(t, rep.DriftMismatches)
		assert.False(t, rep.OK())
	})
	t.Run("no amnesia guard", func(t *testing.T) {
		t.Parallel()
		f := newFakeStack()
		f.noAmnesiaGuard = true
		rep := runAgainst(t, f, 40)
		assert.Positive(t, rep.UnintendedExecutions)
		assert.NotEmpty(t, rep.Violations)
		assert.False(t, rep.OK())
	})
}

func TestRunUnreachable(t *testing.T) {
	_, err := Run(context.Background(), Config{GatewayURL: "http://127.0.0.1:1", DownstreamURL: "http://127.0.0.1:1"})
	assert.Error(t, err)
	_, err = Run(context.Background(), Config{})
	assert.Error(t, err)
}
