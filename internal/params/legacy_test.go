package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/oncegate/oncegate/internal/catalog"
)

// legacyBind is Bind as it was before the bound fields were read into a
// reused slice (each decimal parsed once, the canonical bytes written from
// it): kept as the oracle the faster path is compared with, every step
// the old one (validateObject over maps, constraints that parse the
// decimal again, the generic canonical writer over the normalized map).
func legacyBind(raw []byte, action *catalog.Action) (Bound, []FieldProblem) {
	obj, err := parseObject(raw)
	normalized, problems := legacyValidateObject(obj, err, action)
	if len(problems) > 0 {
		return Bound{}, problems
	}
	canonical, err := appendCanonical(make([]byte, 0, 128), normalized, nil)
	if err != nil {
		var fp FieldProblem
		if !errors.As(err, &fp) {
			fp = newProblem("", RuleJSON, "json.syntax", "", "detail", err.Error())
		}
		return Bound{}, []FieldProblem{fp}
	}
	free := make(map[string]json.RawMessage, len(action.Free))
	for _, m := range obj.members {
		if _, ok := action.Free[m.name]; ok && !bytes.Equal(bytes.TrimSpace(m.raw), []byte("null")) {
			free[m.name] = m.raw
		}
	}
	return Bound{Canonical: canonical, Normalized: normalized, Free: free}, nil
}

// legacyValidateObject is validateObject as it was.
func legacyValidateObject(parsed object, err error, action *catalog.Action) (normalized map[string]any, problems []FieldProblem) {
	if action == nil {
		return nil, []FieldProblem{newProblem("", RuleCatalog, "no_action", "")}
	}
	if err != nil {
		var fp FieldProblem
		if errors.As(err, &fp) {
			return nil, []FieldProblem{fp}
		}
		return nil, []FieldProblem{newProblem("", RuleJSON, "json.syntax", "", "detail", err.Error())}
	}
	obj := parsed.values()
	for name, v := range obj {
		if _, bound := action.Bind[name]; bound {
			continue
		}
		free, ok := action.Free[name]
		if !ok {
			problems = append(problems, newProblem(name, RuleUnknownField, "unknown_field", "one of "+strings.Join(declaredFields(action), ", ")))
			continue
		}
		if problem := checkFree(name, free, v); problem != nil {
			problems = append(problems, *problem)
		}
	}
	normalized = make(map[string]any, len(action.Bind))
	for name, f := range action.Bind {
		v, present := obj[name]
		out, problem := legacyNormalizeBound(name, f, v, present)
		if problem != nil {
			problems = append(problems, *problem)
		} else if out != nil {
			normalized[name] = out
		}
	}
	for name := range normalized {
		problems = append(problems, legacyCheckConstraints(name, action.Bind, normalized)...)
	}
	slices.SortStableFunc(problems, func(a, b FieldProblem) int { return strings.Compare(a.Field, b.Field) })
	return normalized, problems
}

// legacyNormalizeBound is normalizeBound as it was.
func legacyNormalizeBound(name string, f catalog.Field, v any, present bool) (any, *FieldProblem) {
	fail := func(rule, code string, args ...string) (any, *FieldProblem) {
		p := newProblem(name, rule, code, string(f.Type), args...)
		return nil, &p
	}
	if !present || v == nil {
		if f.Required {
			if !present {
				return fail(RuleRequired, "required.missing", "type", string(f.Type))
			}
			return fail(RuleRequired, "required.null", "type", string(f.Type))
		}
		return nil, nil
	}
	switch f.Type {
	case catalog.TypeString:
		s, ok := v.(string)
		if !ok {
			return fail(RuleType, "type.string", "got", jsonKind(v))
		}
		s, err := catalog.ApplyNormalizers(norm.NFC.String(s), f.Normalize)
		if err != nil {
			return fail(RuleCatalog, "catalog.normalizer", "normalizer", err.Error())
		}
		s = norm.NFC.String(s)
		if f.Required && s == "" {
			return fail(RuleRequired, "required.empty")
		}
		return s, nil
	case catalog.TypeDecimal, catalog.TypeInteger:
		n, _, problem := numberValue(name, f.Type, v)
		if problem != nil {
			return nil, problem
		}
		return n, nil
	case catalog.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return fail(RuleType, "type.boolean", "got", jsonKind(v))
		}
		return b, nil
	}
	return fail(RuleCatalog, "catalog.type", "type", string(f.Type))
}

// legacyCheckConstraints is checkConstraints as it was: it parses the
// normalized decimal again.
func legacyCheckConstraints(name string, bind map[string]catalog.Field, normalized map[string]any) []FieldProblem {
	f := bind[name]
	v := catalog.Value{Bound: normalized}
	switch x := normalized[name].(type) {
	case json.Number:
		d, nerr := parseDecimal(string(x))
		if nerr != nil {
			return []FieldProblem{nerr.problem(name, RuleType)}
		}
		v.Number = d
	case string:
		v.Text = x
	default:
		return nil
	}
	var out []FieldProblem
	for _, c := range f.Declared() {
		if !applies(c, f.Type) {
			continue
		}
		for _, p := range c.Check(&f, v) {
			out = append(out, fromCatalog(name, p))
		}
	}
	return out
}

// sameAsLegacy fails t unless Bind and Validate give on raw for action
// exactly what the legacy path gives: the same canonical bytes, normalized
// values (their dynamic types too), free params, and problems (every
// field, in the same order).
func sameAsLegacy(t *testing.T, raw []byte, action *catalog.Action) {
	t.Helper()
	got, gotProblems := Bind(raw, action)
	want, wantProblems := legacyBind(raw, action)
	if !reflect.DeepEqual(gotProblems, wantProblems) {
		t.Fatalf("%q: problems %#v, the legacy path %#v", raw, gotProblems, wantProblems)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: bound %#v, the legacy path %#v", raw, got, want)
	}
	obj, err := parseObject(raw)
	_, wantValid := legacyValidateObject(obj, err, action)
	if gotValid := Validate(raw, action); !reflect.DeepEqual(gotValid, wantValid) {
		t.Fatalf("%q: Validate %#v, the legacy path %#v", raw, gotValid, wantValid)
	}
}

// legacySeeds are params that break several rules at once, for the
// differential test: problems of several fields, and of several
// constraints of one field, whose order must be the legacy path's.
var legacySeeds = []string{
	`{"amount":"-12.505","currency":"xau","payee_id":"p 1\u200b","memo":"m"}`,
	`{"amount":"1000000.001","currency":" jpy ","payee_id":"` + strings.Repeat("ｐ", 70) + `","colour":1,"zebra":null}`,
	`{"amount":0,"currency":"BHD","payee_id":"","memo":` + `"` + strings.Repeat("m", 501) + `"}`,
	`{"amount":"1.0E3","currency":"USD","payee_id":"p","note":"n","n":"1.5","ok":"yes","price":"1,5"}`,
	`{"amount":12.50,"currency":"e\u0301","payee_id":"\u00e9","s":"ÅB","d":"-0.000","i":"10","b":false,"id":"x","count":-0}`,
	`{"amount":1e3,"currency":"USD","payee_id":"p-1","\ufb01":1,"memo":null}`,
}

// TestBindMatchesLegacy: Bind and Validate give what the legacy path gives
// for the seeds of both differential tests, on the test actions and on
// every action of the dev catalog.
func TestBindMatchesLegacy(t *testing.T) {
	actions := []*catalog.Action{transferAction(), constrainedAction(), typedAction(), nil}
	for _, a := range devCatalog(t).Actions {
		actions = append(actions, a)
	}
	for _, seed := range slices.Concat(scanSeeds, legacySeeds) {
		for _, action := range actions {
			sameAsLegacy(t, []byte(seed), action)
		}
	}
}

// FuzzBindMatchesLegacy is the differential fuzz target of the bound
// fields' path: for any input, Bind and Validate give what the legacy path
// gives.
func FuzzBindMatchesLegacy(f *testing.F) {
	for _, seed := range slices.Concat(scanSeeds, legacySeeds) {
		f.Add([]byte(seed))
	}
	actions := []*catalog.Action{transferAction(), constrainedAction(), typedAction()}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, action := range actions {
			sameAsLegacy(t, raw, action)
		}
	})
}
