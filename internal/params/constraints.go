package params

import (
	"encoding/json"
	"slices"

	"github.com/oncegate/oncegate/internal/catalog"
)

// checkConstraints checks the constraints of bound field name on its
// normalized value (normalized holds every bound field that passed its type
// check, for scale_from): each constraint the field declares checks it
// (catalog.Constraint). It returns nil when they all hold.
func checkConstraints(name string, bind map[string]catalog.Field, normalized map[string]any) []FieldProblem {
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

// applies reports whether c applies to fields of type t.
func applies(c catalog.Constraint, t catalog.FieldType) bool {
	return slices.Contains(c.Types(), t)
}

// fromCatalog is the FieldProblem of a constraint's problem at field.
func fromCatalog(field string, p catalog.Problem) FieldProblem {
	return newProblem(field, p.Rule, p.Code, p.Expected, p.Args...)
}

// checkMaxLength refuses a string of more than limit characters (code
// points); limit 0 is no limit.
func checkMaxLength(name string, limit int, s string) *FieldProblem {
	if p := catalog.CheckMaxLength(limit, s); p != nil {
		fp := fromCatalog(name, *p)
		return &fp
	}
	return nil
}
