package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/apd/v3"
	"gopkg.in/yaml.v3"
)

// Decimal is an exact decimal of the catalog, such as a bound's min or max.
// YAML gives it as a number or a string (0, 1000000, "0.01"); its text is
// parsed exactly, never through float64.
type Decimal struct {
	d apd.Decimal
}

// ParseDecimal parses s as a finite exact decimal.
func ParseDecimal(s string) (*Decimal, error) {
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite {
		return nil, fmt.Errorf("%q is not a finite decimal number", s)
	}
	out := &Decimal{}
	out.d.Reduce(d)
	return out, nil
}

// UnmarshalYAML reads a scalar exactly.
func (d *Decimal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a decimal must be a number or a string, not a %s", n.Line, nodeKind(n))
	}
	p, err := ParseDecimal(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = *p
	return nil
}

// MarshalJSON writes the decimal as a JSON string, as every answer does.
func (d Decimal) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Apd returns the value (shared: do not modify it).
func (d *Decimal) Apd() *apd.Decimal { return &d.d }

// String writes the decimal plainly: no exponent, no trailing zeros.
func (d *Decimal) String() string { return d.d.Text('f') }

// Cmp compares d with x: -1, 0 or +1.
func (d *Decimal) Cmp(x *apd.Decimal) int { return d.d.Cmp(x) }

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	}
	return "scalar"
}
