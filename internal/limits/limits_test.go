package limits

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/go-redis/redis_rate/v10"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
)

func dec(t testing.TB, s string) apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return *d
}

// devCatalog is the dev catalog (its actions declare their spend).
func devCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:1")
	t.Setenv("DOWNSTREAM_MCP_URL", "http://127.0.0.1:1/mcp")
	cat, err := catalog.Load(filepath.Join("..", "..", "deployments", "catalog.dev.yaml"), 2*time.Second)
	require.NoError(t, err)
	return cat
}

func TestDevLimits(t *testing.T) {
	cat := devCatalog(t)
	l, err := Load(filepath.Join("..", "..", "deployments", "limits.dev.yaml"), cat)
	require.NoError(t, err)

	bob := l.Charge("bob", "agent", "payments.transfer", dec(t, "100.00"), "CHF")
	require.Len(t, bob.Windows, 2, "bob: 1,000.00 CHF a day and 500.00 per operation")
	kinds := map[string]string{}
	for _, w := range bob.Windows {
		kinds[w.Kind] = w.Max.Text('f')
	}
	assert.Equal(t, map[string]string{"daily": "1000", "per_operation": "500"}, kinds)
	eur := l.Charge("bob", "agent", "payments.payout", dec(t, "100.00"), "EUR")
	require.Len(t, eur.Windows, 1, "in every other currency only the per-operation maximum")
	assert.Equal(t, "per_operation", eur.Windows[0].Kind)

	assert.Empty(t, l.Charge("alice", "agent", "payments.transfer", dec(t, "100"), "CHF").Windows, "alice has no budget")
	for _, k := range []Kind{KindPreview, KindConfirm} {
		_, ok := l.RateFor("alice", "agent", k)
		assert.False(t, ok, "alice has no rate")
	}
	p, ok := l.RateFor("bob", "agent", KindPreview)
	require.True(t, ok)
	assert.Equal(t, redis_rate.PerMinute(20), p)
	c, ok := l.RateFor("bob", "agent", KindConfirm)
	require.True(t, ok)
	assert.Equal(t, redis_rate.PerMinute(30), c)
}

func TestParseRefusesNamingTheField(t *testing.T) {
	cat := devCatalog(t)
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "budgets: [{name: a, subject: s, daily: 1, weekly: 2}]", "field weekly not found"},
		{"no name", "budgets: [{subject: s, daily: 1}]", "budgets[0]: name is required"},
		{"name twice", "budgets: [{name: a, subject: s, daily: 1}, {name: a, subject: t, daily: 1}]", `budgets[1] (a): name "a" is used twice`},
		{"subject and role", "budgets: [{name: a, subject: s, role: agent, daily: 1}]", "budgets[0] (a): set exactly one of subject and role"},
		{"neither", "budgets: [{name: a, daily: 1}]", "set exactly one of subject and role"},
		{"unknown action", "budgets: [{name: a, subject: s, action: nope, daily: 1}]", `action "nope" is not in the catalog`},
		{"bad currency", "budgets: [{name: a, subject: s, currency: XXX, daily: 1}]", "currency: \"XXX\""},
		{"no maximum", "budgets: [{name: a, subject: s}]", "set at least one of per_operation, daily and monthly"},
		{"zero", "budgets: [{name: a, subject: s, daily: 0}]", "daily: 0 must be greater than 0"},
		{"scale", "budgets: [{name: a, subject: s, currency: JPY, monthly: '10.5'}]", "monthly: 10.5 has more decimal places than JPY allows (0)"},
		{"not a decimal", "budgets: [{name: a, subject: s, daily: lots}]", `"lots" is not a finite decimal number`},
		{"rate unit", "rates: [{subject: s, preview: 10/day}]", "rates[0]: preview: \"10/day\""},
		{"rate zero", "rates: [{subject: s, confirm: 0/minute}]", "rates[0]: confirm: \"0/minute\": the count must be greater than 0"},
		{"rate empty", "rates: [{subject: s}]", "rates[0]: set preview, confirm or both"},
		{"rate twice", "rates: [{role: agent, preview: 1/s}, {role: agent, confirm: 1/s}]", "rates[1]: role agent has a rate already"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), cat)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	l, err := Parse(nil, cat)
	require.NoError(t, err, "an empty file is no limits")
	assert.True(t, l.Empty())
}

func TestRulesApply(t *testing.T) {
	cat := devCatalog(t)
	l, err := Parse([]byte(`
budgets:
  - {name: agents-transfer-usd, role: agent, action: payments.transfer, currency: USD, monthly: 100}
  - {name: carol-any, subject: carol, per_operation: 5}
rates:
  - {role: agent, preview: 10/second}
  - {subject: carol, confirm: 1/hour}
`), cat)
	require.NoError(t, err)
	names := func(c operation.Charge) []string {
		var out []string
		for _, w := range c.Windows {
			out = append(out, w.Name+"/"+w.Kind+"/"+w.Scope)
		}
		return out
	}
	assert.Equal(t, []string{"agents-transfer-usd/monthly/payments.transfer", "carol-any/per_operation/"},
		names(l.Charge("carol", "agent", "payments.transfer", dec(t, "1"), "USD")))
	assert.Equal(t, []string{"carol-any/per_operation/"}, names(l.Charge("carol", "agent", "payments.payout", dec(t, "1"), "USD")))
	assert.Empty(t, names(l.Charge("dave", "operator", "payments.transfer", dec(t, "1"), "USD")), "the role's budget is not the operator's")
	assert.Equal(t, []string{"agents-transfer-usd/monthly/payments.transfer"}, names(l.Charge("dave", "agent", "payments.transfer", dec(t, "1"), "USD")))

	_, ok := l.RateFor("carol", "agent", KindPreview)
	assert.False(t, ok, "the subject's own rate wins over its role's, and it limits confirms only")
	r, ok := l.RateFor("dave", "agent", KindPreview)
	assert.True(t, ok)
	assert.Equal(t, redis_rate.PerSecond(10), r)
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	daily := operation.Window{Name: "daily", Kind: string(Daily), Period: Daily.Period(), Max: dec(t, "1000")}
	monthly := operation.Window{Name: "monthly", Kind: string(Monthly), Period: Monthly.Period(), Max: dec(t, "5000")}
	perOp := operation.Window{Name: "per-op", Kind: string(PerOperation), Max: dec(t, "500")}
	use := func(used string, frees time.Time) operation.WindowUsage {
		return operation.WindowUsage{Used: dec(t, used), FreesAt: frees}
	}
	for _, tt := range []struct {
		name     string
		amount   string
		windows  []operation.Window
		usage    []operation.WindowUsage
		want     string // refusing window's name, "" when it fits
		left     string
		resetsAt time.Time
	}{
		{"no windows", "100", nil, nil, "", "", time.Time{}},
		{"fits", "100", []operation.Window{daily}, []operation.WindowUsage{use("900", time.Time{})}, "", "", time.Time{}},
		{"exactly fits", "100.00", []operation.Window{daily}, []operation.WindowUsage{use("900.00", time.Time{})}, "", "", time.Time{}},
		{"one cent over", "100.01", []operation.Window{daily}, []operation.WindowUsage{use("900", t0)}, "daily", "100", t0},
		{"over and over-used", "1", []operation.Window{daily}, []operation.WindowUsage{use("1200", t0)}, "daily", "0", t0},
		{"per operation", "500.01", []operation.Window{perOp}, []operation.WindowUsage{use("0", time.Time{})}, "per-op", "500", time.Time{}},
		{"the one never freeing binds", "600", []operation.Window{daily, perOp},
			[]operation.WindowUsage{use("900", t0), use("0", time.Time{})}, "per-op", "500", time.Time{}},
		{"the later freeing binds", "200", []operation.Window{daily, monthly},
			[]operation.WindowUsage{use("900", t0), use("4900", t0.Add(48*time.Hour))}, "monthly", "100", t0.Add(48 * time.Hour)},
		{"tie: the first", "200", []operation.Window{daily, monthly},
			[]operation.WindowUsage{use("900", t0), use("4900", t0)}, "daily", "100", t0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := operation.Charge{Amount: dec(t, tt.amount), Currency: "CHF", Windows: tt.windows}
			r, err := Decide(c, tt.usage)
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			assert.Equal(t, tt.want, r.Name)
			assert.Equal(t, tt.left, r.Left.Text('f'))
			assert.Equal(t, tt.resetsAt, r.ResetsAt)
			assert.Equal(t, "CHF", r.Currency)
		})
	}
	_, err := Decide(operation.Charge{Windows: []operation.Window{daily}}, nil)
	assert.Error(t, err, "one usage per window")
}

func TestLoadEmptyPathIsNoLimits(t *testing.T) {
	l, err := Load("", nil)
	require.NoError(t, err)
	assert.True(t, l.Empty())
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
