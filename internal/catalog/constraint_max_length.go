package catalog

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxLengthConstraint is max_length: the most characters (Unicode code
// points, as JSON Schema's maxLength counts them) a string may have.
type maxLengthConstraint struct{}

func init() { Register(maxLengthConstraint{}) }

// Key is max_length.
func (maxLengthConstraint) Key() string { return "max_length" }

// Rule is max_length.
func (maxLengthConstraint) Rule() string { return "max_length" }

// Order is 110.
func (maxLengthConstraint) Order() int { return 110 }

// Types is string.
func (maxLengthConstraint) Types() []FieldType { return text }

// Decode reads a whole number; 0 declares nothing (no limit).
func (maxLengthConstraint) Decode(n *yaml.Node) (any, bool, error) {
	limit, err := decodeAs[int]("max_length", n)
	return limit, err == nil && limit != 0, err
}

// MaxLength returns the most characters f may have, or 0 for no limit.
func (f *Field) MaxLength() int { return ValueOf[int](f, maxLengthConstraint{}) }

// CheckDeclaration refuses a negative length.
func (maxLengthConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.MaxLength() < 0 {
		return []string{fmt.Sprintf("max_length %d must be >= 1 (leave it out for no limit)", f.MaxLength())}
	}
	return nil
}

// Check refuses a longer string.
func (maxLengthConstraint) Check(f *Field, v Value) []Problem {
	if p := CheckMaxLength(f.MaxLength(), v.Text); p != nil {
		return []Problem{*p}
	}
	return nil
}

// CheckMaxLength refuses a string of more than limit characters; limit 0
// is no limit. Free fields, which declare no other constraint, use it too.
func CheckMaxLength(limit int, s string) *Problem {
	if limit <= 0 {
		return nil
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return nil
	}
	l := strconv.Itoa(limit)
	return &Problem{Rule: maxLengthConstraint{}.Rule(), Code: "max_length", Expected: "length <= " + l, Args: []string{"got", strconv.Itoa(n), "limit", l}}
}

// Describe gives maxLength and says it.
func (maxLengthConstraint) Describe(f *Field) Description {
	return Description{Keywords: map[string]any{"maxLength": f.MaxLength()}, Sentence: fmt.Sprintf("At most %d characters.", f.MaxLength())}
}

// Texts are max_length's.
func (maxLengthConstraint) Texts() map[string]string {
	return map[string]string{"max_length": "is {{.got}} characters long; at most {{.limit}} are allowed"}
}
