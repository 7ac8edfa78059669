package catalog

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// scaleFromConstraint is scale_from: a bound currency field whose ISO 4217
// minor units are the most decimal places a decimal may have (2 for USD,
// 0 for JPY).
type scaleFromConstraint struct{}

func init() { Register(scaleFromConstraint{}) }

// Key is scale_from.
func (scaleFromConstraint) Key() string { return "scale_from" }

// Rule is scale.
func (scaleFromConstraint) Rule() string { return "scale" }

// Order is 60.
func (scaleFromConstraint) Order() int { return 60 }

// Types are decimal and integer (an integer is refused by name).
func (scaleFromConstraint) Types() []FieldType { return numeric }

// Decode reads a field name; an empty one declares nothing.
func (scaleFromConstraint) Decode(n *yaml.Node) (any, bool, error) {
	name, err := decodeAs[string]("scale_from", n)
	return name, err == nil && name != "", err
}

// ScaleFrom returns the bound currency field whose minor units bound f's
// decimal places, or "" when f does not declare scale_from.
func (f *Field) ScaleFrom() string { return ValueOf[string](f, scaleFromConstraint{}) }

// CheckDeclaration requires another bound field of kind currency, and
// refuses scale beside it and an integer.
func (scaleFromConstraint) CheckDeclaration(name string, f *Field, bind map[string]Field) []string {
	if f.Declares(scaleConstraint{}) {
		return []string{"set scale or scale_from, not both"}
	}
	if f.Type == TypeInteger {
		return []string{"scale_from applies to decimal fields only (an integer has no decimal places)"}
	}
	from := f.ScaleFrom()
	src, ok := bind[from]
	switch {
	case from == name:
		return []string{fmt.Sprintf("scale_from must name another field, not %s itself", name)}
	case !ok:
		return []string{fmt.Sprintf("scale_from %q is not a bound field (the currency field must be bound, so that its value is sealed with the amount)", from)}
	case src.Type != TypeString || !src.IsCurrency():
		return []string{fmt.Sprintf("scale_from %q must name a string field of kind currency, not a %s field%s", from, src.Type, kindSuffix(&src))}
	}
	return nil
}

// kindSuffix says which kind f declares, if any.
func kindSuffix(f *Field) string {
	for _, c := range ofKey(kindKey) {
		if f.Declares(c) {
			return " of kind " + c.Rule()
		}
	}
	return " without a kind"
}

// Check refuses more decimal places than the currency's minor units; a
// currency the field's own check refuses leaves it unchecked.
func (c scaleFromConstraint) Check(f *Field, v Value) []Problem {
	code, _ := v.Bound[f.ScaleFrom()].(string)
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
	return Description{Sentence: fmt.Sprintf("At most as many decimal places as the currency in %s allows (its ISO 4217 minor units: 2 for USD, 0 for JPY, 3 for BHD).", f.ScaleFrom())}
}

// Texts are scale_from's.
func (scaleFromConstraint) Texts() map[string]string {
	return map[string]string{"scale.currency": "has {{.got}} decimal {{if eq .got \"1\"}}place{{else}}places{{end}}; {{.currency}} allows {{if eq .limit \"0\"}}no decimal places{{else if eq .limit \"1\"}}at most 1{{else}}at most {{.limit}}{{end}}"}
}
