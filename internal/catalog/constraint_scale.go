package catalog

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// MaxScale bounds a decimal's declared scale.
const MaxScale = 30

// scaleConstraint is scale: the most decimal places a decimal may have
// (trailing zeros do not count: 12.50 has one).
type scaleConstraint struct{}

func init() { Register(scaleConstraint{}) }

// Key is scale.
func (scaleConstraint) Key() string { return "scale" }

// Rule is scale.
func (scaleConstraint) Rule() string { return "scale" }

// Order is 50.
func (scaleConstraint) Order() int { return 50 }

// Types are decimal and integer (an integer is refused by name).
func (scaleConstraint) Types() []FieldType { return numeric }

// Decode reads a whole number.
func (scaleConstraint) Decode(n *yaml.Node) (any, bool, error) {
	places, err := decodeAs[int]("scale", n)
	return places, err == nil, err
}

// Scale returns the most decimal places f allows by scale, and whether it
// declares scale.
func (f *Field) Scale() (int, bool) {
	return ValueOf[int](f, scaleConstraint{}), f.Declares(scaleConstraint{})
}

// CheckDeclaration refuses a scale on an integer and one out of range.
func (scaleConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	places, _ := f.Scale()
	switch {
	case f.Declares(scaleFromConstraint{}):
		return nil // scale_from reports both
	case f.Type == TypeInteger:
		return []string{"scale applies to decimal fields only (an integer has none)"}
	case places < 0 || places > MaxScale:
		return []string{fmt.Sprintf("scale %d must be between 0 and %d", places, MaxScale)}
	}
	return nil
}

// Check refuses more decimal places than scale.
func (c scaleConstraint) Check(f *Field, v Value) []Problem {
	places, _ := f.Scale()
	if v.Places() <= places {
		return nil
	}
	limit := strconv.Itoa(places)
	return []Problem{{Rule: c.Rule(), Code: "scale", Expected: "scale <= " + limit, Args: []string{"got", strconv.Itoa(v.Places()), "limit", limit}}}
}

// Describe says how many decimal places.
func (scaleConstraint) Describe(f *Field) Description {
	places, _ := f.Scale()
	return Description{Sentence: fmt.Sprintf("At most %d decimal places.", places)}
}

// Texts are scale's.
func (scaleConstraint) Texts() map[string]string {
	return map[string]string{"scale": "has {{.got}} decimal {{if eq .got \"1\"}}place{{else}}places{{end}}; {{if eq .limit \"0\"}}no decimal places are{{else if eq .limit \"1\"}}at most 1 is{{else}}at most {{.limit}} are{{end}} allowed"}
}
