package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// enumConstraint is enum: the only values a string may take.
type enumConstraint struct{}

// Key is enum.
func (enumConstraint) Key() string { return "enum" }

// Rule is enum.
func (enumConstraint) Rule() string { return "enum" }

// Types is string.
func (enumConstraint) Types() []FieldType { return text }

// Declared reports whether f lists values (an empty list too, refused).
func (enumConstraint) Declared(f *Field) bool { return f.Enum != nil }

// CheckDeclaration refuses an empty list, empty and repeated values, and
// values that can never match: changed by the normalizers, longer than
// max_length, or outside the pattern (compiled before).
func (enumConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	var out []string
	if len(f.Enum) == 0 {
		out = append(out, "enum is empty: list at least one value, or leave it out")
	}
	seen := map[string]bool{}
	for _, v := range f.Enum {
		switch {
		case v == "":
			out = append(out, "enum holds an empty value")
		case seen[v]:
			out = append(out, fmt.Sprintf("enum lists %q twice", v))
		case !normalizedAlready(v, f.Normalize):
			out = append(out, fmt.Sprintf("enum value %q can never match: values are compared after the normalizers %s", v, strings.Join(f.Normalize, ", ")))
		case f.MaxLength > 0 && len([]rune(v)) > f.MaxLength:
			out = append(out, fmt.Sprintf("enum value %q is longer than max_length %d", v, f.MaxLength))
		case f.pattern != nil && !f.pattern.MatchString(v):
			out = append(out, fmt.Sprintf("enum value %q does not match pattern %q", v, f.Pattern))
		}
		seen[v] = true
	}
	return out
}

// Check refuses a value the list does not hold.
func (c enumConstraint) Check(f *Field, v Value) []Problem {
	if len(f.Enum) == 0 || slices.Contains(f.Enum, v.Text) {
		return nil
	}
	values := strings.Join(f.Enum, ", ")
	return []Problem{{Rule: c.Rule(), Code: "enum", Expected: "one of " + values, Args: []string{"values", values, "value", Quoted(v.Text)}}}
}

// Describe lists the values.
func (enumConstraint) Describe(f *Field) Description {
	if len(f.Enum) == 0 {
		return Description{}
	}
	return Description{Keywords: map[string]any{"enum": slices.Clone(f.Enum)}}
}

// Texts are enum's.
func (enumConstraint) Texts() map[string]string {
	return map[string]string{"enum": "must be one of {{.values}}, not {{.value}}"}
}
