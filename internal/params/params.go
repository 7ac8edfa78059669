// Package params binds an action's params: it validates the JSON object of
// an agent's params against the catalog action (bound and free fields,
// types, constraints), writes the canonical bytes of the bound params
// (docs/contract.md §3) and their param_hash, and reports every refusal as a
// FieldProblem (the invalid_params errors[] entries, with a text per problem
// code). It does no I/O and knows nothing of fingerprints: the fingerprint
// package signs and verifies the param_hash computed here.
package params

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/oncegate/oncegate/internal/catalog"
)

// ErrInvalid means params could not be bound or canonicalized (not a JSON
// object, duplicate keys, too deep, too large, wrong type, a broken
// constraint). Every FieldProblem wraps it.
var ErrInvalid = errors.New("params: invalid")

// FieldProblem is one reason params were refused. It is also an error that
// wraps ErrInvalid, so errors.As recovers the field from an error of
// Canonicalize or CanonicalJSON.
type FieldProblem struct {
	// Field is the param's name, or a path such as a.b[2] inside a nested
	// value; it is empty when the problem concerns the whole body.
	Field string `json:"field"`
	// Rule is the rule the value breaks: a catalog constraint key (min,
	// max, scale, max_length, enum, pattern, currency, identifier, ...) or
	// one of required, type, unknown_field, json.
	Rule string `json:"rule"`
	// Problem says what is wrong and how to fix it, for a person or a model.
	Problem string `json:"problem"`
	// Expected is what the rule expects, such as "> 0", "<= 1000000",
	// "scale <= 2" or the allowed field names.
	Expected string `json:"expected,omitempty"`
	// Code names Problem's text among ProblemCodes, for translations.
	Code string `json:"-"`
	// Args fill the text of Code.
	Args map[string]string `json:"-"`
}

// Error implements error.
func (p FieldProblem) Error() string {
	if p.Field == "" {
		return ErrInvalid.Error() + ": " + p.Problem
	}
	return ErrInvalid.Error() + ": " + p.Field + ": " + p.Problem
}

// Unwrap returns ErrInvalid.
func (p FieldProblem) Unwrap() error { return ErrInvalid }

// Canonicalize returns the canonical bound params of docs/contract.md §3 for raw,
// the JSON object of all params (bound and free): only the fields of spec,
// after their normalizers, with null and missing optional fields dropped,
// serialized as CanonicalJSON does. normalized holds the same bound values
// for display (strings, json.Number with canonical text, bools). Fields of
// raw that are not in spec are ignored here (Validate refuses unknown
// ones); a required field that is missing, null or an empty string, or a
// value of the wrong type, is refused. Every error wraps ErrInvalid;
// several problems are joined with errors.Join, each a FieldProblem.
func Canonicalize(raw []byte, spec map[string]catalog.Field) (canonical []byte, normalized map[string]any, err error) {
	parsed, err := parseObject(raw, nil)
	if err != nil {
		return nil, nil, err
	}
	normalized = make(map[string]any, len(spec))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		v, present := parsed.lookup(name)
		out, _, problem := normalizeBound(name, spec[name], v, present)
		if problem != nil {
			errs = append(errs, *problem)
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

// Validate checks raw, the JSON object of all params, against action
// and returns one FieldProblem per problem, sorted by field (nil when the
// params are valid): the body must be a JSON object within the limits of
// CanonicalJSON; every field must be bound or free; required bound fields
// must be present and not null; every value must have its declared type and
// meet the field's constraints (checked on the normalized value, which the
// constraints never change).
func Validate(raw []byte, action *catalog.Action) (problems []FieldProblem) {
	_, problems = validate(raw, action)
	return problems
}

// Bound is what Bind derives from valid params.
type Bound struct {
	// Canonical is the canonical bound params (docs/contract.md §3), whose
	// Hash is the fingerprint's param_hash.
	Canonical []byte
	// Normalized holds the bound values for display and downstream
	// (strings, json.Number with canonical text, bools).
	Normalized map[string]any
	// Free holds each free param the agent sent, not null, by name, its
	// value's bytes verbatim.
	Free map[string]json.RawMessage
}

// Bind is Validate and, for valid params, Canonicalize with action.Bind
// and the free params as written, parsing raw once: the problems Validate
// reports, or the Bound params. The gateway calls it on every preview and
// confirm.
func Bind(raw []byte, action *catalog.Action) (Bound, []FieldProblem) {
	fields := borrowBoundFields(action)
	defer fields.giveBack()
	obj, err := parseObject(raw, fields)
	b, problems := bindObject(obj, err, action, fields)
	if len(problems) > 0 {
		return Bound{}, problems
	}
	b.Free = freeParams(action, obj.members)
	return b, nil
}

// bindObject is Bind of a parsed object (or of the error parsing it
// returned) without the free params: the problems, or the canonical bound
// params and their normalized values.
func bindObject(obj object, err error, action *catalog.Action, fields *boundFields) (Bound, []FieldProblem) {
	normalized, problems := checkObject(obj, err, action, fields)
	if len(problems) > 0 {
		return Bound{}, problems
	}
	return Bound{Canonical: fields.appendCanonical(make([]byte, 0, 128)), Normalized: normalized}, nil
}

// freeParams returns the members that are free params of action and not
// null, by the name they were written with.
func freeParams(action *catalog.Action, members []member) map[string]json.RawMessage {
	free := make(map[string]json.RawMessage, len(action.Free))
	for _, m := range members {
		if _, ok := action.Free[m.name]; ok && !bytes.Equal(bytes.TrimSpace(m.raw), []byte("null")) {
			free[m.name] = m.raw
		}
	}
	return free
}

// validate is Validate, returning the normalized bound values too
// (meaningful only without problems).
func validate(raw []byte, action *catalog.Action) (normalized map[string]any, problems []FieldProblem) {
	fields := borrowBoundFields(action)
	defer fields.giveBack()
	obj, err := parseObject(raw, fields)
	return checkObject(obj, err, action, fields)
}

// unboundable returns the problem that keeps params from being checked at
// all: no action, or the error parsing them returned (a FieldProblem, or
// a syntax error); nil when they can be.
func unboundable(err error, action *catalog.Action) *FieldProblem {
	if action == nil {
		p := newProblem("", RuleCatalog, "no_action", "")
		return &p
	}
	if err == nil {
		return nil
	}
	var p FieldProblem
	if !errors.As(err, &p) {
		p = newProblem("", RuleJSON, "json.syntax", "", "detail", err.Error())
	}
	return &p
}

// checkObject is validate of a parsed object, or of the error that
// parsing it returned, with the bound fields of action
// (borrowBoundFields), which then hold each one's normalized value. Every
// problem it finds is at a top-level name (each name is checked once, by
// one of the loops), so the final sort by field alone orders them, the
// problems of one field in the order its check found them: the loops
// range over the members and the fields as they come.
func checkObject(parsed object, err error, action *catalog.Action, fields *boundFields) (normalized map[string]any, problems []FieldProblem) {
	if problem := unboundable(err, action); problem != nil {
		return nil, []FieldProblem{*problem}
	}
	for _, m := range parsed.members {
		if _, bound := action.Bind[m.key]; bound {
			continue
		}
		free, ok := action.Free[m.key]
		if !ok {
			problems = append(problems, newProblem(m.key, RuleUnknownField, "unknown_field", "one of "+strings.Join(declaredFields(action), ", ")))
			continue
		}
		if problem := checkFree(m.key, free, m.value); problem != nil {
			problems = append(problems, *problem)
		}
	}
	normalized = make(map[string]any, len(action.Bind))
	for i := range fields.all {
		f := &fields.all[i]
		v, present := parsed.lookup(f.name)
		problem := f.normalize(v, present)
		if problem != nil {
			problems = append(problems, *problem)
		} else if f.value != nil {
			normalized[f.name] = f.value
		}
	}
	for i := range fields.all {
		problems = append(problems, checkConstraints(&fields.all[i], normalized)...)
	}
	slices.SortStableFunc(problems, func(a, b FieldProblem) int { return strings.Compare(a.Field, b.Field) })
	return normalized, problems
}

// declaredFields returns the bound and free field names of action, sorted.
func declaredFields(action *catalog.Action) []string {
	names := slices.Collect(maps.Keys(action.Bind))
	for name := range action.Free {
		if _, bound := action.Bind[name]; !bound {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Hash returns the lowercase hex SHA-256 of canonical, the `p` of a
// fingerprint.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	var h [2 * sha256.Size]byte // on the stack: only the string is allocated
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// object is a parsed params object: its top-level members, in order.
type object struct {
	members []member
}

// lookup returns the value of the member keyed key (NFC-normalized), and
// whether there is one.
func (o object) lookup(key string) (any, bool) {
	for i := range o.members {
		if o.members[i].key == key {
			return o.members[i].value, true
		}
	}
	return nil, false
}

// values returns the members' values by key: the map the parser builds
// of an object.
func (o object) values() map[string]any {
	values := make(map[string]any, len(o.members))
	for _, m := range o.members {
		values[m.key] = m.value
	}
	return values
}

// parseObject parses raw and requires a JSON object: the scanner reads
// valid params (of an action whose bound fields are known, nil for none:
// scanParams); whatever it gives up on, parseObjectDecoder reads again and
// refuses with its problem.
func parseObject(raw []byte, known *boundFields) (object, error) {
	if len(bytes.TrimSpace(raw)) > 0 {
		if _, members, ok := scanParams(raw, known); ok && members != nil {
			return object{members: members}, nil
		}
	}
	return parseObjectDecoder(raw)
}

// parseObjectDecoder is parseObject with encoding/json alone: the parser
// whose problems the agent reads, and the oracle the scanner is fuzzed
// against.
func parseObjectDecoder(raw []byte) (object, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return object{}, newProblem("params", RuleRequired, "params.missing", "object")
	}
	v, err := parseJSONDecoder(raw)
	if err != nil {
		return object{}, err
	}
	values, ok := v.(map[string]any)
	if !ok {
		return object{}, newProblem("", RuleJSON, "json.object", "", "got", jsonKind(v))
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return object{}, newProblem("", RuleJSON, "json.syntax", "", "detail", err.Error())
	}
	members := make([]member, 0, len(all))
	for name, v := range all {
		key := norm.NFC.String(name)
		members = append(members, member{name: name, key: key, value: values[key], raw: v})
	}
	return object{members: members}, nil
}

// jsonKind names the JSON type of a parsed value: null, boolean, string,
// number, array or object.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// normalizeBound checks one bound field's type and returns its normalized
// form (nil when absent or null), with the decimal a number was parsed to,
// or a problem.
func normalizeBound(name string, f catalog.Field, v any, present bool) (any, *apd.Decimal, *FieldProblem) {
	fail := func(rule, code string, args ...string) (any, *apd.Decimal, *FieldProblem) {
		p := newProblem(name, rule, code, string(f.Type), args...)
		return nil, nil, &p
	}
	if !present || v == nil {
		if f.Required {
			if !present {
				return fail(RuleRequired, "required.missing", "type", string(f.Type))
			}
			return fail(RuleRequired, "required.null", "type", string(f.Type))
		}
		return nil, nil, nil
	}
	switch f.Type {
	case catalog.TypeString:
		s, ok := v.(string)
		if !ok {
			return fail(RuleType, "type.string", "got", jsonKind(v))
		}
		normalized, err := catalog.ApplyNormalizers(norm.NFC.String(s), f.Normalize)
		if err != nil {
			return fail(RuleCatalog, "catalog.normalizer", "normalizer", err.Error())
		}
		normalized = norm.NFC.String(normalized)
		if f.Required && normalized == "" {
			return fail(RuleRequired, "required.empty")
		}
		return sameString(v, s, normalized), nil, nil
	case catalog.TypeDecimal, catalog.TypeInteger:
		n, d, problem := numberValue(name, f.Type, v)
		if problem != nil {
			return nil, nil, problem
		}
		return n, d, nil
	case catalog.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return fail(RuleType, "type.boolean", "got", jsonKind(v))
		}
		return b, nil, nil
	}
	return fail(RuleCatalog, "catalog.type", "type", string(f.Type))
}

// sameString returns the normalized string as an any: v, which holds s,
// when the normalizers and NFC left s as it was (so that it is not boxed
// again), else normalized.
func sameString(v any, s, normalized string) any {
	if normalized == s {
		return v
	}
	return normalized
}

// numberValue returns the canonical json.Number of a decimal or integer
// field given as a JSON number (JSON's grammar) or as a decimal string
// (DecimalPattern), and the decimal it parsed (reduced, as parseDecimal
// returns it).
func numberValue(name string, t catalog.FieldType, v any) (json.Number, *apd.Decimal, *FieldProblem) {
	var (
		s    string
		d    *apd.Decimal
		nerr *numberError
	)
	switch n := v.(type) {
	case json.Number:
		s = string(n)
		d, nerr = parseDecimal(s)
	case string:
		s = n
		d, nerr = parseDecimalString(s)
	default:
		p := newProblem(name, RuleType, "type.number", string(t), "type", string(t), "got", jsonKind(v))
		return "", nil, &p
	}
	if nerr != nil {
		p := nerr.problem(name, RuleType)
		p.Expected = string(t)
		return "", nil, &p
	}
	if t == catalog.TypeInteger && d.Exponent < 0 {
		p := newProblem(name, RuleType, "type.fraction", string(t), "value", catalog.Quoted(s))
		return "", nil, &p
	}
	return json.Number(d.Text('f')), d, nil
}

// checkFree checks one free field's value against its declared type
// (string when unset) and max_length; null is accepted as absent.
func checkFree(name string, f catalog.FreeField, v any) *FieldProblem {
	if v == nil {
		return nil
	}
	fail := func(rule, code, expected string, args ...string) *FieldProblem {
		p := newProblem(name, rule, code, expected, args...)
		return &p
	}
	switch f.Type {
	case "", catalog.TypeString:
		s, ok := v.(string)
		if !ok {
			return fail(RuleType, "type.string", string(catalog.TypeString), "got", jsonKind(v))
		}
		return checkMaxLength(name, f.MaxLength, s)
	case catalog.TypeDecimal, catalog.TypeInteger:
		_, _, problem := numberValue(name, f.Type, v)
		return problem
	case catalog.TypeBoolean:
		if _, ok := v.(bool); !ok {
			return fail(RuleType, "type.boolean", string(catalog.TypeBoolean), "got", jsonKind(v))
		}
	default:
		return fail(RuleCatalog, "catalog.type", "", "type", string(f.Type))
	}
	return nil
}
