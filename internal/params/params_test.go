package params

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
)

// transferAction mirrors payments.transfer of the dev catalog.
func transferAction() *catalog.Action {
	return &catalog.Action{
		Scope: "payments.transfer",
		Bind: map[string]catalog.Field{
			"amount":   {Type: catalog.TypeDecimal, Required: true},
			"currency": {Type: catalog.TypeString, Required: true, Normalize: []string{"trim", "upper"}},
			"payee_id": {Type: catalog.TypeString, Required: true, Normalize: []string{"trim"}},
		},
		Free: map[string]catalog.FreeField{"memo": {Type: catalog.TypeString}},
	}
}

// typedAction has one optional bound field of each type and typed free fields.
func typedAction() *catalog.Action {
	return &catalog.Action{
		Scope: "test.typed",
		Bind: map[string]catalog.Field{
			"s":     {Type: catalog.TypeString, Normalize: []string{"lower"}},
			"d":     {Type: catalog.TypeDecimal},
			"i":     {Type: catalog.TypeInteger},
			"b":     {Type: catalog.TypeBoolean},
			"id":    {Type: catalog.TypeString, Required: true},
			"count": {Type: catalog.TypeInteger, Required: true},
		},
		Free: map[string]catalog.FreeField{
			"note":  {},
			"n":     {Type: catalog.TypeInteger},
			"ok":    {Type: catalog.TypeBoolean},
			"price": {Type: catalog.TypeDecimal},
		},
	}
}

func canon(t *testing.T, spec map[string]catalog.Field, raw string) string {
	t.Helper()
	c, _, err := Canonicalize([]byte(raw), spec)
	require.NoError(t, err, raw)
	return string(c)
}

func TestCanonicalizeContractExample(t *testing.T) {
	t.Parallel()
	raw := `{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`
	c, normalized, err := Canonicalize([]byte(raw), transferAction().Bind)
	require.NoError(t, err)
	assert.Equal(t, `{"amount":12.5,"currency":"USD","payee_id":"p-1"}`, string(c))
	assert.Equal(t, map[string]any{"amount": json.Number("12.5"), "currency": "USD", "payee_id": "p-1"}, normalized)
	sum := sha256.Sum256([]byte(`{"amount":12.5,"currency":"USD","payee_id":"p-1"}`))
	assert.Equal(t, hex.EncodeToString(sum[:]), Hash(c))
}

func TestCanonicalizeDevCatalog(t *testing.T) {
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:8090")
	path := filepath.Join("..", "..", "deployments", "catalog.dev.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Skip("dev catalog not present")
	}
	cat, err := catalog.Load(path, 1500*time.Millisecond)
	require.NoError(t, err)
	for _, scope := range []string{"payments.transfer", "payments.legacy_transfer"} {
		a, ok := cat.Lookup(scope)
		require.True(t, ok, scope)
		raw := []byte(`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`)
		c, _, err := Canonicalize(raw, a.Bind)
		require.NoError(t, err)
		assert.Equal(t, `{"amount":12.5,"currency":"USD","payee_id":"p-1"}`, string(c), scope)
		assert.Empty(t, Validate(raw, a), scope)
	}
}

func TestCanonicalizeEquivalences(t *testing.T) {
	t.Parallel()
	spec := transferAction().Bind
	base := `{"amount":1,"currency":"USD","payee_id":"p-1"}`
	want := canon(t, spec, base)
	require.Equal(t, `{"amount":1,"currency":"USD","payee_id":"p-1"}`, want)
	same := map[string]string{
		"1.0":              `{"amount":1.0,"currency":"USD","payee_id":"p-1"}`,
		"1.00":             `{"amount":1.00,"currency":"USD","payee_id":"p-1"}`,
		"1e0":              `{"amount":1e0,"currency":"USD","payee_id":"p-1"}`,
		"10e-1":            `{"amount":10e-1,"currency":"USD","payee_id":"p-1"}`,
		`"1.00"`:           `{"amount":"1.00","currency":"USD","payee_id":"p-1"}`,
		`"1"`:              `{"amount":"1","currency":"USD","payee_id":"p-1"}`,
		"trim+upper":       `{"amount":1,"currency":" usd ","payee_id":"p-1"}`,
		"tab newline":      "{\"amount\":1,\"currency\":\"\\tUsD\\n\",\"payee_id\":\" p-1 \"}",
		"key order":        `{"payee_id":"p-1","currency":"USD","amount":1}`,
		"memo":             `{"amount":1,"currency":"USD","payee_id":"p-1","memo":"asap"}`,
		"another memo":     `{"amount":1,"currency":"USD","payee_id":"p-1","memo":"not so urgent"}`,
		"null memo":        `{"amount":1,"currency":"USD","payee_id":"p-1","memo":null}`,
		"undeclared field": `{"amount":1,"currency":"USD","payee_id":"p-1","zzz":{"a":1}}`,
	}
	for name, raw := range same {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, want, canon(t, spec, raw))
		})
	}
	different := map[string]string{
		"1.01":           `{"amount":1.01,"currency":"USD","payee_id":"p-1"}`,
		"another payee":  `{"amount":1,"currency":"USD","payee_id":"p-2"}`,
		"another cur":    `{"amount":1,"currency":"EUR","payee_id":"p-1"}`,
		"case of payee":  `{"amount":1,"currency":"USD","payee_id":"P-1"}`,
		"negative":       `{"amount":-1,"currency":"USD","payee_id":"p-1"}`,
		"inner space":    `{"amount":1,"currency":"US D","payee_id":"p-1"}`,
		"tiny more":      `{"amount":1.0000000000000000000001,"currency":"USD","payee_id":"p-1"}`,
		"float64 equals": `{"amount":1.00000000000000000001,"currency":"USD","payee_id":"p-1"}`,
	}
	for name, raw := range different {
		t.Run("not "+name, func(t *testing.T) {
			t.Parallel()
			assert.NotEqual(t, Hash([]byte(want)), Hash([]byte(canon(t, spec, raw))))
		})
	}
}

func TestCanonicalizeNFCAndNull(t *testing.T) {
	t.Parallel()
	spec := typedAction().Bind
	composed := canon(t, spec, "{\"id\":\"caf\u00e9\",\"count\":1}")
	decomposed := canon(t, spec, "{\"id\":\"cafe\u0301\",\"count\":1}")
	assert.Equal(t, composed, decomposed)
	assert.Equal(t, "{\"count\":1,\"id\":\"caf\u00e9\"}", composed)

	missing := canon(t, spec, `{"id":"x","count":1}`)
	null := canon(t, spec, `{"id":"x","count":1,"s":null,"d":null,"i":null,"b":null}`)
	assert.Equal(t, missing, null)

	all := canon(t, spec, `{"id":"x","count":"2.000","s":"ÀB","d":"-0.0","i":3e2,"b":false}`)
	assert.Equal(t, `{"b":false,"count":2,"d":0,"i":300,"id":"x","s":"àb"}`, all)
}

func TestCanonicalizeRefuses(t *testing.T) {
	t.Parallel()
	spec := typedAction().Bind
	tests := []struct {
		name  string
		raw   string
		field string
		want  string
	}{
		{"not an object", `[1]`, "", "must be a JSON object, not a JSON array"},
		{"missing required", `{"count":1}`, "id", "required string field is missing"},
		{"null required", `{"id":null,"count":1}`, "id", "required string field is null"},
		{"empty required", `{"id":"","count":1}`, "id", "required string field is empty"},
		{"string given a number", `{"id":1,"count":1}`, "id", "must be a string, not a JSON number"},
		{"integer with fraction", `{"id":"x","count":1.5}`, "count", "fractional part"},
		{"integer string with fraction", `{"id":"x","count":"1.5"}`, "count", "fractional part"},
		{"decimal bad string", `{"id":"x","count":1,"d":"12,50"}`, "d", `"12,50" contains a separator`},
		{"decimal with spaces", `{"id":"x","count":1,"d":" 1"}`, "d", `" 1" has white space around it: write the decimal string without it, "1"`},
		{"decimal NaN", `{"id":"x","count":1,"d":"NaN"}`, "d", `"NaN" is not a decimal string`},
		{"decimal Infinity", `{"id":"x","count":1,"d":"Infinity"}`, "d", `"Infinity" is not a decimal string`},
		{"decimal bool", `{"id":"x","count":1,"d":true}`, "d", "must be a decimal"},
		{"boolean string", `{"id":"x","count":1,"b":"true"}`, "b", "must be a JSON boolean"},
		{"boolean number", `{"id":"x","count":1,"b":1}`, "b", "must be a JSON boolean"},
		{"duplicate key", `{"id":"x","id":"y","count":1}`, "id", "duplicate key"},
		{"nested duplicate", `{"id":"x","count":1,"note":{"a":{"b":1,"b":2}}}`, "note.a.b", "duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Canonicalize([]byte(tt.raw), spec)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			var fp FieldProblem
			require.True(t, errors.As(err, &fp))
			assert.Equal(t, tt.field, fp.Field)
			assert.Contains(t, fp.Problem, tt.want)
		})
	}
}

// problemText is a problem's field and English text.
type problemText struct{ field, problem string }

func textsOf(ps []FieldProblem) []problemText {
	var out []problemText
	for _, p := range ps {
		out = append(out, problemText{p.Field, p.Problem})
	}
	return out
}

func TestValidateParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		action *catalog.Action
		raw    string
		want   []problemText
	}{
		{"valid", transferAction(), `{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`, nil},
		{"valid without memo", transferAction(), `{"amount":12.5,"currency":"usd","payee_id":"p-1"}`, nil},
		{"not an object", transferAction(), `"x"`, []problemText{{"", "params must be a JSON object, not a JSON string"}}},
		{"invalid JSON", transferAction(), `{`, []problemText{{"", "invalid JSON: unexpected end of input"}}},
		{"unknown field", transferAction(), `{"amount":1,"currency":"USD","payee_id":"p","to":"x"}`,
			[]problemText{{"to", "unknown field: not declared by the action, remove it"}}},
		{"empty after trim", transferAction(), `{"amount":1,"currency":"   ","payee_id":"p"}`,
			[]problemText{{"currency", "required string field is empty"}}},
		{"one entry per problem", transferAction(), `{"amount":"abc","currency":7,"memo":5,"extra":1,"zz":null}`,
			[]problemText{
				{"amount", `"abc" is not a decimal string: write an optional minus sign, digits, and optionally a point followed by digits, such as "12.50" (no plus sign, exponent, spaces or separators)`},
				{"currency", "must be a string, not a JSON number"},
				{"extra", "unknown field: not declared by the action, remove it"},
				{"memo", "must be a string, not a JSON number"},
				{"payee_id", "required string field is missing"},
				{"zz", "unknown field: not declared by the action, remove it"},
			}},
		{"free types", typedAction(), `{"id":"x","count":1,"note":"n","n":"1.5","ok":"yes","price":"1.2.3"}`,
			[]problemText{
				{"n", `must be an integer: "1.5" has a fractional part`},
				{"ok", "must be a JSON boolean (true or false), not a JSON string"},
				{"price", `"1.2.3" is not a decimal string: write an optional minus sign, digits, and optionally a point followed by digits, such as "12.50" (no plus sign, exponent, spaces or separators)`},
			}},
		{"free nulls", typedAction(), `{"id":"x","count":1,"note":null,"n":null,"ok":null,"price":null}`, nil},
		{"duplicate", transferAction(), `{"amount":1,"amount":2}`, []problemText{{"amount", "duplicate key"}}},
		{"no params", transferAction(), ``, []problemText{{"params", `params are missing: send the action's params as a JSON object, such as {"amount":"12.50"}`}}},
		{"no action", nil, `{}`, []problemText{{"", "no action to validate the params against"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, textsOf(Validate([]byte(tt.raw), tt.action)))

			// Bind answers what Validate and Canonicalize answer.
			bound, problems := Bind([]byte(tt.raw), tt.action)
			assert.Equal(t, tt.want, textsOf(problems))
			if tt.want == nil {
				wantCanonical, wantNormalized, err := Canonicalize([]byte(tt.raw), tt.action.Bind)
				require.NoError(t, err)
				assert.Equal(t, string(wantCanonical), string(bound.Canonical))
				assert.Equal(t, wantNormalized, bound.Normalized)
			} else {
				assert.Nil(t, bound.Canonical)
			}
		})
	}
}

func TestFieldProblemJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(FieldProblem{Field: "amount", Rule: "max", Problem: "bad", Expected: "<= 1", Code: "max", Args: map[string]string{"limit": "1"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"field":"amount","rule":"max","problem":"bad","expected":"<= 1"}`, string(b), "Code and Args stay inside")
	assert.True(t, strings.HasPrefix(FieldProblem{Field: "a", Problem: "b"}.Error(), ErrInvalid.Error()))
}
