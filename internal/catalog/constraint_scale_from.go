package catalog

import (
	"fmt"
	"strconv"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// scaleFromConstraint is scale_from: a bound currency field whose ISO 4217
// minor units are the most decimal places a decimal may have (2 for USD,
// 0 for JPY).
type scaleFromConstraint struct{}

// Key is scale_from.
func (scaleFromConstraint) Key() string { return "scale_from" }

// Rule is scale.
func (scaleFromConstraint) Rule() string { return "scale" }

// Types are decimal and integer (an integer is refused by name).
func (scaleFromConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets scale_from.
func (scaleFromConstraint) Declared(f *Field) bool { return f.ScaleFrom != "" }

// CheckDeclaration requires another bound field of kind currency, and
// refuses scale beside it and an integer.
func (scaleFromConstraint) CheckDeclaration(name string, f *Field, bind map[string]Field) []string {
	if f.Scale != nil {
		return []string{"set scale or scale_from, not both"}
	}
	if f.Type == TypeInteger {
		return []string{"scale_from applies to decimal fields only (an integer has no decimal places)"}
	}
	src, ok := bind[f.ScaleFrom]
	switch {
	case f.ScaleFrom == name:
		return []string{fmt.Sprintf("scale_from must name another field, not %s itself", name)}
	case !ok:
		return []string{fmt.Sprintf("scale_from %q is not a bound field (the currency field must be bound, so that its value is sealed with the amount)", f.ScaleFrom)}
	case src.Type != TypeString || src.Kind != KindCurrency:
		return []string{fmt.Sprintf("scale_from %q must name a string field of kind currency, not a %s field%s", f.ScaleFrom, src.Type, kindSuffix(src.Kind))}
	}
	return nil
}

func kindSuffix(k StringKind) string {
	if k == "" {
		return " without a kind"
	}
	return " of kind " + string(k)
}

// Check refuses more decimal places than the currency's minor units; a
// currency the field's own check refuses leaves it unchecked.
func (c scaleFromConstraint) Check(f *Field, v Value) []Problem {
	code, _ := v.Bound[f.ScaleFrom].(string)
	cur, err := iso4217.Lookup(code)
	if err != nil || v.Places() <= cur.Scale {
		return nil
	}
	limit := strconv.Itoa(cur.Scale)
	return []Problem{{Rule: c.Rule(), Code: "scale.currency", Expected: "scale <= " + limit + " (" + cur.Code + ")",
		Args: []string{"got", strconv.Itoa(v.Places()), "limit", limit, "currency", cur.Code}}}
}

// Describe says the currency's minor units bound the decimal places.
func (scaleFromConstraint) Describe(f *Field) Description {
	return Description{Sentence: fmt.Sprintf("At most as many decimal places as the currency in %s allows (its ISO 4217 minor units: 2 for USD, 0 for JPY, 3 for BHD).", f.ScaleFrom)}
}

// Texts are scale_from's.
func (scaleFromConstraint) Texts() map[string]string {
	return map[string]string{"scale.currency": "has {{.got}} decimal {{if eq .got \"1\"}}place{{else}}places{{end}}; {{.currency}} allows {{if eq .limit \"0\"}}no decimal places{{else if eq .limit \"1\"}}at most 1{{else}}at most {{.limit}}{{end}}"}
}
