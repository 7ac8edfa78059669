package params

import (
	"regexp"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/internal/catalog"
)

// DecimalPattern is the one grammar of a decimal string, the form in which
// agents send amounts: an optional minus sign, an integer part without
// leading zeros, and optionally a point followed by at least one digit
// ("12.50", "0.5", "-3", "1000000"). No plus sign, exponent, white space,
// thousands separator, decimal comma, or point without a digit on both
// sides. It is JSON's number grammar without the exponent, so a decimal
// string reads the same in every language. The gateway accepts a decimal
// or integer field given as a string only when it matches this pattern
// (parseDecimalString), and the tool schemas' patterns are narrowings of
// it (package api/tools), so both sides accept and refuse the same strings
// (testdata/decimal_strings.json is the table both are checked against).
// A field given as a JSON number follows JSON's grammar, exponent included.
const DecimalPattern = `^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`

// decimalRE is DecimalPattern compiled.
var decimalRE = regexp.MustCompile(DecimalPattern)

// isDecimalString reports whether s matches DecimalPattern, without the
// regexp: DecimalPattern is JSON's number grammar without the exponent.
func isDecimalString(s string) bool {
	return !strings.ContainsAny(s, "eE") && isJSONNumber(s)
}

// parseDecimalString parses a decimal string: DecimalPattern decides what
// is accepted; a refused string gets the problem code that names what is
// wrong with it and, when one repair makes it a decimal string without
// guessing (white space around it, a plus sign, an exponent, leading
// zeros, a bare point), that repaired text to suggest.
func parseDecimalString(s string) (*apd.Decimal, *numberError) {
	if isDecimalString(s) {
		return parseDecimal(s)
	}
	code, plain := decimalStringProblem(s)
	if plain == "" {
		return nil, &numberError{code, []string{"value", catalog.Quoted(s)}}
	}
	return nil, &numberError{code, []string{"value", catalog.Quoted(s), "plain", catalog.Quoted(plain)}}
}

// decimalStringProblem names what keeps s from matching DecimalPattern:
// the problem code of the first thing wrong, and the repaired text when
// the unambiguous repairs make it match (else "" and decimal.syntax,
// decimal.separator or decimal.empty, which suggest nothing).
func decimalStringProblem(s string) (code, plain string) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return "decimal.empty", ""
	case strings.ContainsAny(t, ",_' \t\n\r\u00a0\u202f"):
		return "decimal.separator", ""
	}
	first := func(c string) {
		if code == "" {
			code = c
		}
	}
	if t != s {
		first("decimal.space")
	}
	if rest, ok := strings.CutPrefix(t, "+"); ok && !strings.HasPrefix(rest, "-") {
		first("decimal.plus")
		t = rest
	}
	if strings.ContainsAny(t, "eE") && isJSONNumber(t) {
		var d apd.Decimal
		if _, _, err := d.SetString(t); err == nil && d.Form == apd.Finite {
			first("decimal.exponent")
			t = d.Text('f')
		}
	}
	digits, neg := strings.CutPrefix(t, "-")
	if strings.HasPrefix(digits, ".") {
		first("decimal.point")
		digits = "0" + digits
	}
	if rest, ok := strings.CutSuffix(digits, "."); ok {
		first("decimal.point")
		digits = rest
	}
	if trimmed := strings.TrimLeft(digits, "0"); len(digits) > 1 && digits[0] == '0' && digits[1] != '.' {
		first("decimal.leading_zero")
		if trimmed == "" || trimmed[0] == '.' {
			trimmed = "0" + trimmed
		}
		digits = trimmed
	}
	if neg {
		t = "-" + digits
	} else {
		t = digits
	}
	if code == "" || !decimalRE.MatchString(t) {
		return "decimal.syntax", ""
	}
	return code, t
}
