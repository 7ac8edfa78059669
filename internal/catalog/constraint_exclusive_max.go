package catalog

import "gopkg.in/yaml.v3"

// exclusiveMaxConstraint is exclusive_max: a value a number must be less than.
type exclusiveMaxConstraint struct{}

func init() { Register(exclusiveMaxConstraint{}) }

// Key is exclusive_max.
func (exclusiveMaxConstraint) Key() string { return "exclusive_max" }

// Rule is exclusive_max.
func (exclusiveMaxConstraint) Rule() string { return "exclusive_max" }

// Order is 40.
func (exclusiveMaxConstraint) Order() int { return 40 }

// Types are decimal and integer.
func (exclusiveMaxConstraint) Types() []FieldType { return numeric }

// Decode reads an exact decimal.
func (exclusiveMaxConstraint) Decode(n *yaml.Node) (any, bool, error) {
	return decodeBound("exclusive_max", n)
}

// CheckDeclaration refuses max beside it.
func (exclusiveMaxConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.Declares(maxBound) {
		return []string{"set max or exclusive_max, not both"}
	}
	return nil
}

// Check refuses a number not less than exclusive_max.
func (c exclusiveMaxConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(ValueOf[*Decimal](f, exclusiveMaxBound).Apd()) < 0 {
		return nil
	}
	hi := ValueOf[*Decimal](f, exclusiveMaxBound).String()
	return []Problem{{Rule: c.Rule(), Code: "exclusive_max", Expected: "< " + hi, Args: []string{"limit", hi, "value", v.Number.Text('f')}}}
}

// Describe says "less than exclusive_max".
func (exclusiveMaxConstraint) Describe(f *Field) Description {
	return Description{Bound: "less than " + ValueOf[*Decimal](f, exclusiveMaxBound).String()}
}

// Texts are exclusive_max's.
func (exclusiveMaxConstraint) Texts() map[string]string {
	return map[string]string{"exclusive_max": "must be less than {{.limit}}, not {{.value}}"}
}
