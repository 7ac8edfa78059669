package catalog

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxScale bounds a decimal's declared scale.
const MaxScale = 30

// checkConstraints validates the constraints of bound field name (all of
// bind is needed for scale_from) and compiles its pattern.
func (p problems) checkConstraints(name string, f *Field, bind map[string]Field) {
	at := "bind." + name
	numeric := f.Type == TypeDecimal || f.Type == TypeInteger
	str := f.Type == TypeString
	if !knownType(f.Type) {
		return // the type's own problem is reported
	}

	// Keys that belong to another type.
	if !numeric {
		for _, k := range []struct {
			key string
			set bool
		}{{"min", f.Min != nil}, {"exclusive_min", f.ExclusiveMin != nil}, {"max", f.Max != nil},
			{"exclusive_max", f.ExclusiveMax != nil}, {"scale", f.Scale != nil}, {"scale_from", f.ScaleFrom != ""}} {
			if k.set {
				p.addf("%s: %s applies to decimal and integer fields only, not to %s fields", at, k.key, f.Type)
			}
		}
	}
	if !str {
		for _, k := range []struct {
			key string
			set bool
		}{{"max_length", f.MaxLength != 0}, {"enum", f.Enum != nil}, {"pattern", f.Pattern != ""}, {"kind", f.Kind != ""}} {
			if k.set {
				p.addf("%s: %s applies to string fields only, not to %s fields", at, k.key, f.Type)
			}
		}
	}

	if numeric {
		p.checkBounds(at, f)
		p.checkScale(at, name, f, bind)
	}
	if str {
		p.checkStringConstraints(at, f)
	}
}

// checkBounds refuses both variants of one bound and an empty range.
func (p problems) checkBounds(at string, f *Field) {
	if f.Min != nil && f.ExclusiveMin != nil {
		p.addf("%s: set min or exclusive_min, not both", at)
		return
	}
	if f.Max != nil && f.ExclusiveMax != nil {
		p.addf("%s: set max or exclusive_max, not both", at)
		return
	}
	lo, loKey, loEx := f.Min, "min", false
	if f.ExclusiveMin != nil {
		lo, loKey, loEx = f.ExclusiveMin, "exclusive_min", true
	}
	hi, hiKey, hiEx := f.Max, "max", false
	if f.ExclusiveMax != nil {
		hi, hiKey, hiEx = f.ExclusiveMax, "exclusive_max", true
	}
	if lo == nil || hi == nil {
		return
	}
	c := lo.Cmp(hi.Apd())
	if c > 0 || (c == 0 && (loEx || hiEx)) {
		p.addf("%s: %s %s and %s %s leave no allowed value", at, loKey, lo, hiKey, hi)
	}
}

// checkScale checks scale and scale_from.
func (p problems) checkScale(at, name string, f *Field, bind map[string]Field) {
	if f.Scale != nil && f.ScaleFrom != "" {
		p.addf("%s: set scale or scale_from, not both", at)
		return
	}
	if f.Scale != nil {
		switch {
		case f.Type == TypeInteger:
			p.addf("%s: scale applies to decimal fields only (an integer has none)", at)
		case *f.Scale < 0 || *f.Scale > MaxScale:
			p.addf("%s: scale %d must be between 0 and %d", at, *f.Scale, MaxScale)
		}
	}
	if f.ScaleFrom == "" {
		return
	}
	if f.Type == TypeInteger {
		p.addf("%s: scale_from applies to decimal fields only (an integer has no decimal places)", at)
		return
	}
	src, ok := bind[f.ScaleFrom]
	switch {
	case f.ScaleFrom == name:
		p.addf("%s: scale_from must name another field, not %s itself", at, name)
	case !ok:
		p.addf("%s: scale_from %q is not a bound field (the currency field must be bound, so that its value is sealed with the amount)", at, f.ScaleFrom)
	case src.Type != TypeString || src.Kind != KindCurrency:
		p.addf("%s: scale_from %q must name a string field of kind currency, not a %s field%s", at, f.ScaleFrom, src.Type, kindSuffix(src.Kind))
	}
}

func kindSuffix(k StringKind) string {
	if k == "" {
		return " without a kind"
	}
	return " of kind " + string(k)
}

// checkStringConstraints checks max_length, enum, pattern and kind, and
// compiles the pattern.
func (p problems) checkStringConstraints(at string, f *Field) {
	if f.MaxLength < 0 {
		p.addf("%s: max_length %d must be >= 1 (leave it out for no limit)", at, f.MaxLength)
	}
	switch f.Kind {
	case "", KindCurrency, KindIdentifier:
	default:
		p.addf("%s: unknown kind %q (want currency or identifier)", at, f.Kind)
	}
	if f.Pattern != "" {
		re, err := regexp.Compile(f.Pattern)
		if err != nil {
			p.addf("%s: pattern %q is not a valid regular expression: %v", at, f.Pattern, err)
		} else {
			f.pattern = re
		}
	}
	if f.Enum == nil {
		return
	}
	if len(f.Enum) == 0 {
		p.addf("%s: enum is empty: list at least one value, or leave it out", at)
	}
	seen := map[string]bool{}
	for _, v := range f.Enum {
		switch {
		case v == "":
			p.addf("%s: enum holds an empty value", at)
		case seen[v]:
			p.addf("%s: enum lists %q twice", at, v)
		case !normalizedAlready(v, f.Normalize):
			p.addf("%s: enum value %q can never match: values are compared after the normalizers %s", at, v, strings.Join(f.Normalize, ", "))
		case f.MaxLength > 0 && len([]rune(v)) > f.MaxLength:
			p.addf("%s: enum value %q is longer than max_length %d", at, v, f.MaxLength)
		case f.pattern != nil && !f.pattern.MatchString(v):
			p.addf("%s: enum value %q does not match pattern %q", at, v, f.Pattern)
		}
		seen[v] = true
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

// Lower returns the lower bound of a decimal or integer field and whether
// it is exclusive; nil when there is none.
func (f Field) Lower() (*Decimal, bool) {
	if f.ExclusiveMin != nil {
		return f.ExclusiveMin, true
	}
	return f.Min, false
}

// Upper returns the upper bound of a decimal or integer field and whether
// it is exclusive; nil when there is none.
func (f Field) Upper() (*Decimal, bool) {
	if f.ExclusiveMax != nil {
		return f.ExclusiveMax, true
	}
	return f.Max, false
}
