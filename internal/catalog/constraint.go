package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"gopkg.in/yaml.v3"
)

// Constraint is one constraint a bound field may declare in the catalog
// (min, max_length, kind: currency, ...): one type in one file, which
// registers itself (func init() { Register(c{}) }). It decodes its own value
// from the field's YAML when the catalog loads and checks its declaration,
// checks a value at preview and confirm (package params turns its Problems
// into the errors[] an agent reads), describes itself in the tool schema
// (package tools), and names its problems with texts in English here and
// in Chinese in api/messages/problems.zh.yaml. Adding a constraint is its
// file and the Chinese texts of its problem codes: the loader accepts its
// key, params checks it, the tool schema and the catalog's JSON view show
// it, and the OpenAPI document's rule list is checked against Constraints.
// A constraint's type must be comparable (an empty struct): a Field keeps
// its decoded values keyed by it.
type Constraint interface {
	// Key is the catalog key that declares it (kind for the string kinds).
	Key() string
	// Rule is the rule its problems name (the errors[] entry's rule): its
	// key, the string kind's name, or scale for scale_from.
	Rule() string
	// Order is its place among the constraints: a field's problems and
	// descriptions come in this order. Every constraint's is its own (a
	// test checks).
	Order() int
	// Types lists the field types it applies to.
	Types() []FieldType
	// Decode reads the value of its key as the catalog writes it: the
	// value Check and Describe later read (ValueOf), or an error that says
	// what is wrong with it (the loader names the field). declared is
	// false when the value is another constraint's of the same key (kind:
	// identifier, for kind: currency).
	Decode(n *yaml.Node) (value any, declared bool, err error)
	// CheckDeclaration returns the problems of f's declaration of it (f is
	// bound field name of bind), each message after "bind.<name>: ".
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

// constraints are every registered constraint, sorted by Order. Only the
// init functions of the constraints' files (and of a test's own
// constraint) add to it; it is read-only once the program runs.
var constraints []Constraint

// Register adds c to the constraints, in its order. Call it only from the
// init function of c's file (func init() { Register(c{}) }), so that the
// constraints are complete before the program (or a test) runs.
func Register(c Constraint) {
	constraints = append(constraints, c)
	slices.SortStableFunc(constraints, func(a, b Constraint) int { return cmp.Compare(a.Order(), b.Order()) })
}

// Constraints returns every constraint a bound field may declare, in their
// order.
func Constraints() []Constraint { return slices.Clone(constraints) }

// ofKey returns the constraints declared by key, in their order.
func ofKey(key string) []Constraint {
	var out []Constraint
	for _, c := range constraints {
		if c.Key() == key {
			out = append(out, c)
		}
	}
	return out
}

// ValueOf returns the value f declares for c, as c decoded it at load (the
// zero T when f does not declare c).
func ValueOf[T any](f *Field, c Constraint) T {
	v, _ := f.constraints[c].(T)
	return v
}

// kindKey is the key of the string kinds (kind: currency, kind:
// identifier): one key whose value names the constraint, its Rule.
const kindKey = "kind"

// decodeKind declares c when the kind is c's Rule (currency, identifier);
// another kind constraint's is not c's, and a kind that is no constraint's
// is refused.
func decodeKind(c Constraint, n *yaml.Node) (any, bool, error) {
	kind, err := decodeAs[string](kindKey, n)
	if err != nil {
		return nil, false, err
	}
	var kinds []string
	for _, k := range ofKey(kindKey) {
		kinds = append(kinds, k.Rule())
	}
	if !slices.Contains(kinds, kind) {
		return nil, false, fmt.Errorf("unknown kind %q (want %s)", kind, strings.Join(kinds, " or "))
	}
	return kind, kind == c.Rule(), nil
}

// decodeAs decodes n as a T, naming key in its error.
func decodeAs[T any](key string, n *yaml.Node) (T, error) {
	var v T
	if err := n.Decode(&v); err != nil {
		return v, fmt.Errorf("%s: %s", key, yamlProblem(err))
	}
	return v, nil
}

// yamlProblem is err without the YAML package's prefix.
func yamlProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	return strings.TrimSpace(msg)
}

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
