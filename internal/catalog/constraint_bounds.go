package catalog

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Bound constraints: min, exclusive_min, max and exclusive_max, whose
// values are exact decimals.
var (
	minBound          = minConstraint{}
	exclusiveMinBound = exclusiveMinConstraint{}
	maxBound          = maxConstraint{}
	exclusiveMaxBound = exclusiveMaxConstraint{}
)

// decodeBound decodes the decimal of a bound's key.
func decodeBound(key string, n *yaml.Node) (any, bool, error) {
	d, err := decodeAs[*Decimal](key, n)
	return d, err == nil, err
}

// checkRange refuses a lower and an upper bound that leave no value.
func checkRange(f *Field) []string {
	lo, loEx := f.Lower()
	hi, hiEx := f.Upper()
	if lo == nil || hi == nil {
		return nil
	}
	c := lo.Cmp(hi.Apd())
	if c > 0 || (c == 0 && (loEx || hiEx)) {
		return []string{fmt.Sprintf("%s %s and %s %s leave no allowed value", boundKey(loEx, "min"), lo, boundKey(hiEx, "max"), hi)}
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
func (f *Field) Lower() (*Decimal, bool) {
	if f.Declares(exclusiveMinBound) {
		return ValueOf[*Decimal](f, exclusiveMinBound), true
	}
	return ValueOf[*Decimal](f, minBound), false
}

// Upper returns the upper bound of a decimal or integer field and whether
// it is exclusive; nil when there is none.
func (f *Field) Upper() (*Decimal, bool) {
	if f.Declares(exclusiveMaxBound) {
		return ValueOf[*Decimal](f, exclusiveMaxBound), true
	}
	return ValueOf[*Decimal](f, maxBound), false
}
