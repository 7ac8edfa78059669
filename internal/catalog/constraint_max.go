package catalog

// maxConstraint is max: the largest allowed value of a number (inclusive).
type maxConstraint struct{}

// Key is max.
func (maxConstraint) Key() string { return "max" }

// Rule is max.
func (maxConstraint) Rule() string { return "max" }

// Types are decimal and integer.
func (maxConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets max.
func (maxConstraint) Declared(f *Field) bool { return f.Max != nil }

// CheckDeclaration refuses nothing of its own (the lower bound reports an
// empty range).
func (maxConstraint) CheckDeclaration(string, *Field, map[string]Field) []string { return nil }

// Check refuses a number above max.
func (c maxConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(f.Max.Apd()) <= 0 {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "max", Expected: "<= " + f.Max.String(), Args: []string{"limit", f.Max.String(), "value", v.Number.Text('f')}}}
}

// Describe says "at most max".
func (maxConstraint) Describe(f *Field) Description {
	return Description{Bound: "at most " + f.Max.String()}
}

// Texts are max's.
func (maxConstraint) Texts() map[string]string {
	return map[string]string{"max": "must be at most {{.limit}}, not {{.value}}"}
}
