package catalog

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// enumConstraint is enum: the only values a string may take.
type enumConstraint struct{}

func init() { Register(enumConstraint{}) }

// Key is enum.
func (enumConstraint) Key() string { return "enum" }

// Rule is enum.
func (enumConstraint) Rule() string { return "enum" }

// Order is 100.
func (enumConstraint) Order() int { return 100 }

// Types is string.
func (enumConstraint) Types() []FieldType { return text }

// Decode reads a list of strings (an empty one too, refused).
func (enumConstraint) Decode(n *yaml.Node) (any, bool, error) {
	values, err := decodeAs[[]string]("enum", n)
	return values, err == nil, err
}

// CheckDeclaration refuses an empty list, empty and repeated values, and
// values that can never match: changed by the normalizers, longer than
// max_length, or outside the pattern (compiled before).
func (c enumConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	var out []string
	values := ValueOf[[]string](f, c)
	if len(values) == 0 {
		out = append(out, "enum is empty: list at least one value, or leave it out")
	}
	seen := map[string]bool{}
	for _, v := range values {
		switch {
		case v == "":
			out = append(out, "enum holds an empty value")
		case seen[v]:
			out = append(out, fmt.Sprintf("enum lists %q twice", v))
		case !normalizedAlready(v, f.Normalize):
			out = append(out, fmt.Sprintf("enum value %q can never match: values are compared after the normalizers %s", v, strings.Join(f.Normalize, ", ")))
		case f.MaxLength() > 0 && len([]rune(v)) > f.MaxLength():
			out = append(out, fmt.Sprintf("enum value %q is longer than max_length %d", v, f.MaxLength()))
		case f.Pattern() != nil && !f.Pattern().MatchString(v):
			out = append(out, fmt.Sprintf("enum value %q does not match pattern %q", v, f.Pattern()))
		}
		seen[v] = true
	}
	return out
}

// Check refuses a value the list does not hold.
func (c enumConstraint) Check(f *Field, v Value) []Problem {
	allowed := ValueOf[[]string](f, c)
	if len(allowed) == 0 || slices.Contains(allowed, v.Text) {
		return nil
	}
	values := strings.Join(allowed, ", ")
	return []Problem{{Rule: c.Rule(), Code: "enum", Expected: "one of " + values, Args: []string{"values", values, "value", Quoted(v.Text)}}}
}

// Describe lists the values.
func (c enumConstraint) Describe(f *Field) Description {
	values := ValueOf[[]string](f, c)
	if len(values) == 0 {
		return Description{}
	}
	return Description{Keywords: map[string]any{"enum": slices.Clone(values)}}
}

// Texts are enum's.
func (enumConstraint) Texts() map[string]string {
	return map[string]string{"enum": "must be one of {{.values}}, not {{.value}}"}
}
