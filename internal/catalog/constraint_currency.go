package catalog

import (
	"strconv"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// CurrencyPattern is the JSON Schema pattern of a string of kind currency:
// three upper-case letters (the gateway then requires an active ISO 4217 code).
const CurrencyPattern = "^[A-Z]{3}$"

// currencyConstraint is kind: currency: an active ISO 4217 currency code.
type currencyConstraint struct{}

// Key is kind.
func (currencyConstraint) Key() string { return "kind" }

// Rule is currency.
func (currencyConstraint) Rule() string { return "currency" }

// Types is string.
func (currencyConstraint) Types() []FieldType { return text }

// Declared reports whether f is of kind currency.
func (currencyConstraint) Declared(f *Field) bool { return f.Kind == KindCurrency }

// CheckDeclaration refuses nothing.
func (currencyConstraint) CheckDeclaration(string, *Field, map[string]Field) []string { return nil }

// Check refuses a code that is not an active ISO 4217 code.
func (c currencyConstraint) Check(_ *Field, v Value) []Problem {
	if _, err := iso4217.Lookup(v.Text); err == nil {
		return nil
	}
	return []Problem{{Rule: c.Rule(), Code: "currency", Expected: "ISO 4217", Args: []string{"value", Quoted(v.Text)}}}
}

// Describe gives the pattern of three capitals, unless a pattern or an
// enum of the field says more.
func (currencyConstraint) Describe(f *Field) Description {
	d := Description{Sentence: "An active ISO 4217 currency code in upper case, such as USD, EUR or JPY (not XXX, XTS or metals such as XAU)."}
	if f.Pattern == "" && len(f.Enum) == 0 {
		d.Keywords = map[string]any{"pattern": CurrencyPattern}
	}
	return d
}

// Texts are currency's.
func (currencyConstraint) Texts() map[string]string {
	return map[string]string{"currency": "{{.value}} is not an active ISO 4217 currency code (such as USD, EUR or JPY)"}
}

// Quoted returns s as a JSON string, shortened to 40 characters, to echo a
// value inside a problem.
func Quoted(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return strconv.Quote(s)
}
