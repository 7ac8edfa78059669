package catalog

import "gopkg.in/yaml.v3"

// exclusiveMinConstraint is exclusive_min: a value a number must be greater than.
type exclusiveMinConstraint struct{}

func init() { Register(exclusiveMinConstraint{}) }

// Key is exclusive_min.
func (exclusiveMinConstraint) Key() string { return "exclusive_min" }

// Rule is exclusive_min.
func (exclusiveMinConstraint) Rule() string { return "exclusive_min" }

// Order is 20.
func (exclusiveMinConstraint) Order() int { return 20 }

// Types are decimal and integer.
func (exclusiveMinConstraint) Types() []FieldType { return numeric }

// Decode reads an exact decimal.
func (exclusiveMinConstraint) Decode(n *yaml.Node) (any, bool, error) {
	return decodeBound("exclusive_min", n)
}

// CheckDeclaration refuses min beside it, and an empty range.
func (exclusiveMinConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.Declares(minBound) {
		return []string{"set min or exclusive_min, not both"}
	}
	return checkRange(f)
}

// Check refuses a number not greater than exclusive_min.
func (c exclusiveMinConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(ValueOf[*Decimal](f, exclusiveMinBound).Apd()) > 0 {
		return nil
	}
	lo := ValueOf[*Decimal](f, exclusiveMinBound).String()
	return []Problem{{Rule: c.Rule(), Code: "exclusive_min", Expected: "> " + lo, Args: []string{"limit", lo, "value", v.Number.Text('f')}}}
}

// Describe says "greater than exclusive_min".
func (exclusiveMinConstraint) Describe(f *Field) Description {
	return Description{Bound: "greater than " + ValueOf[*Decimal](f, exclusiveMinBound).String()}
}

// Texts are exclusive_min's.
func (exclusiveMinConstraint) Texts() map[string]string {
	return map[string]string{"exclusive_min": "must be greater than {{.limit}}, not {{.value}}"}
}
