package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// checkConstraints asks each constraint bound field name declares to check
// its declaration (all of bind is needed for scale_from); a constraint of
// another type is refused by name.
func (p problems) checkConstraints(name string, f *Field, bind map[string]Field) {
	at := "bind." + name
	if !knownType(f.Type) {
		return // the type's own problem is reported
	}
	if f.Type == TypeString && f.Kind != "" && !slices.Contains(knownKinds, f.Kind) {
		p.addf("%s: unknown kind %q (want %s)", at, f.Kind, kindList())
	}
	misplaced := map[string]bool{}
	for _, c := range constraints {
		switch {
		case !c.Declared(f):
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

// kindList writes the known string kinds as "currency or identifier".
func kindList() string {
	names := make([]string, len(knownKinds))
	for i, k := range knownKinds {
		names[i] = string(k)
	}
	return strings.Join(names, " or ")
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
