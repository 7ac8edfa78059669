package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/oncegate/oncegate/internal/catalog"
)

// FieldProblem is one reason params were refused. It is also an error that
// wraps ErrInvalidParams, so errors.As recovers the field from an error of
// Canonicalize or CanonicalJSON.
type FieldProblem struct {
	// Field is the param's name, or a path such as a.b[2] inside a nested
	// value; it is empty when the problem concerns the whole body.
	Field string `json:"field"`
	// Problem says what is wrong and how to fix it, for a person or a model.
	Problem string `json:"problem"`
}

// Error implements error.
func (p FieldProblem) Error() string {
	if p.Field == "" {
		return ErrInvalidParams.Error() + ": " + p.Problem
	}
	return ErrInvalidParams.Error() + ": " + p.Field + ": " + p.Problem
}

// Unwrap returns ErrInvalidParams.
func (p FieldProblem) Unwrap() error { return ErrInvalidParams }

// unknownFieldProblem is the problem of a field that is neither bound nor free.
const unknownFieldProblem = "unknown field: not declared by the action, remove it"

// Canonicalize returns the canonical bound params of CONTRACT §3 for raw,
// the JSON object of all params (bound and free): only the fields of spec,
// after their normalizers, with null and missing optional fields dropped,
// serialized as CanonicalJSON does. normalized holds the same bound values
// for display (strings, json.Number with canonical text, bools). Fields of
// raw that are not in spec are ignored here (ValidateParams refuses unknown
// ones); a required field that is missing, null or an empty string, or a
// value of the wrong type, is refused. Every error wraps ErrInvalidParams;
// several problems are joined with errors.Join, each a FieldProblem.
func Canonicalize(raw []byte, spec map[string]catalog.Field) (canonical []byte, normalized map[string]any, err error) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, nil, err
	}
	normalized = make(map[string]any, len(spec))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		v, present := obj[name]
		out, problem := normalizeBound(spec[name], v, present)
		if problem != "" {
			errs = append(errs, FieldProblem{Field: name, Problem: problem})
			continue
		}
		if out != nil {
			normalized[name] = out
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		return nil, nil, errs[0]
	default:
		return nil, nil, errors.Join(errs...)
	}
	canonical, err = appendCanonical(make([]byte, 0, 128), normalized, nil)
	if err != nil {
		return nil, nil, err
	}
	return canonical, normalized, nil
}

// ValidateParams checks raw, the JSON object of all params, against action
// and returns one FieldProblem per problem, sorted by field (nil when the
// params are valid): the body must be a JSON object within the limits of
// CanonicalJSON; every field must be bound or free; required bound fields
// must be present and not null; every value must have its declared type.
func ValidateParams(raw []byte, action *catalog.Action) (problems []FieldProblem) {
	if action == nil {
		return []FieldProblem{{Problem: "no action to validate the params against"}}
	}
	obj, err := parseObject(raw)
	if err != nil {
		var fp FieldProblem
		if errors.As(err, &fp) {
			return []FieldProblem{fp}
		}
		return []FieldProblem{{Problem: err.Error()}}
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		if _, bound := action.Bind[name]; bound {
			continue
		}
		free, ok := action.Free[name]
		if !ok {
			problems = append(problems, FieldProblem{Field: name, Problem: unknownFieldProblem})
			continue
		}
		if problem := checkFree(free, obj[name]); problem != "" {
			problems = append(problems, FieldProblem{Field: name, Problem: problem})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(action.Bind)) {
		v, present := obj[name]
		if _, problem := normalizeBound(action.Bind[name], v, present); problem != "" {
			problems = append(problems, FieldProblem{Field: name, Problem: problem})
		}
	}
	slices.SortStableFunc(problems, func(a, b FieldProblem) int { return strings.Compare(a.Field, b.Field) })
	return problems
}

// ParamHash returns the lowercase hex SHA-256 of canonical, the `p` of a
// fingerprint.
func ParamHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// parseObject parses raw and requires a JSON object.
func parseObject(raw []byte) (map[string]any, error) {
	v, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, FieldProblem{Problem: fmt.Sprintf("params must be a JSON object, not %s", jsonKind(v))}
	}
	return obj, nil
}

// jsonKind names the JSON type of a parsed value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// normalizeBound checks one bound field's value and returns its normalized
// form (nil when absent or null) or a problem.
func normalizeBound(f catalog.Field, v any, present bool) (any, string) {
	if !present || v == nil {
		if f.Required {
			if !present {
				return nil, fmt.Sprintf("required %s field is missing", f.Type)
			}
			return nil, fmt.Sprintf("required %s field is null", f.Type)
		}
		return nil, ""
	}
	switch f.Type {
	case catalog.TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Sprintf("must be a string, not %s", jsonKind(v))
		}
		s = norm.NFC.String(s)
		for _, n := range f.Normalize {
			switch n {
			case "trim":
				s = strings.TrimSpace(s)
			case "upper":
				s = strings.ToUpper(s)
			case "lower":
				s = strings.ToLower(s)
			default:
				return nil, fmt.Sprintf("unknown normalizer %q", n)
			}
		}
		s = norm.NFC.String(s)
		if f.Required && s == "" {
			return nil, "required string field is empty"
		}
		return s, ""
	case catalog.TypeDecimal, catalog.TypeInteger:
		d, problem := numberValue(f.Type, v)
		if problem != "" {
			return nil, problem
		}
		return d, ""
	case catalog.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Sprintf("must be a JSON boolean (true or false), not %s", jsonKind(v))
		}
		return b, ""
	}
	return nil, fmt.Sprintf("the catalog declares an unknown type %q", f.Type)
}

// numberValue returns the canonical json.Number of a decimal or integer
// field given as a JSON number or as a string holding one.
func numberValue(t catalog.FieldType, v any) (json.Number, string) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = string(n)
	case string:
		s = n
	default:
		return "", fmt.Sprintf("must be %s (a JSON number or a string holding one), not %s", article(t), jsonKind(v))
	}
	d, err := parseDecimal(s)
	if err != nil {
		return "", fmt.Sprintf("must be %s: %v", article(t), err)
	}
	if t == catalog.TypeInteger && d.Exponent < 0 {
		return "", fmt.Sprintf("must be an integer: %q has a fractional part", s)
	}
	return json.Number(d.Text('f')), ""
}

func article(t catalog.FieldType) string {
	if t == catalog.TypeInteger {
		return "an integer"
	}
	return "a decimal"
}

// checkFree checks one free field's value against its declared type (string
// when unset); null is accepted as absent.
func checkFree(f catalog.FreeField, v any) string {
	if v == nil {
		return ""
	}
	switch f.Type {
	case "", catalog.TypeString:
		if _, ok := v.(string); !ok {
			return fmt.Sprintf("must be a string, not %s", jsonKind(v))
		}
	case catalog.TypeDecimal, catalog.TypeInteger:
		_, problem := numberValue(f.Type, v)
		return problem
	case catalog.TypeBoolean:
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("must be a JSON boolean (true or false), not %s", jsonKind(v))
		}
	default:
		return fmt.Sprintf("the catalog declares an unknown type %q", f.Type)
	}
	return ""
}
