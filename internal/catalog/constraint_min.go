package catalog

// minConstraint is min: the smallest allowed value of a number (inclusive).
type minConstraint struct{}

// Key is min.
func (minConstraint) Key() string { return "min" }

// Rule is min.
func (minConstraint) Rule() string { return "min" }

// Types are decimal and integer.
func (minConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets min.
func (minConstraint) Declared(f *Field) bool { return f.Min != nil }

// CheckDeclaration refuses an empty range with the upper bound.
func (minConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.ExclusiveMin != nil {
		return nil // exclusive_min reports both
	}
	return checkRange(f)
}

// Check refuses a number below min.
func (c minConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(f.Min.Apd()) >= 0 {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "min", Expected: ">= " + f.Min.String(), Args: []string{"limit", f.Min.String(), "value", v.Number.Text('f')}}}
}

// Describe says "at least min".
func (minConstraint) Describe(f *Field) Description {
	return Description{Bound: "at least " + f.Min.String()}
}

// Texts are min's.
func (minConstraint) Texts() map[string]string {
	return map[string]string{"min": "must be at least {{.limit}}, not {{.value}}"}
}
