package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/internal/catalog"
)

// legacyBind is Bind as it was before the bound fields were read into a
// reused slice (each decimal parsed once, the canonical bytes written from
// it): kept as the oracle the faster path is compared with, every step
// the old one (validateObject over maps, constraints that parse the
// decimal again, the generic canonical writer over the normalized map)
// but normalizeBound, whose decimal it drops (what else changed there, a
// string's box kept, changes no value).
func legacyBind(raw []byte, action *catalog.Action) (Bound, []FieldProblem) {
	obj, err := parseObject(raw, nil)
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
	if problem := unboundable(err, action); problem != nil {
		return nil, []FieldProblem{*problem}
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
		out, _, problem := normalizeBound(name, f, v, present)
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
	sameProblems(t, raw, gotProblems, wantProblems, "the legacy path")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: bound %#v, the legacy path %#v", raw, got, want)
	}
	obj, err := parseObject(raw, nil)
	_, wantValid := legacyValidateObject(obj, err, action)
	sameProblems(t, raw, Validate(raw, action), wantValid, "Validate's legacy path")
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
