package params

import (
	"slices"

	"github.com/oncegate/oncegate/internal/catalog"
)

// checkConstraints checks the constraints of bound field f on its
// normalized value and parsed decimal (normalized holds every bound field
// that passed its type check, for scale_from): each constraint the field
// declares checks it (catalog.Constraint). It returns nil when they all
// hold, and when f has no string or number value.
func checkConstraints(f *boundField, normalized map[string]any) []FieldProblem {
	v := catalog.Value{Bound: normalized, Number: f.number}
	if s, ok := f.value.(string); ok {
		v.Text = s
	} else if f.number == nil {
		return nil
	}
	var out []FieldProblem
	for _, c := range f.field.Declared() {
		if !applies(c, f.field.Type) {
			continue
		}
		for _, p := range c.Check(&f.field, v) {
			out = append(out, fromCatalog(f.name, p))
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
