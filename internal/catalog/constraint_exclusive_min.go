package catalog

// exclusiveMinConstraint is exclusive_min: a value a number must be greater than.
type exclusiveMinConstraint struct{}

// Key is exclusive_min.
func (exclusiveMinConstraint) Key() string { return "exclusive_min" }

// Rule is exclusive_min.
func (exclusiveMinConstraint) Rule() string { return "exclusive_min" }

// Types are decimal and integer.
func (exclusiveMinConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets exclusive_min.
func (exclusiveMinConstraint) Declared(f *Field) bool { return f.ExclusiveMin != nil }

// CheckDeclaration refuses min beside it, and an empty range.
func (exclusiveMinConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.Min != nil {
		return []string{"set min or exclusive_min, not both"}
	}
	return checkRange(f)
}

// Check refuses a number not greater than exclusive_min.
func (c exclusiveMinConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(f.ExclusiveMin.Apd()) > 0 {
		return nil
	}
	lo := f.ExclusiveMin.String()
	return []Problem{{Rule: c.Rule(), Code: "exclusive_min", Expected: "> " + lo, Args: []string{"limit", lo, "value", v.Number.Text('f')}}}
}

// Describe says "greater than exclusive_min".
func (exclusiveMinConstraint) Describe(f *Field) Description {
	return Description{Bound: "greater than " + f.ExclusiveMin.String()}
}

// Texts are exclusive_min's.
func (exclusiveMinConstraint) Texts() map[string]string {
	return map[string]string{"exclusive_min": "must be greater than {{.limit}}, not {{.value}}"}
}
