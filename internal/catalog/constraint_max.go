package catalog

import "gopkg.in/yaml.v3"

// maxConstraint is max: the largest allowed value of a number (inclusive).
type maxConstraint struct{}

func init() { Register(maxConstraint{}) }

// Key is max.
func (maxConstraint) Key() string { return "max" }

// Rule is max.
func (maxConstraint) Rule() string { return "max" }

// Order is 30.
func (maxConstraint) Order() int { return 30 }

// Types are decimal and integer.
func (maxConstraint) Types() []FieldType { return numeric }

// Decode reads an exact decimal.
func (maxConstraint) Decode(n *yaml.Node) (any, bool, error) { return decodeBound("max", n) }

// CheckDeclaration refuses nothing of its own (the lower bound reports an
// empty range).
func (maxConstraint) CheckDeclaration(string, *Field, map[string]Field) []string { return nil }

// Check refuses a number above max.
func (c maxConstraint) Check(f *Field, v Value) []Problem {
	hi := ValueOf[*Decimal](f, maxBound)
	if v.Number.Cmp(hi.Apd()) <= 0 {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "max", Expected: "<= " + hi.String(), Args: []string{"limit", hi.String(), "value", v.Number.Text('f')}}}
}

// Describe says "at most max".
func (maxConstraint) Describe(f *Field) Description {
	return Description{Bound: "at most " + ValueOf[*Decimal](f, maxBound).String()}
}

// Texts are max's.
func (maxConstraint) Texts() map[string]string {
	return map[string]string{"max": "must be at most {{.limit}}, not {{.value}}"}
}
