package catalog

import (
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// CurrencyPattern is the JSON Schema pattern of a string of kind currency:
// three upper-case letters (the gateway then requires an active ISO 4217 code).
const CurrencyPattern = "^[A-Z]{3}$"

// currencyConstraint is kind: currency: an active ISO 4217 currency code.
type currencyConstraint struct{}

func init() { Register(currencyConstraint{}) }

// Key is kind.
func (currencyConstraint) Key() string { return kindKey }

// Rule is currency.
func (currencyConstraint) Rule() string { return "currency" }

// Order is 70.
func (currencyConstraint) Order() int { return 70 }

// Types is string.
func (currencyConstraint) Types() []FieldType { return text }

// Decode declares it for kind: currency.
func (c currencyConstraint) Decode(n *yaml.Node) (any, bool, error) { return decodeKind(c, n) }

// IsCurrency reports whether f is of kind currency.
func (f *Field) IsCurrency() bool { return f.Declares(currencyConstraint{}) }

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
	if !f.Declares(patternConstraint{}) && !f.Declares(enumConstraint{}) {
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
