package tools

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
	"github.com/oncegate/oncegate/internal/params"
)

// numberShape is what a decimal or integer string may look like, derived
// from the field's constraints.
type numberShape struct {
	// sign is "positive", "nonnegative" or "any".
	sign string
	// scale is the most decimal places; -1 for no limit.
	scale int
	// intDigits is the most integer digits; -1 for no limit.
	intDigits int
}

// shapeOf derives the shape of a decimal or integer bound field.
func shapeOf(f catalog.Field) numberShape {
	sh := numberShape{sign: "any", scale: -1, intDigits: -1}
	lo, loEx := f.Lower()
	if lo != nil {
		switch c := lo.Apd().Sign(); {
		case c > 0, c == 0 && loEx:
			sh.sign = "positive"
		case c == 0:
			sh.sign = "nonnegative"
		}
	}
	places, scaled := f.Scale()
	switch {
	case f.Type == catalog.TypeInteger:
		sh.scale = 0
	case scaled:
		sh.scale = places
	case f.ScaleFrom() != "":
		sh.scale = iso4217.MaxScale()
	}
	hi, _ := f.Upper()
	if hi != nil && (sh.sign != "any" || lo != nil) {
		sh.intDigits = max(intDigits(hi.Apd()), 1)
		if sh.sign == "any" {
			sh.intDigits = max(sh.intDigits, intDigits(lo.Apd()))
		}
	}
	return sh
}

// intDigits returns the number of digits of the integer part of |d|.
func intDigits(d *apd.Decimal) int {
	text := strings.TrimPrefix(d.Text('f'), "-")
	whole, _, _ := strings.Cut(text, ".")
	return len(strings.TrimLeft(whole, "0"))
}

// pattern returns the anchored pattern of the shape: params.DecimalPattern
// (plain decimals only: no exponent, no plus sign, no leading zeros, the
// grammar the gateway parses decimal strings with) narrowed to the sign the
// lower bound allows, at most scale decimal places and intDigits integer
// digits.
func (sh numberShape) pattern() string {
	if sh == (numberShape{sign: "any", scale: -1, intDigits: -1}) {
		return params.DecimalPattern
	}
	rep := func(n int) string { // [0-9] repeated up to n times (-1: any)
		switch {
		case n < 0:
			return "[0-9]*"
		case n == 0:
			return ""
		case n == 1:
			return "[0-9]?"
		}
		return "[0-9]{0," + strconv.Itoa(n) + "}"
	}
	frac := ""
	switch {
	case sh.scale < 0:
		frac = `(\.[0-9]+)?`
	case sh.scale == 1:
		frac = `(\.[0-9])?`
	case sh.scale > 1:
		frac = `(\.[0-9]{1,` + strconv.Itoa(sh.scale) + `})?`
	}
	nonZeroInt := "[1-9]" + rep(sh.intDigits-1)
	if sh.intDigits < 0 {
		nonZeroInt = "[1-9][0-9]*"
	}
	if sh.sign != "positive" {
		sign := "-?"
		if sh.sign == "nonnegative" {
			sign = ""
		}
		return "^" + sign + "(0|" + nonZeroInt + ")" + frac + "$"
	}
	// Positive: a non-zero integer part, or 0 followed by a fraction with
	// a non-zero digit.
	var small []string
	switch {
	case sh.scale < 0:
		small = []string{"[0-9]*[1-9][0-9]*"}
	default:
		for zeros := 0; zeros < sh.scale; zeros++ {
			small = append(small, strings.Repeat("0", zeros)+"[1-9]"+rep(sh.scale-1-zeros))
		}
	}
	if len(small) == 0 {
		return "^" + nonZeroInt + "$"
	}
	return "^(" + nonZeroInt + frac + `|0\.(` + strings.Join(small, "|") + "))$"
}

// numberSchema is the schema of a decimal or integer bound field: a string
// with the pattern of its shape, and a description of its bounds.
func numberSchema(f catalog.Field) map[string]any {
	what := "An exact decimal"
	example := `"12.50"`
	if f.Type == catalog.TypeInteger {
		what, example = "An exact integer", `"12"`
	}
	desc := sentence(f.Description) + what + " written as a JSON string such as " + example +
		"; it is never rounded (a JSON number is accepted too, but a string keeps every digit)."
	if b := boundsText(f); b != "" {
		desc += " " + b
	}
	return map[string]any{"type": "string", "pattern": shapeOf(f).pattern(), "description": desc}
}

// boundsText describes the constraints of a decimal or integer: their
// bounds in one "Must be …" sentence, then their sentences
// (catalog.Constraint.Describe).
func boundsText(f catalog.Field) string {
	var bounds, sentences []string
	for _, d := range described(f) {
		if d.Bound != "" {
			bounds = append(bounds, d.Bound)
		}
		if d.Sentence != "" {
			sentences = append(sentences, d.Sentence)
		}
	}
	if len(bounds) > 0 {
		sentences = append([]string{"Must be " + strings.Join(bounds, " and ") + "."}, sentences...)
	}
	return strings.Join(sentences, " ")
}

// stringSchema is the schema of a string bound field: the keywords and
// sentences of its constraints.
func stringSchema(f catalog.Field) map[string]any {
	s := map[string]any{"type": "string"}
	desc := strings.TrimSpace(f.Description)
	for _, d := range described(f) {
		maps.Copy(s, d.Keywords)
		if d.Sentence != "" {
			desc = sentence(desc) + d.Sentence
		}
	}
	s["description"] = desc
	return s
}

// described returns what each constraint f declares adds to its schema,
// in the constraints' order.
func described(f catalog.Field) []catalog.Description {
	var out []catalog.Description
	for _, c := range catalog.Constraints() {
		if f.Declares(c) && slices.Contains(c.Types(), f.Type) {
			out = append(out, c.Describe(&f))
		}
	}
	return out
}

// freeTypeSchema is the schema of a free field.
func freeTypeSchema(f catalog.FreeField) map[string]any {
	switch f.Type {
	case catalog.TypeDecimal, catalog.TypeInteger:
		return numberSchema(catalog.Field{Type: f.Type, Description: f.Description})
	case catalog.TypeBoolean:
		return map[string]any{"type": "boolean", "description": strings.TrimSpace(f.Description)}
	case catalog.TypeString:
	}
	s := map[string]any{"type": "string", "description": strings.TrimSpace(f.Description)}
	if f.MaxLength > 0 {
		s["maxLength"] = f.MaxLength
		s["description"] = sentence(f.Description) + fmt.Sprintf("At most %d characters.", f.MaxLength)
	}
	return s
}
