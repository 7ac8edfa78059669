package params

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
)

// devCatalog loads the dev catalog (deployments/catalog.dev.yaml).
func devCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:8090")
	cat, err := catalog.Load(filepath.Join("..", "..", "deployments", "catalog.dev.yaml"), 1500*time.Millisecond)
	require.NoError(t, err)
	return cat
}

// devTransfer returns payments.transfer of the dev catalog.
func devTransfer(t *testing.T) *catalog.Action {
	t.Helper()
	a, ok := devCatalog(t).Lookup("payments.transfer")
	require.True(t, ok)
	return a
}

// params renders the dev transfer's params with overrides (nil removes).
func params(over map[string]any) []byte {
	p := map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-3", "memo": "rent"}
	for k, v := range over {
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
	}
	b, _ := json.Marshal(p)
	return b
}

func TestDevCatalogConstraints(t *testing.T) {
	a := devTransfer(t)
	tests := []struct {
		name            string
		over            map[string]any
		field, rule     string
		problem, expect string
	}{
		{"negative", map[string]any{"amount": "-5"}, "amount", "exclusive_min", "must be greater than 0, not -5", "> 0"},
		{"zero", map[string]any{"amount": "0"}, "amount", "exclusive_min", "must be greater than 0, not 0", "> 0"},
		{"zero as a number", map[string]any{"amount": json.Number("0.00")}, "amount", "exclusive_min", "not 0", "> 0"},
		{"above max", map[string]any{"amount": "1000001"}, "amount", "max", "must be at most 1000000, not 1000001", "<= 1000000"},
		{"USD with 3 places", map[string]any{"amount": "12.505"}, "amount", "scale", "has 3 decimal places; USD allows at most 2", "scale <= 2 (USD)"},
		{"JPY with a fraction", map[string]any{"amount": "12.5", "currency": "JPY"}, "amount", "scale", "JPY allows no decimal places", "scale <= 0 (JPY)"},
		{"XXX", map[string]any{"currency": "XXX"}, "currency", "currency", `"XXX" is not an active ISO 4217 currency code`, "ISO 4217"},
		{"gold", map[string]any{"currency": " xau "}, "currency", "currency", `"XAU" is not an active`, "ISO 4217"},
		{"65 characters", map[string]any{"payee_id": strings.Repeat("p", 65)}, "payee_id", "max_length", "is 65 characters long; at most 64 are allowed", "length <= 64"},
		{"10000 characters", map[string]any{"payee_id": strings.Repeat("p", 10000)}, "payee_id", "max_length", "is 10000 characters long", "length <= 64"},
		{"zero width space", map[string]any{"payee_id": "p-\u200b3"}, "payee_id", "identifier", "U+200B ZERO WIDTH SPACE at position 3", "PRECIS IdentifierClass (RFC 8264)"},
		{"right-to-left override", map[string]any{"payee_id": "p-\u202e3"}, "payee_id", "identifier", "U+202E RIGHT-TO-LEFT OVERRIDE at position 3", "PRECIS IdentifierClass (RFC 8264)"},
		{"full-width", map[string]any{"payee_id": "\uff50-\uff13"}, "payee_id", "identifier",
			"U+FF50 FULLWIDTH LATIN SMALL LETTER P at position 1, U+FF13 FULLWIDTH DIGIT THREE at position 3", "PRECIS IdentifierClass (RFC 8264)"},
		{"NUL", map[string]any{"payee_id": "p\x003"}, "payee_id", "identifier", "U+0000 (control) at position 2", "PRECIS IdentifierClass (RFC 8264)"},
		{"inner space", map[string]any{"payee_id": "p 3"}, "payee_id", "identifier", "U+0020 SPACE at position 2", "PRECIS IdentifierClass (RFC 8264)"},
		{"unknown field", map[string]any{"colour": "blue"}, "colour", RuleUnknownField, "unknown field", "one of amount, currency, memo, payee_id"},
		{"long memo", map[string]any{"memo": strings.Repeat("m", 501)}, "memo", "max_length", "is 501 characters long; at most 500 are allowed", "length <= 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := params(tt.over)
			got := Validate(raw, a)
			require.Len(t, got, 1, "%s: %+v", raw, got)
			assert.Equal(t, tt.field, got[0].Field)
			assert.Equal(t, tt.rule, got[0].Rule)
			assert.Contains(t, got[0].Problem, tt.problem)
			assert.Equal(t, tt.expect, got[0].Expected)
			assert.NotEmpty(t, got[0].Code)
			// The constraints never change what Canonicalize computes.
			_, _, err := Canonicalize(raw, a.Bind)
			if tt.rule != RuleUnknownField && tt.field != "memo" {
				assert.NoError(t, err, "Canonicalize checks types only")
			}
		})
	}
	for name, over := range map[string]map[string]any{
		"JPY integer":            {"amount": "1200", "currency": "JPY"},
		"JPY trailing zeros":     {"amount": "1200.000", "currency": "jpy"},
		"USD trailing zeros":     {"amount": "12.5000"},
		"max":                    {"amount": 1000000},
		"smallest USD":           {"amount": "0.01"},
		"BHD 3 places":           {"amount": "1.234", "currency": "BHD"},
		"64 characters":          {"payee_id": strings.Repeat("p", 64)},
		"trimmed":                {"payee_id": "  p-3  "},
		"accents":                {"payee_id": "payée-7"},
		"500 characters of memo": {"memo": strings.Repeat("m", 500)},
		"memo with any text":     {"memo": "rent \u200b ｐ"},
	} {
		assert.Empty(t, Validate(params(over), a), name)
	}
}

// TestConstraintsKeepCanonicalBytes: params that were valid before the
// constraints canonicalize to the same bytes (so issued fingerprints verify).
func TestConstraintsKeepCanonicalBytes(t *testing.T) {
	a := devTransfer(t)
	for raw, want := range map[string]string{
		`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`: `{"amount":12.5,"currency":"USD","payee_id":"p-1"}`,
		`{"amount":1.0e3,"currency":"JPY","payee_id":" x "}`:                   `{"amount":1000,"currency":"JPY","payee_id":"x"}`,
	} {
		require.Empty(t, Validate([]byte(raw), a))
		c, _, err := Canonicalize([]byte(raw), a.Bind)
		require.NoError(t, err)
		assert.Equal(t, want, string(c))
	}
}

func TestStringConstraints(t *testing.T) {
	t.Parallel()
	a := &catalog.Action{
		Scope: "test.strings",
		Bind: map[string]catalog.Field{
			"speed": field(t, "{type: string, normalize: [lower], enum: [slow, fast]}"),
			"ref":   field(t, "{type: string, pattern: '^r-[0-9]+$'}"),
			"rate":  field(t, "{type: decimal, scale: 1, min: -1, exclusive_max: 5}"),
		},
	}
	got := Validate([]byte(`{"speed":"Medium","ref":"x-1","rate":"5"}`), a)
	require.Len(t, got, 3, "%+v", got)
	assert.Equal(t, []string{"rate", "ref", "speed"}, []string{got[0].Field, got[1].Field, got[2].Field})
	assert.Equal(t, "exclusive_max", got[0].Rule)
	assert.Equal(t, "< 5", got[0].Expected)
	assert.Equal(t, "pattern", got[1].Rule)
	assert.Equal(t, `^r-[0-9]+$`, got[1].Expected)
	assert.Equal(t, RuleEnum, got[2].Rule)
	assert.Equal(t, `must be one of slow, fast, not "medium"`, got[2].Problem)

	got = Validate([]byte(`{"speed":"FAST","ref":"r-12","rate":"-1.25"}`), a)
	require.Len(t, got, 2, "%+v", got)
	assert.Equal(t, "min", got[0].Rule)
	assert.Equal(t, ">= -1", got[0].Expected)
	assert.Equal(t, "scale", got[1].Rule)
	assert.Equal(t, "has 2 decimal places; at most 1 is allowed", got[1].Problem)

	assert.Empty(t, Validate([]byte(`{"speed":"FAST","ref":"r-12","rate":"-1.0"}`), a))
}

func TestProblemTextsRender(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"limit", "value"}, ProblemArgs("min"))
	assert.Equal(t, []string{"got", "type"}, ProblemArgs("type.number"))
	for _, code := range ProblemCodes() {
		var args []string
		for _, a := range ProblemArgs(code) {
			args = append(args, a, "<"+a+">")
		}
		p := newProblem("f", "r", code, "", args...)
		assert.NotContains(t, p.Problem, code+" map[", "code %s renders with its args", code)
		for _, a := range ProblemArgs(code) {
			if a != "type" { // type.number only tests it
				assert.Contains(t, p.Problem, "<"+a+">", "code %s shows %s", code, a)
			}
		}
	}
}

// field is the bound field text declares, as the catalog writes it.
func field(t *testing.T, text string) catalog.Field {
	t.Helper()
	f, err := catalog.ParseField(text)
	require.NoError(t, err)
	return f
}
