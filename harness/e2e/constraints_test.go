package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simTransfers counts every transfer the simulator ever executed.
func simTransfers(t *testing.T, s *inprocStack) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.simDB.QueryRow(context.Background(), `SELECT count(*) FROM sim_transfer`).Scan(&n))
	return n
}

// constraintCase is params that break one rule of the dev catalog.
type constraintCase struct {
	name        string
	over        map[string]any
	field, rule string
	problem     string
}

// constraintCases are the acceptance table of issue 9 over the dev catalog.
var constraintCases = []constraintCase{
	{"negative", map[string]any{"amount": "-5"}, "amount", "exclusive_min", "greater than 0"},
	{"zero", map[string]any{"amount": 0}, "amount", "exclusive_min", "greater than 0"},
	{"1,000,001", map[string]any{"amount": "1000001"}, "amount", "max", "at most 1000000"},
	{"12.505 USD", map[string]any{"amount": "12.505"}, "amount", "scale", "USD allows at most 2"},
	{"12.5 JPY", map[string]any{"amount": "12.5", "currency": "JPY"}, "amount", "scale", "JPY allows no decimal places"},
	{"XXX", map[string]any{"currency": "XXX"}, "currency", "currency", "not an active ISO 4217 currency code"},
	{"65-character payee", map[string]any{"payee_id": strings.Repeat("p", 65)}, "payee_id", "max_length", "65 characters long"},
	{"10,000-character payee", map[string]any{"payee_id": strings.Repeat("p", 10000)}, "payee_id", "max_length", "10000 characters long"},
	{"U+200B", map[string]any{"payee_id": "p-\u200b3"}, "payee_id", "identifier", "U+200B ZERO WIDTH SPACE at position 3"},
	{"U+202E", map[string]any{"payee_id": "p-\u202e3"}, "payee_id", "identifier", "U+202E RIGHT-TO-LEFT OVERRIDE at position 3"},
	{"U+FF50", map[string]any{"payee_id": "\uff50-3"}, "payee_id", "identifier", "U+FF50 FULLWIDTH LATIN SMALL LETTER P at position 1"},
	{"NUL", map[string]any{"payee_id": "p-\x003"}, "payee_id", "identifier", "U+0000 (control) at position 3"},
	{"unknown free field", map[string]any{"note": "x"}, "note", "unknown_field", "unknown field"},
}

// withOver copies base with over applied.
func withOver(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// checkInvalid asserts an invalid_params answer naming field and rule.
func checkInvalid(t *testing.T, a answer, c constraintCase) {
	t.Helper()
	require.Equalf(t, http.StatusBadRequest, a.Code, "%s: %s", c.name, a)
	require.Equal(t, "invalid_params", a.str("status"), c.name)
	assert.Equal(t, false, a.Body["retryable"], c.name)
	assert.NotContains(t, a.Body, "fingerprint", c.name)
	errs, _ := a.Body["errors"].([]any)
	require.Lenf(t, errs, 1, "%s: %s", c.name, a)
	e := errs[0].(map[string]any)
	assert.Equal(t, c.field, e["field"], c.name)
	assert.Equal(t, c.rule, e["rule"], c.name)
	assert.Contains(t, e["problem"], c.problem, c.name)
	assert.NotEmpty(t, e["expected"], c.name)
	assertNoNumbers(t, a.Raw, c.name)
}

// TestConstraintsRefuseAndWriteNothing: each violation of the dev
// catalog's constraints answers invalid_params naming the field and the
// rule, at preview and at confirm, and leaves Redis's write counters, the
// truth rows and the simulator's executions unchanged; the fingerprint of
// a confirm refused for its params is still unconsumed afterwards.
func TestConstraintsRefuseAndWriteNothing(t *testing.T) {
	s := startInproc(t)
	base := map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-c-" + randomHex(4), "memo": "rent"}

	// The valid preview whose fingerprint the confirms below try to misuse.
	p := s.post(t, "/v1/actions/payments.transfer/preview", map[string]any{"params": base})
	require.Equal(t, "preview_ready", p.str("status"), p.String())
	fp, opID := p.str("fingerprint"), p.str("operation_id")

	redisBefore := redisWrites(t, s)
	truthBefore := truthFingerprint(t, s)
	simBefore := simTransfers(t, s)

	for _, scope := range []string{"payments.transfer", "payments.legacy_transfer"} {
		for _, c := range constraintCases {
			a := s.post(t, "/v1/actions/"+scope+"/preview", map[string]any{"params": withOver(base, c.over)})
			checkInvalid(t, a, c)
		}
	}
	// "1200" JPY passes where "12.5" JPY does not.
	jpy := s.post(t, "/v1/actions/payments.transfer/preview", map[string]any{"params": withOver(base, map[string]any{"amount": "1200", "currency": "JPY"})})
	assert.Equal(t, "preview_ready", jpy.str("status"), jpy.String())
	assertNoNumbers(t, jpy.Raw, "preview_ready")

	// At confirm, with the valid fingerprint: refused before anything is claimed.
	for _, c := range constraintCases {
		a := s.post(t, "/v1/actions/payments.transfer/confirm", map[string]any{"fingerprint": fp, "params": withOver(base, c.over)})
		checkInvalid(t, a, c)
	}

	// In Chinese, the problems are Chinese.
	zh := call(t, http.MethodPost, s.url+"/v1/actions/payments.transfer/preview", "dev-alice",
		map[string]any{"params": withOver(base, map[string]any{"payee_id": "p-\u200b3"})}, "Accept-Language", "zh")
	require.Equal(t, "invalid_params", zh.str("status"), zh.String())
	zerr := zh.Body["errors"].([]any)[0].(map[string]any)
	assert.True(t, hasHan(zerr["problem"].(string)), "problem in Chinese: %v", zerr)
	assert.Contains(t, zerr["problem"], "U+200B ZERO WIDTH SPACE at position 3")

	assert.Equal(t, redisBefore, redisWrites(t, s), "refused params wrote to Redis")
	assert.Equal(t, truthBefore, truthFingerprint(t, s), "refused params wrote to PostgreSQL")
	assert.Equal(t, simBefore, simTransfers(t, s), "refused params executed downstream")
	assert.Equal(t, 0, s.executions(t, opID))

	// The fingerprint was never consumed: the valid confirm runs it once.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := s.post(t, "/v1/actions/payments.transfer/confirm", map[string]any{"fingerprint": fp, "params": base})
		assertNoNumbers(t, c.Raw, c.str("status"))
		if st := c.str("status"); st == "completed" || st == "already_completed" {
			assert.Equal(t, opID, c.str("operation_id"))
			break
		}
		require.Equal(t, "in_progress", c.str("status"), c.String())
		require.True(t, time.Now().Before(deadline), "never completed: %s", c)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, 1, s.executions(t, opID))
}
