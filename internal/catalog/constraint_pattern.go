package catalog

import (
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// patternConstraint is pattern: a regular expression (RE2 syntax,
// unanchored as in JSON Schema) a string must match.
type patternConstraint struct{}

func init() { Register(patternConstraint{}) }

// Key is pattern.
func (patternConstraint) Key() string { return "pattern" }

// Rule is pattern.
func (patternConstraint) Rule() string { return "pattern" }

// Order is 90.
func (patternConstraint) Order() int { return 90 }

// Types is string.
func (patternConstraint) Types() []FieldType { return text }

// Decode compiles the pattern; an empty one declares nothing.
func (patternConstraint) Decode(n *yaml.Node) (any, bool, error) {
	src, err := decodeAs[string]("pattern", n)
	if err != nil || src == "" {
		return nil, false, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, false, fmt.Errorf("pattern %q is not a valid regular expression: %v", src, err)
	}
	return re, true, nil
}

// CheckDeclaration refuses nothing: Decode compiled the pattern.
func (patternConstraint) CheckDeclaration(string, *Field, map[string]Field) []string { return nil }

// Pattern returns the compiled pattern of f, or nil when it declares none.
func (f *Field) Pattern() *regexp.Regexp { return ValueOf[*regexp.Regexp](f, patternConstraint{}) }

// Check refuses a string the pattern does not match.
func (c patternConstraint) Check(f *Field, v Value) []Problem {
	re := f.Pattern()
	if re.MatchString(v.Text) {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "pattern", Expected: re.String(), Args: []string{"pattern", re.String()}}}
}

// Describe gives the pattern.
func (patternConstraint) Describe(f *Field) Description {
	return Description{Keywords: map[string]any{"pattern": f.Pattern().String()}}
}

// Texts are pattern's.
func (patternConstraint) Texts() map[string]string {
	return map[string]string{"pattern": "does not match the pattern {{.pattern}}"}
}
