package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/plan"
)

const gatewayWait = 1500 * time.Millisecond

// env is a fixed environment for parse.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var devEnv = env(map[string]string{"DOWNSTREAM_URL": "http://127.0.0.1:8090"})

// action renders one action's YAML with overrides of its top-level and
// downstream settings (an empty override value removes the line).
func action(scope string, top, down map[string]string) string {
	topDefaults := map[string]string{
		"fingerprint_ttl": "15m",
		"in_flight_ttl":   "10m",
		"terminal_ttl":    "720h",
	}
	downDefaults := map[string]string{
		"execute":                "http://127.0.0.1:8090/v1/transfers",
		"honors_idempotency_key": "true",
		"timeout":                "5s",
		"attempts":               "5",
		"backoff":                "500ms",
		"backoff_max":            "5s",
		"result_ref":             "id",
		// the key's retention only applies to a downstream that honours it
		"idempotency_key_retention": "24h",
	}
	if down["honors_idempotency_key"] == "false" {
		downDefaults["idempotency_key_retention"] = ""
	}
	var b strings.Builder
	b.WriteString("  " + scope + ":\n")
	b.WriteString("    bind:\n      amount: {type: decimal, required: true}\n")
	b.WriteString("      currency: {type: string, required: true, normalize: [trim, upper]}\n")
	b.WriteString("    free:\n      memo: {type: string}\n")
	for _, k := range []string{"fingerprint_ttl", "in_flight_ttl", "terminal_ttl", "duplicate_intent_window"} {
		v, ok := top[k]
		if !ok {
			v = topDefaults[k]
		}
		if v != "" {
			b.WriteString("    " + k + ": " + v + "\n")
		}
	}
	b.WriteString("    downstream:\n")
	for _, k := range []string{"kind", "tool", "idempotency_argument", "status_tool", "execute", "honors_idempotency_key", "status", "quote", "timeout", "attempts", "backoff", "backoff_max", "result_ref", "reconcile_delay", "reconcile_attempts", "max_processing_time", "status_lag", "idempotency_key_retention"} {
		v, ok := down[k]
		if !ok {
			v = downDefaults[k]
		}
		if v != "" {
			b.WriteString("      " + k + ": " + v + "\n")
		}
	}
	return b.String()
}

func doc(actions ...string) []byte { return []byte("actions:\n" + strings.Join(actions, "")) }

func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrInvalid)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "a *ValidationError: %v", err)
	return ve.Problems
}

func TestDevCatalogLoads(t *testing.T) {
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:8090")
	c, err := Load(filepath.Join("..", "..", "deployments", "catalog.dev.yaml"), gatewayWait)
	require.NoError(t, err)
	assert.Equal(t, []string{"payments.legacy_transfer", "payments.mcp_legacy_transfer", "payments.mcp_transfer",
		"payments.payout", "payments.transfer", "payments.wire"}, c.Scopes())
	// Only payments.wire asks a person to approve; every other action keeps never.
	for _, scope := range c.Scopes() {
		assert.Equal(t, scope == "payments.wire", c.Actions[scope].Approval.Asks(), scope)
	}
	wire := c.Actions["payments.wire"].Approval
	assert.Equal(t, approval.RequireAbove, wire.Required)
	assert.Equal(t, "100", wire.Above["USD"].Text('f'))
	assert.Equal(t, "100", wire.Above["EUR"].Text('f'))
	assert.True(t, wire.NewPayee)
	mt, ok := c.Lookup("payments.mcp_transfer")
	require.True(t, ok)
	assert.Equal(t, plan.KindMCP, mt.Downstream.Kind)
	assert.True(t, mt.Downstream.HonorsIdempotencyKey)
	ml, ok := c.Lookup("payments.mcp_legacy_transfer")
	require.True(t, ok)
	assert.False(t, ml.Downstream.HonorsIdempotencyKey)
	assert.Equal(t, map[string]string{"client_reference": "operation_id"}, ml.Downstream.StatusArguments)
	assert.Equal(t, gatewayWait, c.GatewayWait)

	po, ok := c.Lookup("payments.payout")
	require.True(t, ok)
	assert.Equal(t, &plan.BusinessState{Field: "status", Succeeded: []string{"paid"}, Failed: []string{"failed"},
		Pending: []string{"pending"}, ReasonField: "failure_reason"}, po.Downstream.BusinessState)
	assert.Equal(t, 15*time.Minute, po.Downstream.CompletionDeadline)
	assert.Equal(t, &Webhook{SecretEnv: "ONCEGATE_PAYOUT_WEBHOOK_SECRET", SignatureHeader: "Sim-Signature", Tolerance: 5 * time.Minute,
		ReferenceField: DefaultWebhookReferenceField, ObjectField: DefaultWebhookObjectField}, po.Downstream.Webhook)
	assert.Greater(t, po.InFlightTTL, po.WorstCase(gatewayWait), "the pending wait counts in the worst case")
	assert.GreaterOrEqual(t, po.WorstCase(gatewayWait), po.Downstream.CompletionDeadline)

	tr, ok := c.Lookup("payments.transfer")
	require.True(t, ok)
	assert.Equal(t, "payments.transfer", tr.Scope)
	amount := tr.Bind["amount"]
	assert.Equal(t, TypeDecimal, amount.Type)
	assert.True(t, amount.Required)
	lo, loEx := amount.Lower()
	hi, hiEx := amount.Upper()
	if assert.NotNil(t, lo) && assert.NotNil(t, hi) {
		assert.Equal(t, "0", lo.String())
		assert.True(t, loEx, "amount must be > 0")
		assert.Equal(t, "1000000", hi.String())
		assert.False(t, hiEx, "amount may be 1000000")
	}
	assert.Equal(t, "currency", amount.ScaleFrom())
	_, scaled := amount.Scale()
	assert.False(t, scaled)
	cur, payee := tr.Bind["currency"], tr.Bind["payee_id"]
	assert.Equal(t, []string{"trim", "upper"}, cur.Normalize)
	assert.True(t, cur.IsCurrency())
	assert.Equal(t, []string{"trim"}, payee.Normalize)
	assert.True(t, payee.Declares(identifierConstraint{}))
	assert.False(t, payee.IsCurrency())
	assert.Equal(t, 64, payee.MaxLength())
	assert.Equal(t, TypeString, tr.Free["memo"].Type)
	assert.Equal(t, 500, tr.Free["memo"].MaxLength)
	assert.Equal(t, 15*time.Minute, tr.FingerprintTTL)
	assert.Equal(t, 10*time.Minute, tr.InFlightTTL)
	assert.Equal(t, 720*time.Hour, tr.TerminalTTL)
	assert.Equal(t, 24*time.Hour, tr.DuplicateIntentWindow)
	assert.Equal(t, Downstream{
		Kind:                 plan.KindHTTP,
		Endpoint:             plan.Endpoint{Execute: "http://127.0.0.1:8090/v1/transfers"},
		HonorsIdempotencyKey: true,
		Quote:                "http://127.0.0.1:8090/v1/quotes",
		Timeout:              5 * time.Second,
		Attempts:             5,
		Backoff:              500 * time.Millisecond,
		BackoffMax:           5 * time.Second,
		ResultRef:            "id",
		Window:               plan.Window{ReconcileDelay: 2 * time.Second},
		ReconcileAttempts:    5,

		IdempotencyKeyRetention: 24 * time.Hour,
	}, tr.Downstream)
	// 5s × 5 + (0.5 + 1 + 2 + 4)s + 1.5s
	assert.Equal(t, 34*time.Second, tr.WorstCase(gatewayWait))

	legacy, ok := c.Lookup("payments.legacy_transfer")
	require.True(t, ok)
	assert.False(t, legacy.Downstream.HonorsIdempotencyKey)
	assert.Equal(t, 1, legacy.Downstream.Attempts)
	assert.Equal(t, "http://127.0.0.1:8090/legacy/transfers", legacy.Downstream.Execute)
	assert.Equal(t, "http://127.0.0.1:8090/legacy/transfers", legacy.Downstream.Status)
	assert.Empty(t, legacy.Downstream.Quote)
	assert.Equal(t, "id", legacy.Downstream.ResultRef)
	assert.Equal(t, 15*time.Minute, legacy.FingerprintTTL)
	assert.Equal(t, 30*time.Second, legacy.Downstream.MaxProcessingTime)
	assert.Equal(t, 5*time.Second, legacy.Downstream.StatusLag)
	// execute 5s + gateway 1.5s + reconcile delay 2s + status query
	// (5s × 5 + 1+2+4+8 s = 40s) + window (30s + 5s) + one more query 40s
	assert.Equal(t, 123500*time.Millisecond, legacy.WorstCase(gatewayWait))
}

func TestDevCatalogNeedsDownstreamURL(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deployments", "catalog.dev.yaml"))
	require.NoError(t, err)
	_, err = parse(data, gatewayWait, env(nil))
	assert.ErrorContains(t, err, "DOWNSTREAM_URL")
}

func TestTTLRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		top  map[string]string
		down map[string]string
		want string
	}{
		{"in_flight_ttl equals worst case",
			map[string]string{"in_flight_ttl": "34s"}, nil,
			"payments.transfer: in_flight_ttl 34s must be > worst case 34s (timeout 5s × 5 attempts + backoff 7.5s + gateway wait 1.5s)"},
		{"in_flight_ttl below worst case",
			map[string]string{"in_flight_ttl": "30s"}, map[string]string{"backoff": "1s", "backoff_max": "5s"},
			"payments.transfer: in_flight_ttl 30s must be > worst case 38.5s (timeout 5s × 5 attempts + backoff 12s + gateway wait 1.5s)"},
		{"backoff capped",
			map[string]string{"in_flight_ttl": "1m"}, map[string]string{"attempts": "10", "backoff": "1s", "backoff_max": "4s"},
			"payments.transfer: in_flight_ttl 1m must be > worst case 1m22.5s (timeout 5s × 10 attempts + backoff 31s + gateway wait 1.5s)"},
		{"reconcile counts for a downstream that ignores the key",
			map[string]string{"in_flight_ttl": "15s"},
			map[string]string{"honors_idempotency_key": "false", "attempts": "1", "status": "http://x/legacy", "reconcile_delay": "3s", "reconcile_attempts": "4"},
			"payments.transfer: in_flight_ttl 15s must be > worst case 33s (timeout 5s × 1 attempts + backoff 0s + gateway wait 1.5s + reconciliation 26.5s: reconcile delay 3s + status query 23.5s (timeout 5s × 4 reconcile attempts + backoff 3.5s))"},
		{"the processing window counts",
			map[string]string{"in_flight_ttl": "50s"},
			map[string]string{"honors_idempotency_key": "false", "attempts": "1", "status": "http://x/legacy", "reconcile_delay": "1s",
				"reconcile_attempts": "2", "backoff": "1s", "max_processing_time": "20s", "status_lag": "5s"},
			"payments.transfer: in_flight_ttl 50s must be > worst case 54.5s (timeout 5s × 1 attempts + backoff 0s + gateway wait 1.5s + reconciliation 48s: " +
				"reconcile delay 1s + status query 11s (timeout 5s × 2 reconcile attempts + backoff 1s) + max processing time 20s + status lag 5s + one more status query)"},
		{"max_processing_time needs a status endpoint",
			nil, map[string]string{"honors_idempotency_key": "false", "attempts": "1", "max_processing_time": "20s"},
			"payments.transfer: downstream.max_processing_time needs downstream.status"},
		{"status_lag needs max_processing_time",
			nil, map[string]string{"honors_idempotency_key": "false", "attempts": "1", "status": "http://x/legacy", "status_lag": "5s"},
			"payments.transfer: downstream.status_lag needs downstream.max_processing_time"},
		{"an honouring downstream declares its key retention",
			nil, map[string]string{"idempotency_key_retention": ""},
			"payments.transfer: downstream.idempotency_key_retention is required when honors_idempotency_key is true"},
		{"key retention shorter than one attempt",
			nil, map[string]string{"idempotency_key_retention": "3s"},
			"payments.transfer: downstream.idempotency_key_retention 3s must be > timeout 5s"},
		{"key retention of a downstream that ignores the key",
			nil, map[string]string{"honors_idempotency_key": "false", "attempts": "1", "idempotency_key_retention": "24h"},
			"payments.transfer: downstream.idempotency_key_retention applies only when honors_idempotency_key is true"},
		{"terminal shorter than fingerprint",
			map[string]string{"terminal_ttl": "10m", "fingerprint_ttl": "15m"}, nil,
			"payments.transfer: terminal_ttl 10m must be >= fingerprint_ttl 15m"},
		{"zero fingerprint_ttl", map[string]string{"fingerprint_ttl": "0s"}, nil, "payments.transfer: fingerprint_ttl 0s must be > 0"},
		{"negative in_flight_ttl", map[string]string{"in_flight_ttl": "-1m"}, nil, "payments.transfer: in_flight_ttl -1m must be > 0"},
		{"missing terminal_ttl", map[string]string{"terminal_ttl": ""}, nil, "payments.transfer: terminal_ttl is required"},
		{"bad duration", map[string]string{"in_flight_ttl": "ten minutes"}, nil, `payments.transfer: in_flight_ttl "ten minutes" is not a duration`},
		{"zero timeout", nil, map[string]string{"timeout": "0s"}, "payments.transfer: downstream.timeout 0s must be > 0"},
		{"missing timeout", nil, map[string]string{"timeout": ""}, "payments.transfer: downstream.timeout is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(doc(action("payments.transfer", tt.top, tt.down)), gatewayWait, devEnv)
			got := problemsOf(t, err)
			require.Len(t, got, 1, "one problem, one message")
			assert.True(t, strings.HasPrefix(got[0], tt.want), "%q does not start with %q", got[0], tt.want)
		})
	}
}

func TestWorstCaseBoundary(t *testing.T) {
	t.Parallel()
	c, err := parse(doc(action("a.ok", map[string]string{"in_flight_ttl": "34001ms"}, nil)), gatewayWait, devEnv)
	require.NoError(t, err)
	a, _ := c.Lookup("a.ok")
	assert.Equal(t, 34*time.Second, a.WorstCase(gatewayWait))
	// A status endpoint adds reconciliation after the last attempt, for
	// any downstream: reconcile delay 2s + one status query (5s × 5
	// reconcile attempts + 0.5+1+2+4 s backoff = 32.5s).
	a.Downstream.Status = "http://x/status"
	assert.Equal(t, 68500*time.Millisecond, a.WorstCase(gatewayWait))
	// A downstream that ignores the key is called once: 5s + 1.5s + 2s + 32.5s.
	a.Downstream.HonorsIdempotencyKey = false
	assert.Equal(t, 41*time.Second, a.WorstCase(gatewayWait))
	// Its processing window adds the window and one more status query.
	a.Downstream.MaxProcessingTime, a.Downstream.StatusLag = 20*time.Second, 3*time.Second
	assert.Equal(t, 96500*time.Millisecond, a.WorstCase(gatewayWait))
}

func TestAllProblemsAtOnce(t *testing.T) {
	t.Parallel()
	bad := `actions:
  b.bad:
    bind:
      amount: {type: money, normalize: [trim]}
      count: {type: integer, normalize: [upper]}
      name: {type: string, normalize: [title]}
      memo: {type: string}
      untyped: {required: true}
    free:
      memo: {type: string}
      blob: {type: object}
    summary_field: nope
    fingerprint_ttl: 15m
    in_flight_ttl: 1s
    terminal_ttl: 1m
    downstream:
      honors_idempotency_key: false
      attempts: 3
      quote: not-a-url
      timeout: 5s
  a.empty:
    fingerprint_ttl: 1m
    in_flight_ttl: 1h
    terminal_ttl: 1h
    downstream:
      execute: http://x/y
      timeout: 1s
      attempts: 0
      backoff: 2s
      backoff_max: 1s
`
	_, err := parse([]byte(bad), gatewayWait, devEnv)
	got := problemsOf(t, err)
	want := []string{
		"a.empty: bind is empty: declare at least one bound field",
		"a.empty: downstream.attempts 0 must be >= 1",
		"a.empty: downstream.backoff_max 1s must be >= backoff 2s",
		`b.bad: bind.amount: unknown type "money" (want string, decimal, integer or boolean)`,
		"b.bad: bind.count: normalizer upper applies to strings only, not to integer fields",
		"b.bad: field memo is both bound and free: declare it once",
		`b.bad: bind.name: unknown normalizer "title" (want trim, upper or lower)`,
		"b.bad: bind.untyped: type is required (string, decimal, integer or boolean)",
		`b.bad: free.blob: unknown type "object" (want string, decimal, integer or boolean)`,
		`b.bad: summary_field "nope" is neither bound nor free`,
		"b.bad: terminal_ttl 1m must be >= fingerprint_ttl 15m (a result must be replayable as long as its fingerprint can be confirmed)",
		"b.bad: downstream.execute is required (the URL the action POSTs to)",
		`b.bad: downstream.quote "not-a-url" is not an absolute http(s) URL`,
		"b.bad: downstream.attempts 3 must be 1 when honors_idempotency_key is false: a downstream that ignores the key must be called exactly once",
	}
	assert.ElementsMatch(t, want, got)
	for _, p := range want {
		assert.ErrorContains(t, err, p)
	}
}

func TestUnknownKeysRefused(t *testing.T) {
	t.Parallel()
	field := strings.Replace(string(doc(action("a.b", nil, nil))), "required: true}", "required: true, minimum: 1}", 1)
	for name, tc := range map[string]struct{ text, want string }{
		"top level":  {"actionz: {}\n", "not found in type"},
		"action":     {strings.Replace(string(doc(action("a.b", nil, nil))), "    free:", "    frees: {}\n    free:", 1), "not found in type"},
		"downstream": {strings.Replace(string(doc(action("a.b", nil, nil))), "      timeout:", "      retries: 3\n      timeout:", 1), "not found in type"},
		"field":      {field, `a.b: bind.amount: unknown key "minimum" (want type, required, normalize, description or a constraint: `},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tc.text), gatewayWait, devEnv)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := parse([]byte(""), gatewayWait, devEnv)
	assert.ErrorContains(t, err, "empty catalog")
	_, err = parse([]byte("actions: {}\n"), gatewayWait, devEnv)
	assert.ErrorContains(t, err, "no actions")
	_, err = parse([]byte("actions:\n  a:\n    description: x\n    description: y\n"), gatewayWait, devEnv)
	assert.ErrorContains(t, err, "already defined")
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := parse(doc(action("a.b", nil, map[string]string{"attempts": "", "backoff": "", "backoff_max": ""})), gatewayWait, devEnv)
	require.NoError(t, err)
	a, _ := c.Lookup("a.b")
	assert.Equal(t, DefaultDuplicateIntentWindow, a.DuplicateIntentWindow)
	assert.Equal(t, 1, a.Downstream.Attempts)
	assert.Equal(t, 2*time.Second, a.Downstream.ReconcileDelay)
	assert.Equal(t, 5, a.Downstream.ReconcileAttempts)
	assert.Equal(t, 6500*time.Millisecond, a.WorstCase(gatewayWait))
}

func TestEnvExpansion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		vars    map[string]string
		want    string
		wantErr string
	}{
		{"set", "x: ${A}/v1", map[string]string{"A": "http://h"}, "x: http://h/v1", ""},
		{"default when unset", "x: ${A:-http://d:1}/v1", nil, "x: http://d:1/v1", ""},
		{"default when empty", "x: ${A:-d}", map[string]string{"A": ""}, "x: d", ""},
		{"value over default", "x: ${A:-d}", map[string]string{"A": "v"}, "x: v", ""},
		{"empty default", "x: '${A:-}'", nil, "x: ''", ""},
		{"set but empty", "x: '${A}'", map[string]string{"A": ""}, "x: ''", ""},
		{"lone dollar left alone", "x: $A and $$ and $", nil, "x: $A and $$ and $", ""},
		{"several", "${A}${B}", map[string]string{"A": "1", "B": "2"}, "12", ""},
		{"unset named", "x: ${A} ${B} ${C}", map[string]string{"B": "b"}, "", "environment variable A, C is not set"},
		{"malformed", "x: ${A B}", nil, "", "malformed variable reference ${A B}"},
		{"unterminated", "x: ${A", nil, "", "malformed variable reference ${A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := expandEnv(tt.in, env(tt.vars))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseExpandsEnvironment(t *testing.T) {
	t.Setenv("ONCEGATE_TEST_DOWNSTREAM", "https://bank.example")
	text := strings.Replace(string(doc(action("a.b", nil, nil))), "http://127.0.0.1:8090", "${ONCEGATE_TEST_DOWNSTREAM}", 1)
	c, err := Parse([]byte(text), gatewayWait)
	require.NoError(t, err)
	a, _ := c.Lookup("a.b")
	assert.Equal(t, "https://bank.example/v1/transfers", a.Downstream.Execute)

	_, err = Parse([]byte(strings.Replace(text, "ONCEGATE_TEST_DOWNSTREAM", "ONCEGATE_TEST_SURELY_UNSET", 1)), gatewayWait)
	assert.ErrorContains(t, err, "ONCEGATE_TEST_SURELY_UNSET")
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), gatewayWait)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestFmtDur(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		10 * time.Minute: "10m", 720 * time.Hour: "720h", 41500 * time.Millisecond: "41.5s",
		90 * time.Minute: "1h30m", 0: "0s", 500 * time.Millisecond: "500ms",
	} {
		assert.Equal(t, want, fmtDur(d))
	}
}

func TestBusinessStateRefusals(t *testing.T) {
	t.Parallel()
	base := map[string]string{"status": "http://x/status"}
	for name, tc := range map[string]struct {
		extra string
		want  string
	}{
		"no field":             {"      business_state: {succeeded: [paid], failed: [failed]}\n", "business_state.field is required"},
		"no failed values":     {"      business_state: {field: status, succeeded: [paid]}\n", "needs succeeded and failed values"},
		"a value twice":        {"      business_state: {field: status, succeeded: [paid], failed: [paid]}\n", `"paid" is listed under both succeeded and failed`},
		"pending, no deadline": {"      business_state: {field: status, succeeded: [paid], failed: [failed], pending: [pending]}\n", "completion_deadline is required"},
		"deadline alone":       {"      completion_deadline: 5m\n", "completion_deadline needs downstream.business_state"},
		"webhook without env":  {"      business_state: {field: status, succeeded: [paid], failed: [failed]}\n      webhook: {signature_header: S}\n", "webhook.secret_env"},
	} {
		_, err := parse(append(doc(action("payments.payout", nil, base)), tc.extra...), gatewayWait, devEnv)
		got := problemsOf(t, err)
		assert.True(t, slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }), "%s: %v", name, got)
	}
}

func TestMCPKind(t *testing.T) {
	t.Parallel()
	mcpDown := func(extra map[string]string) map[string]string {
		d := map[string]string{"kind": "mcp", "execute": "http://127.0.0.1:8090/mcp", "tool": "create_transfer",
			"honors_idempotency_key": "", "attempts": "5", "idempotency_argument": "idempotency_key"}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	c, err := parse(doc(action("payments.mcp", nil, mcpDown(nil))), gatewayWait, devEnv)
	require.NoError(t, err)
	a, _ := c.Lookup("payments.mcp")
	assert.True(t, a.Downstream.HonorsIdempotencyKey, "an idempotency argument honours the key")
	assert.Equal(t, plan.KindMCP, a.Downstream.Kind)

	c, err = parse(doc(action("payments.mcp_legacy", nil, mcpDown(map[string]string{"idempotency_argument": "", "attempts": "1",
		"idempotency_key_retention": "", "status_tool": "get_transfer"}))), gatewayWait, devEnv)
	require.NoError(t, err)
	a, _ = c.Lookup("payments.mcp_legacy")
	assert.False(t, a.Downstream.HonorsIdempotencyKey)
	assert.Equal(t, a.Downstream.Execute, a.Downstream.Status, "the status tool is on the same server")

	for name, tc := range map[string]struct {
		down map[string]string
		want string
	}{
		"no tool":            {mcpDown(map[string]string{"tool": ""}), "downstream.tool is required for kind mcp"},
		"unknown kind":       {mcpDown(map[string]string{"kind": "grpc"}), `downstream.kind "grpc" is unknown`},
		"contradiction":      {mcpDown(map[string]string{"honors_idempotency_key": "false"}), "contradicts idempotency_argument"},
		"http with a tool":   {map[string]string{"tool": "x"}, "downstream.tool applies to kind mcp only"},
		"status url for mcp": {mcpDown(map[string]string{"status": "http://x/s"}), "downstream.status is for kind http"},
	} {
		_, err := parse(doc(action("payments.x", nil, tc.down)), gatewayWait, devEnv)
		got := problemsOf(t, err)
		assert.True(t, slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }), "%s: %v", name, got)
	}
}
