package catalog

import (
	"fmt"
	"regexp"
)

// patternConstraint is pattern: a regular expression (RE2 syntax,
// unanchored as in JSON Schema) a string must match.
type patternConstraint struct{}

// Key is pattern.
func (patternConstraint) Key() string { return "pattern" }

// Rule is pattern.
func (patternConstraint) Rule() string { return "pattern" }

// Types is string.
func (patternConstraint) Types() []FieldType { return text }

// Declared reports whether f sets a pattern.
func (patternConstraint) Declared(f *Field) bool { return f.Pattern != "" }

// CheckDeclaration compiles the pattern and keeps it in f.
func (patternConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	re, err := regexp.Compile(f.Pattern)
	if err != nil {
		return []string{fmt.Sprintf("pattern %q is not a valid regular expression: %v", f.Pattern, err)}
	}
	f.pattern = re
	return nil
}

// Check refuses a string the pattern does not match (and reports a pattern
// that does not compile, of a Field not built by the catalog loader).
func (c patternConstraint) Check(f *Field, v Value) []Problem {
	re := f.pattern
	if re == nil {
		var err error
		if re, err = regexp.Compile(f.Pattern); err != nil {
			return []Problem{{Rule: "catalog", Code: "catalog.pattern", Args: []string{"pattern", f.Pattern}}}
		}
	}
	if re.MatchString(v.Text) {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "pattern", Expected: f.Pattern, Args: []string{"pattern", f.Pattern}}}
}

// Describe gives the pattern.
func (patternConstraint) Describe(f *Field) Description {
	return Description{Keywords: map[string]any{"pattern": f.Pattern}}
}

// Texts are pattern's.
func (patternConstraint) Texts() map[string]string {
	return map[string]string{
		"pattern":         "does not match the pattern {{.pattern}}",
		"catalog.pattern": "the catalog's pattern {{.pattern}} is not a valid regular expression",
	}
}
