package catalog

import (
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Constraint is one constraint a bound field may declare in the catalog
// (min, max_length, kind: currency, ...): one type, one file. It checks
// its declaration when the catalog loads, checks a value at preview and
// confirm (package params turns its Problems into the errors[] an agent
// reads), describes itself in the tool schema (package tools), and names
// its problems with texts in English here and in Chinese in
// api/messages/problems.zh.yaml. The field that declares it is its key of
// Field. Adding a constraint is its file, its Field member and the Chinese
// texts of its problem codes; the OpenAPI document's rule list is checked
// against Constraints.
type Constraint interface {
	// Key is the catalog key that declares it (kind for the string kinds).
	Key() string
	// Rule is the rule its problems name (the errors[] entry's rule): its
	// key, the string kind's name, or scale for scale_from.
	Rule() string
	// Types lists the field types it applies to.
	Types() []FieldType
	// Declared reports whether f declares it.
	Declared(f *Field) bool
	// CheckDeclaration returns the problems of f's declaration of it (f is
	// bound field name of bind; it may keep what it compiles in f), each
	// message after "bind.<name>: ".
	CheckDeclaration(name string, f *Field, bind map[string]Field) []string
	// Check returns the problems of v, a value of a field that declares it.
	Check(f *Field, v Value) []Problem
	// Describe says what it adds to the field's tool schema.
	Describe(f *Field) Description
	// Texts are the English texts of its problem codes, as text/template
	// strings over the problem's Args.
	Texts() map[string]string
}

// Value is a bound field's value as the constraints check it: after its
// type check and its normalizers.
type Value struct {
	// Number is a decimal or integer value, reduced (no trailing zeros);
	// nil for a string.
	Number *apd.Decimal
	// Text is a string value.
	Text string
	// Bound holds every bound field's normalized value that passed its
	// type check (a json.Number or a string), for constraints that read
	// another field (scale_from).
	Bound map[string]any
}

// Places is the number of decimal places of v.Number (0 for an integer).
func (v Value) Places() int {
	if v.Number == nil || v.Number.Exponent >= 0 {
		return 0
	}
	return int(-v.Number.Exponent)
}

// Problem is one problem a constraint finds in a value: the rule broken
// (a catalog key, or currency and identifier for the string kinds), the
// code of its text, what was expected, and the text's arguments as name,
// value pairs.
type Problem struct {
	// Rule is the rule the value breaks.
	Rule string
	// Code names the text of the problem.
	Code string
	// Expected says what the value must be, such as "<= 1000000".
	Expected string
	// Args are the text's arguments as name, value pairs.
	Args []string
}

// Description is what a constraint adds to a field's tool schema.
type Description struct {
	// Keywords are JSON Schema keywords (pattern, enum, maxLength).
	Keywords map[string]any
	// Bound is a clause of the number's "Must be …" sentence, such as
	// "at least 0.01".
	Bound string
	// Sentence is a sentence of the field's description.
	Sentence string
}

// constraints are every constraint, in the order their problems and
// their descriptions are given.
var constraints = []Constraint{
	minConstraint{}, exclusiveMinConstraint{}, maxConstraint{}, exclusiveMaxConstraint{},
	scaleConstraint{}, scaleFromConstraint{},
	currencyConstraint{}, identifierConstraint{}, patternConstraint{}, enumConstraint{}, maxLengthConstraint{},
}

// Constraints returns every constraint a bound field may declare.
func Constraints() []Constraint { return slices.Clone(constraints) }

// typeList writes types as "decimal and integer" or "string".
func typeList(types []FieldType) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	return strings.Join(names, " and ")
}

// numeric are the types of the numeric constraints.
var numeric = []FieldType{TypeDecimal, TypeInteger}

// text is the type of the string constraints.
var text = []FieldType{TypeString}
