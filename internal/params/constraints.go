package params

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/runenames"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
)

// maxNamedChars bounds the characters one identifier problem names.
const maxNamedChars = 5

// identifierProfile is PRECIS's IdentifierClass (RFC 8264) without any
// mapping: it refuses control, format (Cf), default-ignorable, space and
// compatibility characters such as the full-width forms, and applies the
// Bidi and contextual rules. It is only asked; values are never mapped.
var identifierProfile = precis.NewIdentifier()

// checkConstraints checks the constraints of bound field name on its
// normalized value (normalized holds every bound field that passed its type
// check, for scale_from). It returns nil when they all hold.
func checkConstraints(name string, bind map[string]catalog.Field, normalized map[string]any) []FieldProblem {
	f := bind[name]
	switch v := normalized[name].(type) {
	case json.Number:
		return checkNumber(name, f, v, normalized)
	case string:
		return checkString(name, f, v)
	}
	return nil
}

// checkNumber checks min, max, their exclusive variants and the scale.
func checkNumber(name string, f catalog.Field, n json.Number, normalized map[string]any) []FieldProblem {
	d, nerr := parseDecimal(string(n))
	if nerr != nil {
		return []FieldProblem{nerr.problem(name, RuleType)}
	}
	var out []FieldProblem
	value := d.Text('f')
	if lo, exclusive := f.Lower(); lo != nil {
		c := d.Cmp(lo.Apd())
		switch {
		case exclusive && c <= 0:
			out = append(out, newProblem(name, RuleExclusiveMin, "exclusive_min", "> "+lo.String(), "limit", lo.String(), "value", value))
		case !exclusive && c < 0:
			out = append(out, newProblem(name, RuleMin, "min", ">= "+lo.String(), "limit", lo.String(), "value", value))
		}
	}
	if hi, exclusive := f.Upper(); hi != nil {
		c := d.Cmp(hi.Apd())
		switch {
		case exclusive && c >= 0:
			out = append(out, newProblem(name, RuleExclusiveMax, "exclusive_max", "< "+hi.String(), "limit", hi.String(), "value", value))
		case !exclusive && c > 0:
			out = append(out, newProblem(name, RuleMax, "max", "<= "+hi.String(), "limit", hi.String(), "value", value))
		}
	}
	places := 0
	if d.Exponent < 0 {
		places = int(-d.Exponent) // d is reduced: no trailing zeros
	}
	switch {
	case f.Scale != nil && places > *f.Scale:
		limit := strconv.Itoa(*f.Scale)
		out = append(out, newProblem(name, RuleScale, "scale", "scale <= "+limit, "got", strconv.Itoa(places), "limit", limit))
	case f.ScaleFrom != "":
		code, _ := normalized[f.ScaleFrom].(string)
		cur, err := iso4217.Lookup(code)
		if err != nil {
			break // the currency field's own problem is reported
		}
		if places > cur.Scale {
			limit := strconv.Itoa(cur.Scale)
			out = append(out, newProblem(name, RuleScale, "scale.currency", "scale <= "+limit+" ("+cur.Code+")",
				"got", strconv.Itoa(places), "limit", limit, "currency", cur.Code))
		}
	}
	return out
}

// checkString checks max_length, kind, enum and pattern.
func checkString(name string, f catalog.Field, s string) []FieldProblem {
	var out []FieldProblem
	if p := checkMaxLength(name, f.MaxLength, s); p != nil {
		out = append(out, *p)
	}
	switch f.Kind {
	case catalog.KindCurrency:
		if _, err := iso4217.Lookup(s); err != nil {
			out = append(out, newProblem(name, RuleCurrency, "currency", "ISO 4217", "value", quoted(s)))
		}
	case catalog.KindIdentifier:
		if p := checkIdentifier(name, s); p != nil {
			out = append(out, *p)
		}
	}
	if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
		values := strings.Join(f.Enum, ", ")
		out = append(out, newProblem(name, RuleEnum, "enum", "one of "+values, "values", values, "value", quoted(s)))
	}
	if f.Pattern != "" {
		re := f.PatternRegexp()
		if re == nil { // a Field not built by the catalog loader
			var err error
			if re, err = regexp.Compile(f.Pattern); err != nil {
				return append(out, newProblem(name, RuleCatalog, "catalog.pattern", "", "pattern", f.Pattern))
			}
		}
		if !re.MatchString(s) {
			out = append(out, newProblem(name, RulePattern, "pattern", f.Pattern, "pattern", f.Pattern))
		}
	}
	return out
}

// checkMaxLength refuses a string of more than limit characters (code
// points, as JSON Schema's maxLength counts them); limit 0 is no limit.
func checkMaxLength(name string, limit int, s string) *FieldProblem {
	if limit <= 0 {
		return nil
	}
	if n := utf8.RuneCountInString(s); n > limit {
		l := strconv.Itoa(limit)
		p := newProblem(name, RuleMaxLength, "max_length", "length <= "+l, "got", strconv.Itoa(n), "limit", l)
		return &p
	}
	return nil
}

// checkIdentifier refuses s unless PRECIS's IdentifierClass accepts it, and
// names each offending character by code point, position (counted in
// characters from 1) and Unicode name. Nothing is stripped or mapped.
func checkIdentifier(name, s string) *FieldProblem {
	if s == "" {
		return nil // required fields are refused as empty on their own
	}
	if _, err := identifierProfile.String(s); err == nil {
		return nil
	}
	const expected = "PRECIS IdentifierClass (RFC 8264)"
	var named []string
	bad, pos := 0, 0
	for _, r := range s {
		pos++
		if _, err := identifierProfile.String(string(r)); err == nil {
			continue
		}
		bad++
		if bad <= maxNamedChars {
			named = append(named, describeRune(r)+" at position "+strconv.Itoa(pos))
		}
	}
	if bad == 0 { // every character is fine alone: a contextual or Bidi rule
		p := newProblem(name, RuleIdentifier, "identifier.context", expected)
		return &p
	}
	if bad > maxNamedChars {
		named = append(named, fmt.Sprintf("%d more", bad-maxNamedChars))
	}
	p := newProblem(name, RuleIdentifier, "identifier.chars", expected, "chars", strings.Join(named, ", "))
	return &p
}

// describeRune names r as "U+200B ZERO WIDTH SPACE"; characters without a
// name of their own get their general category, such as "U+0000 (control)".
func describeRune(r rune) string {
	code := fmt.Sprintf("%U", r)
	if n := runenames.Name(r); n != "" && !strings.HasPrefix(n, "<") {
		return code + " " + n
	}
	switch {
	case unicode.Is(unicode.Cc, r):
		return code + " (control)"
	case unicode.Is(unicode.Co, r):
		return code + " (private use)"
	case unicode.Is(unicode.Cs, r):
		return code + " (surrogate)"
	}
	return code + " (unassigned)"
}
