// Package iso4217 answers which ISO 4217 currency codes an agent may use and
// how many decimal places (minor units) each allows, from the CLDR data that
// golang.org/x/text/currency carries — no table is kept here.
//
// A code is active when CLDR lists it as legal tender in at least one region
// today. That refuses what an ISO-aware user would not pay with: the "no
// currency" and testing codes (XXX, XTS), precious metals (XAU, XAG, XPT,
// XPD), the IMF's SDR (XDR) and the other X codes of supranational units,
// fund codes and units of account (USN, CHW, BOV, CLF, ...) and withdrawn currencies (DEM, FRF). The
// data is as recent as x/text's CLDR version: a currency withdrawn after it
// (such as HRK in 2023) is still active here, and a newer one (such as VES)
// is unknown until x/text is updated.
package iso4217

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/text/currency"
)

// ErrNotActive is wrapped by Lookup's error for a code that is not an
// active ISO 4217 currency.
var ErrNotActive = errors.New("not an active ISO 4217 currency code")

// Currency is one active currency.
type Currency struct {
	// Code is the three-letter upper-case code, such as USD.
	Code string
	// Scale is the number of decimal places amounts in it may have
	// (CLDR's standard digits: 2 for USD, 0 for JPY, 3 for BHD; for a few
	// currencies, such as IDR, COP, LAK and IQD, fewer than ISO's minor units).
	Scale int
}

var (
	loadOnce sync.Once
	active   map[string]Currency
	maxScale int
)

func load() {
	active = map[string]Currency{}
	it := currency.Query() // tender currencies of any region, in use today
	for it.Next() {
		u := it.Unit()
		scale, _ := currency.Standard.Rounding(u)
		c := Currency{Code: u.String(), Scale: scale}
		active[c.Code] = c
		maxScale = max(maxScale, scale)
	}
}

// Lookup returns the active currency of code, which must be exactly three
// upper-case ASCII letters (normalizers run before, so "usd" is refused
// here). Any other code is an error wrapping ErrNotActive.
func Lookup(code string) (Currency, error) {
	loadOnce.Do(load)
	if len(code) != 3 || !isUpperASCII(code) {
		return Currency{}, fmt.Errorf("%q: %w (three upper-case letters such as USD)", code, ErrNotActive)
	}
	c, ok := active[code]
	if !ok {
		return Currency{}, fmt.Errorf("%q: %w", code, ErrNotActive)
	}
	return c, nil
}

// MaxScale is the largest Scale of any active currency: the most decimal
// places an amount whose scale comes from a currency field can have.
func MaxScale() int {
	loadOnce.Do(load)
	return maxScale
}

// Count is the number of active currencies.
func Count() int {
	loadOnce.Do(load)
	return len(active)
}

func isUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
