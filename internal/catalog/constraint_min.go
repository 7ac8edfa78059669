package catalog

import "gopkg.in/yaml.v3"

// minConstraint is min: the smallest allowed value of a number (inclusive).
type minConstraint struct{}

func init() { Register(minConstraint{}) }

// Key is min.
func (minConstraint) Key() string { return "min" }

// Rule is min.
func (minConstraint) Rule() string { return "min" }

// Order is 10.
func (minConstraint) Order() int { return 10 }

// Types are decimal and integer.
func (minConstraint) Types() []FieldType { return numeric }

// Decode reads an exact decimal.
func (minConstraint) Decode(n *yaml.Node) (any, bool, error) { return decodeBound("min", n) }

// CheckDeclaration refuses an empty range with the upper bound.
func (minConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.Declares(exclusiveMinBound) {
		return nil // exclusive_min reports both
	}
	return checkRange(f)
}

// Check refuses a number below min.
func (c minConstraint) Check(f *Field, v Value) []Problem {
	lo := ValueOf[*Decimal](f, minBound)
	if v.Number.Cmp(lo.Apd()) >= 0 {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "min", Expected: ">= " + lo.String(), Args: []string{"limit", lo.String(), "value", v.Number.Text('f')}}}
}

// Describe says "at least min".
func (minConstraint) Describe(f *Field) Description {
	return Description{Bound: "at least " + ValueOf[*Decimal](f, minBound).String()}
}

// Texts are min's.
func (minConstraint) Texts() map[string]string {
	return map[string]string{"min": "must be at least {{.limit}}, not {{.value}}"}
}
