package catalog

// exclusiveMaxConstraint is exclusive_max: a value a number must be less than.
type exclusiveMaxConstraint struct{}

// Key is exclusive_max.
func (exclusiveMaxConstraint) Key() string { return "exclusive_max" }

// Rule is exclusive_max.
func (exclusiveMaxConstraint) Rule() string { return "exclusive_max" }

// Types are decimal and integer.
func (exclusiveMaxConstraint) Types() []FieldType { return numeric }

// Declared reports whether f sets exclusive_max.
func (exclusiveMaxConstraint) Declared(f *Field) bool { return f.ExclusiveMax != nil }

// CheckDeclaration refuses max beside it.
func (exclusiveMaxConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.Max != nil {
		return []string{"set max or exclusive_max, not both"}
	}
	return nil
}

// Check refuses a number not less than exclusive_max.
func (c exclusiveMaxConstraint) Check(f *Field, v Value) []Problem {
	if v.Number.Cmp(f.ExclusiveMax.Apd()) < 0 {
		return nil
	}
	hi := f.ExclusiveMax.String()
	return []Problem{{Rule: c.Rule(), Code: "exclusive_max", Expected: "< " + hi, Args: []string{"limit", hi, "value", v.Number.Text('f')}}}
}

// Describe says "less than exclusive_max".
func (exclusiveMaxConstraint) Describe(f *Field) Description {
	return Description{Bound: "less than " + f.ExclusiveMax.String()}
}

// Texts are exclusive_max's.
func (exclusiveMaxConstraint) Texts() map[string]string {
	return map[string]string{"exclusive_max": "must be less than {{.limit}}, not {{.value}}"}
}
