package catalog

import (
	"fmt"
	"strconv"
)

// MaxScale bounds a decimal's declared scale.
const MaxScale = 30

// scaleConstraint is scale: the most decimal places a decimal may have
// (trailing zeros do not count: 12.50 has one).
type scaleConstraint struct{}

// Key is scale.
func (scaleConstraint) Key() string { return "scale" }

// Rule is scale.
func (scaleConstraint) Rule() string { return "scale" }

// Types are decimal and integer (an integer is refused by name).
func (scaleConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets scale.
func (scaleConstraint) Declared(f *Field) bool { return f.Scale != nil }

// CheckDeclaration refuses a scale on an integer and one out of range.
func (scaleConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	switch {
	case f.ScaleFrom != "":
		return nil // scale_from reports both
	case f.Type == TypeInteger:
		return []string{"scale applies to decimal fields only (an integer has none)"}
	case *f.Scale < 0 || *f.Scale > MaxScale:
		return []string{fmt.Sprintf("scale %d must be between 0 and %d", *f.Scale, MaxScale)}
	}
	return nil
}

// Check refuses more decimal places than scale.
func (c scaleConstraint) Check(f *Field, v Value) []Problem {
	if v.Places() <= *f.Scale {
		return nil
	}
	limit := strconv.Itoa(*f.Scale)
	return []Problem{{Rule: c.Rule(), Code: "scale", Expected: "scale <= " + limit, Args: []string{"got", strconv.Itoa(v.Places()), "limit", limit}}}
}

// Describe says how many decimal places.
func (scaleConstraint) Describe(f *Field) Description {
	return Description{Sentence: fmt.Sprintf("At most %d decimal places.", *f.Scale)}
}

// Texts are scale's.
func (scaleConstraint) Texts() map[string]string {
	return map[string]string{"scale": "has {{.got}} decimal {{if eq .got \"1\"}}place{{else}}places{{end}}; {{if eq .limit \"0\"}}no decimal places are{{else if eq .limit \"1\"}}at most 1 is{{else}}at most {{.limit}} are{{end}} allowed"}
}
