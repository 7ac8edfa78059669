package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ownKeys are the keys of a bound field that are no constraint's.
var ownKeys = []string{"type", "required", "normalize", "description"}

// decodeConstraints has each constraint decode its key's value as f
// writes it, and returns the problems: a key no constraint has, and a
// value its constraint refuses, each naming the key.
func (f *Field) decodeConstraints() []string {
	var out []string
	f.constraints = map[Constraint]any{}
	for _, key := range slices.Sorted(maps.Keys(f.written)) {
		n := f.written[key]
		cs := ofKey(key)
		if len(cs) == 0 {
			out = append(out, fmt.Sprintf("unknown key %q (want %s or a constraint: %s)", key, strings.Join(ownKeys, ", "), strings.Join(constraintKeys(), ", ")))
		}
		for _, c := range cs {
			v, declared, err := c.Decode(&n)
			if err != nil {
				out = append(out, err.Error())
				break
			}
			if declared {
				f.constraints[c] = v
			}
		}
	}
	f.declared = nil
	for _, c := range constraints {
		if f.Declares(c) {
			f.declared = append(f.declared, c)
		}
	}
	return out
}

// constraintKeys are the keys of the constraints, sorted, each once.
func constraintKeys() []string {
	var keys []string
	for _, c := range constraints {
		keys = append(keys, c.Key())
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// decodeBind has the constraints of every bound field decode their values
// (before any declaration is checked: scale_from reads another field's
// kind).
func (p problems) decodeBind(bind map[string]Field) {
	for _, name := range slices.Sorted(maps.Keys(bind)) {
		f := bind[name]
		for _, msg := range f.decodeConstraints() {
			p.addf("bind.%s: %s", name, msg)
		}
		bind[name] = f
	}
}

// checkConstraints asks each constraint bound field name declares to check
// its declaration (all of bind is needed for scale_from); a constraint of
// another type is refused by name.
func (p problems) checkConstraints(name string, f *Field, bind map[string]Field) {
	at := "bind." + name
	if !knownType(f.Type) {
		return // the type's own problem is reported
	}
	misplaced := map[string]bool{}
	for _, c := range constraints {
		switch {
		case !f.Declares(c):
		case !slices.Contains(c.Types(), f.Type):
			if !misplaced[c.Key()] {
				p.addf("%s: %s applies to %s fields only, not to %s fields", at, c.Key(), typeList(c.Types()), f.Type)
			}
			misplaced[c.Key()] = true
		default:
			for _, msg := range c.CheckDeclaration(name, f, bind) {
				p.addf("%s: %s", at, msg)
			}
		}
	}
}

// ApplyNormalizers applies the normalizers trim, upper and lower to s, in
// order; an unknown one is an error.
func ApplyNormalizers(s string, normalizers []string) (string, error) {
	for _, n := range normalizers {
		switch n {
		case "trim":
			s = strings.TrimSpace(s)
		case "upper":
			s = strings.ToUpper(s)
		case "lower":
			s = strings.ToLower(s)
		default:
			return "", fmt.Errorf("unknown normalizer %q", n)
		}
	}
	return s, nil
}

// normalizedAlready reports whether the normalizers leave s unchanged (an
// unknown normalizer is reported on its own).
func normalizedAlready(s string, normalizers []string) bool {
	n, err := ApplyNormalizers(s, normalizers)
	return err != nil || n == s
}

// checkFreeConstraints checks the constraints of free field name.
func (p problems) checkFreeConstraints(name string, f FreeField) {
	switch {
	case f.MaxLength < 0:
		p.addf("free.%s: max_length %d must be >= 1 (leave it out for no limit)", name, f.MaxLength)
	case f.MaxLength > 0 && f.Type != TypeString && knownType(f.Type):
		p.addf("free.%s: max_length applies to string fields only, not to %s fields", name, f.Type)
	}
}
