package catalog

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxLengthConstraint is max_length: the most characters (Unicode code
// points, as JSON Schema's maxLength counts them) a string may have.
type maxLengthConstraint struct{}

// Key is max_length.
func (maxLengthConstraint) Key() string { return "max_length" }

// Rule is max_length.
func (maxLengthConstraint) Rule() string { return "max_length" }

// Types is string.
func (maxLengthConstraint) Types() []FieldType { return text }

// Declared reports whether f sets max_length (0 is no limit).
func (maxLengthConstraint) Declared(f *Field) bool { return f.MaxLength != 0 }

// CheckDeclaration refuses a negative length.
func (maxLengthConstraint) CheckDeclaration(_ string, f *Field, _ map[string]Field) []string {
	if f.MaxLength < 0 {
		return []string{fmt.Sprintf("max_length %d must be >= 1 (leave it out for no limit)", f.MaxLength)}
	}
	return nil
}

// Check refuses a longer string.
func (maxLengthConstraint) Check(f *Field, v Value) []Problem {
	if p := CheckMaxLength(f.MaxLength, v.Text); p != nil {
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
	return Description{Keywords: map[string]any{"maxLength": f.MaxLength}, Sentence: fmt.Sprintf("At most %d characters.", f.MaxLength)}
}

// Texts are max_length's.
func (maxLengthConstraint) Texts() map[string]string {
	return map[string]string{"max_length": "is {{.got}} characters long; at most {{.limit}} are allowed"}
}
