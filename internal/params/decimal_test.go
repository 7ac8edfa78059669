package params

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/params/paramstest"
)

// TestDecimalStrings checks DecimalPattern and the parser of a decimal
// string against the table: the same strings accepted, the same refused,
// each refusal named and its repair suggested.
func TestDecimalStrings(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(DecimalPattern)
	tab, err := paramstest.ReadDecimalTable()
	require.NoError(t, err)
	for _, row := range tab.Rows {
		t.Run(row.S, func(t *testing.T) {
			assert.Equal(t, row.Decimal, re.MatchString(row.S), "DecimalPattern")
			assert.Equal(t, row.Decimal, isDecimalString(row.S), "isDecimalString")
			d, nerr := parseDecimalString(row.S)
			if row.Decimal {
				require.Nil(t, nerr, "the parser refuses what the pattern accepts")
				require.NotNil(t, d)
				return
			}
			require.NotNil(t, nerr, "the parser accepts what the pattern refuses")
			assert.Equal(t, row.Problem, nerr.code)
			p := nerr.problem("amount", RuleType)
			if row.Plain != "" {
				assert.Contains(t, p.Problem, `"`+row.Plain+`"`, "the refusal suggests the repair")
			} else {
				assert.NotContains(t, p.Args, "plain")
			}
			assert.NotContains(t, p.Problem, "JSON number", "a string is judged as a decimal string")
		})
	}
}

// TestDecimalStringAsNumber: a field given as a JSON number follows JSON's
// grammar (docs/contract.md §3: 1e0 and 10e-1 are 1), a string DecimalPattern.
func TestDecimalStringAsNumber(t *testing.T) {
	t.Parallel()
	spec := typedAction().Bind
	canonical, _, err := Canonicalize([]byte(`{"id":"x","count":1,"d":1e3}`), spec)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"x","count":1,"d":1000}`, string(canonical))
	_, _, err = Canonicalize([]byte(`{"id":"x","count":1,"d":"1e3"}`), spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"1e3" is written with an exponent: a decimal string is plain digits; write "1000"`)
	_, _, err = Canonicalize([]byte(`{"id":"x","count":1,"d":1e99999}`), spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `has an exponent beyond 10000`)
}

// FuzzDecimalString: isDecimalString accepts exactly what DecimalPattern
// matches.
func FuzzDecimalString(f *testing.F) {
	tab, err := paramstest.ReadDecimalTable()
	require.NoError(f, err)
	for _, row := range tab.Rows {
		f.Add(row.S)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDecimalString(s), decimalRE.MatchString(s); got != want {
			t.Fatalf("isDecimalString(%q) is %v, DecimalPattern %v", s, got, want)
		}
	})
}
