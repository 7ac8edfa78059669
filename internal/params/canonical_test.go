package params

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"integer", `1`, `1`},
		{"one point zero", `1.0`, `1`},
		{"one point zero zero", `1.00`, `1`},
		{"exponent", `1e0`, `1`},
		{"negative exponent", `10e-1`, `1`},
		{"capital exponent with plus", `1E+2`, `100`},
		{"trailing zero", `12.50`, `12.5`},
		{"negative zero", `-0`, `0`},
		{"negative zero point", `-0.000`, `0`},
		{"negative", `-12.340`, `-12.34`},
		{"small", `0.00012300`, `0.000123`},
		{"small exponent", `123e-6`, `0.000123`},
		{"beyond float64", `12345678901234567890.123456789012345678901`, `12345678901234567890.123456789012345678901`},
		{"true", `true`, `true`},
		{"null", `null`, `null`},
		{"white space", " { \"b\" : 1 ,\n\t\"a\" : [ 1 , 2 ] } ", `{"a":[1,2],"b":1}`},
		{"nulls dropped recursively", `{"a":null,"b":{"c":null,"d":1},"e":[null,{"f":null}]}`, `{"b":{"d":1},"e":[null,{}]}`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
		{"control chars", `"\u0000\u0001\u001f\u007f"`, `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"quote and backslash", `"a\"b\\c"`, `"a\"b\\c"`},
		{"slash not escaped", `"a\/b/c"`, `"a/b/c"`},
		{"non-ASCII unescaped", `"\u00e9\u20ac\ud83d\ude00"`, `"é€😀"`},
		{"html not escaped", `"<&>\u2028"`, "\"<&>\u2028\""},
		{"NFC composed", "\"e\u0301\"", "\"\u00e9\""},
		{"NFC keys", "{\"e\u0301\":1}", "{\"\u00e9\":1}"},
		{"keys by UTF-16 units", `{"b":1,"a":2,"aa":3,"A":4,"":5}`, `{"":5,"A":4,"a":2,"aa":3,"b":1}`},
		// U+1F600 is the surrogate pair D83D DE00 in UTF-16, which sorts
		// before U+FB01 (ﬁ) although its code point is larger.
		{"surrogate pair before U+FB01", "{\"\uFB01\":1,\"\U0001F600\":2}", "{\"\U0001F600\":2,\"\uFB01\":1}"},
		// RFC 8785 §3.2.3's example with U+FB01 in place of U+FB33, which
		// NFC decomposes (a composition exclusion).
		{"NFC decomposes U+FB33", "\"\ufb33\"", "\"\u05d3\u05bc\""},
		{"RFC 8785 sort example", "{\"\u20ac\":1,\"\\r\":2,\"\ufb01\":3,\"1\":4,\"\U0001F600\":5,\"\u0080\":6,\"\u00f6\":7}",
			"{\"\\r\":2,\"1\":4,\"\u0080\":6,\"\u00f6\":7,\"\u20ac\":1,\"\U0001F600\":5,\"\ufb01\":3}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalJSON([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			again, err := CanonicalJSON(got)
			require.NoError(t, err)
			assert.Equal(t, string(got), string(again), "canonical form is a fixed point")
		})
	}
}

func TestCanonicalJSONRefuses(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	okDeep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	many := "[" + strings.TrimSuffix(strings.Repeat("1,", MaxMembers+1), ",") + "]"
	big := `"` + strings.Repeat("a", MaxParamsBytes) + `"`
	tests := []struct {
		name  string
		in    string
		field string
		want  string
	}{
		{"duplicate top level", `{"a":1,"a":2}`, "a", "duplicate key"},
		{"duplicate nested", `{"x":{"y":[{"a":1,"a":1}]}}`, "x.y[0].a", "duplicate key"},
		{"duplicate after NFC", "{\"\u00e9\":1,\"e\u0301\":2}", "\u00e9", "duplicate key"},
		{"too deep", deep, strings.Repeat("[0]", MaxDepth), "nested deeper than 32"},
		{"too many members", many, "[1024]", "more than 1024 members"},
		{"too large", big, "", "more than the limit"},
		{"invalid UTF-8", "\"\xff\"", "", "not valid UTF-8"},
		{"trailing data", `{} {}`, "", "data after"},
		{"trailing comma", `{"a":1,}`, "", "invalid JSON"},
		{"truncated", `{"a":`, "a", "invalid JSON"},
		{"empty", ``, "", "invalid JSON"},
		{"huge exponent", `1e999999`, "", "has an exponent beyond 10000"},
		{"too many digits", `1e200`, "", "more than 128 digits"},
		{"too precise", `1e-200`, "", "more than 128 digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CanonicalJSON([]byte(tt.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
			var fp FieldProblem
			require.True(t, errors.As(err, &fp))
			assert.Equal(t, tt.field, fp.Field)
		})
	}
	_, err := CanonicalJSON([]byte(okDeep))
	assert.NoError(t, err, "exactly MaxDepth levels are accepted")
}
