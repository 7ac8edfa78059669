package catalog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withBind renders one action whose bind and free sections are given.
func withBind(bind, free string) []byte {
	text := string(doc(action("a.b", nil, nil)))
	start := strings.Index(text, "    bind:\n")
	end := strings.Index(text, "    fingerprint_ttl:")
	return []byte(text[:start] + "    bind:\n" + bind + "    free:\n" + free + text[end:])
}

const currencyField = "      currency: {type: string, required: true, normalize: [trim, upper], kind: currency}\n"

func TestConstraintsLoad(t *testing.T) {
	t.Parallel()
	c, err := parse(withBind(
		"      amount: {type: decimal, required: true, exclusive_min: 0, max: \"1000000.00\", scale_from: currency}\n"+
			currencyField+
			"      fee: {type: decimal, min: -1.5, exclusive_max: 10, scale: 2}\n"+
			"      count: {type: integer, min: 1, max: 99}\n"+
			"      payee_id: {type: string, kind: identifier, max_length: 64, pattern: '^p-'}\n"+
			"      speed: {type: string, normalize: [lower], enum: [slow, fast]}\n",
		"      memo: {type: string, max_length: 500}\n"), gatewayWait, devEnv)
	require.NoError(t, err)
	a, _ := c.Lookup("a.b")
	amount := a.Bind["amount"]
	lo, loEx := amount.Lower()
	hi, hiEx := amount.Upper()
	assert.Equal(t, "0", lo.String())
	assert.True(t, loEx)
	assert.Equal(t, "1000000", hi.String(), "decimals are exact and reduced")
	assert.False(t, hiEx)
	fee := a.Bind["fee"]
	lo, loEx = fee.Lower()
	hi, hiEx = fee.Upper()
	assert.Equal(t, "-1.5", lo.String())
	assert.False(t, loEx)
	assert.Equal(t, "10", hi.String())
	assert.True(t, hiEx)
	places, scaled := fee.Scale()
	assert.True(t, scaled)
	assert.Equal(t, 2, places)
	payee := a.Bind["payee_id"]
	require.NotNil(t, payee.Pattern(), "the pattern is compiled at load")
	assert.True(t, payee.Pattern().MatchString("p-1"))
	speed := a.Bind["speed"]
	assert.Equal(t, []string{"slow", "fast"}, ValueOf[[]string](&speed, enumConstraint{}))
	assert.Equal(t, 500, a.Free["memo"].MaxLength)
}

// TestConstraintRefusals: every malformed constraint is refused at load
// with a message naming the action, the field and the numbers.
func TestConstraintRefusals(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		bind, free string
		want       []string
	}{
		"min above max": {
			bind: "      amount: {type: decimal, min: 10, max: 5}\n",
			want: []string{"a.b: bind.amount: min 10 and max 5 leave no allowed value"},
		},
		"exclusive bounds equal": {
			bind: "      amount: {type: decimal, exclusive_min: 5, max: 5.0}\n",
			want: []string{"a.b: bind.amount: exclusive_min 5 and max 5 leave no allowed value"},
		},
		"both min variants": {
			bind: "      amount: {type: decimal, min: 0, exclusive_min: 0}\n",
			want: []string{"a.b: bind.amount: set min or exclusive_min, not both"},
		},
		"both max variants": {
			bind: "      amount: {type: decimal, max: 1, exclusive_max: 2}\n",
			want: []string{"a.b: bind.amount: set max or exclusive_max, not both"},
		},
		"scale and scale_from": {
			bind: "      amount: {type: decimal, scale: 2, scale_from: currency}\n" + currencyField,
			want: []string{"a.b: bind.amount: set scale or scale_from, not both"},
		},
		"negative scale": {
			bind: "      amount: {type: decimal, scale: -1}\n",
			want: []string{"a.b: bind.amount: scale -1 must be between 0 and 30"},
		},
		"scale of an integer": {
			bind: "      count: {type: integer, scale: 2}\n",
			want: []string{"a.b: bind.count: scale applies to decimal fields only (an integer has none)"},
		},
		"scale_from names a plain string": {
			bind: "      amount: {type: decimal, scale_from: currency}\n      currency: {type: string}\n",
			want: []string{`a.b: bind.amount: scale_from "currency" must name a string field of kind currency, not a string field without a kind`},
		},
		"scale_from names nothing": {
			bind: "      amount: {type: decimal, scale_from: ccy}\n",
			want: []string{`a.b: bind.amount: scale_from "ccy" is not a bound field`},
		},
		"scale_from names a free field": {
			bind: "      amount: {type: decimal, scale_from: memo}\n",
			want: []string{`a.b: bind.amount: scale_from "memo" is not a bound field`},
		},
		"bad regexp": {
			bind: "      payee_id: {type: string, pattern: '^(p'}\n",
			want: []string{`a.b: bind.payee_id: pattern "^(p" is not a valid regular expression`},
		},
		"unknown kind": {
			bind: "      payee_id: {type: string, kind: iban}\n",
			want: []string{`a.b: bind.payee_id: unknown kind "iban" (want currency or identifier)`},
		},
		"kind on a decimal": {
			bind: "      amount: {type: decimal, kind: currency, max_length: 3}\n",
			want: []string{"a.b: bind.amount: kind applies to string fields only, not to decimal fields",
				"a.b: bind.amount: max_length applies to string fields only, not to decimal fields"},
		},
		"min on a string": {
			bind: "      payee_id: {type: string, min: 1}\n",
			want: []string{"a.b: bind.payee_id: min applies to decimal and integer fields only, not to string fields"},
		},
		"negative max_length": {
			bind: "      payee_id: {type: string, max_length: -1}\n",
			want: []string{"a.b: bind.payee_id: max_length -1 must be >= 1"},
		},
		"enum never matches its normalizer": {
			bind: "      currency: {type: string, normalize: [upper], enum: [usd, EUR, EUR]}\n",
			want: []string{`a.b: bind.currency: enum value "usd" can never match`, `a.b: bind.currency: enum lists "EUR" twice`},
		},
		"empty enum": {
			bind: "      currency: {type: string, enum: []}\n",
			want: []string{"a.b: bind.currency: enum is empty"},
		},
		"not a decimal": {
			bind: "      amount: {type: decimal, max: lots}\n",
			want: []string{`a.b: bind.amount: max: line 4: "lots" is not a finite decimal number`},
		},
		"scale not a number": {
			bind: "      amount: {type: decimal, scale: two}\n",
			want: []string{"a.b: bind.amount: scale: line 4: cannot unmarshal !!str `two` into int"},
		},
		"enum not a list": {
			bind: "      speed: {type: string, enum: slow}\n",
			want: []string{"a.b: bind.speed: enum: line 4: cannot unmarshal !!str `slow` into []string"},
		},
		"kind not a string": {
			bind: "      payee_id: {type: string, kind: [currency]}\n",
			want: []string{"a.b: bind.payee_id: kind: line 4: cannot unmarshal !!seq into string"},
		},
		"free max_length on a decimal": {
			bind: "      amount: {type: decimal}\n",
			free: "      tip: {type: decimal, max_length: 5}\n",
			want: []string{"a.b: free.tip: max_length applies to string fields only, not to decimal fields"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			free := tt.free
			if free == "" {
				free = "      memo: {type: string}\n"
			}
			_, err := parse(withBind(tt.bind, free), gatewayWait, devEnv)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

// Declared is every constraint a field declares, in the constraints' order,
// and nothing else.
func TestDeclaredInOrder(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"{type: decimal, required: true, exclusive_min: 0, max: 1000000, scale: 2}",
		"{type: string, normalize: [trim], kind: identifier, max_length: 64, enum: [a, b]}",
		"{type: string}",
	} {
		f, err := ParseField(text)
		require.NoError(t, err, text)
		var want []Constraint
		for _, c := range Constraints() {
			if f.Declares(c) {
				want = append(want, c)
			}
		}
		assert.Equal(t, want, f.Declared(), text)
	}
	f, err := ParseField("{type: decimal, max: 1, min: 0, scale: 2}")
	require.NoError(t, err)
	assert.Len(t, f.Declared(), 3)
}
