package catalog

import "fmt"

// checkRange refuses a lower and an upper bound that leave no value.
func checkRange(f *Field) []string {
	lo, loEx := f.Lower()
	hi, hiEx := f.Upper()
	if lo == nil || hi == nil {
		return nil
	}
	c := lo.Cmp(hi.Apd())
	if c > 0 || (c == 0 && (loEx || hiEx)) {
		return []string{fmt.Sprintf("%s %s and %s %s leave no allowed value", boundKey(f.ExclusiveMin != nil, "min"), lo, boundKey(f.ExclusiveMax != nil, "max"), hi)}
	}
	return nil
}

// boundKey is the catalog key of a bound: min or exclusive_min, max or exclusive_max.
func boundKey(exclusive bool, key string) string {
	if exclusive {
		return "exclusive_" + key
	}
	return key
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
