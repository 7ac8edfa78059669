package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/runenames"
	"gopkg.in/yaml.v3"
)

// maxNamedChars bounds the characters one identifier problem names.
const maxNamedChars = 5

// identifierProfile is PRECIS's IdentifierClass (RFC 8264) without any
// mapping: it refuses control, format (Cf), default-ignorable, space and
// compatibility characters such as the full-width forms, and applies the
// Bidi and contextual rules. It is only asked; values are never mapped.
var identifierProfile = precis.NewIdentifier()

// identifierConstraint is kind: identifier: no control, format, invisible,
// white-space or compatibility (such as full-width) characters; the PRECIS
// IdentifierClass of RFC 8264.
type identifierConstraint struct{}

func init() { Register(identifierConstraint{}) }

// Key is kind.
func (identifierConstraint) Key() string { return kindKey }

// Rule is identifier.
func (identifierConstraint) Rule() string { return "identifier" }

// Order is 80.
func (identifierConstraint) Order() int { return 80 }

// Types is string.
func (identifierConstraint) Types() []FieldType { return text }

// Decode declares it for kind: identifier.
func (c identifierConstraint) Decode(n *yaml.Node) (any, bool, error) { return decodeKind(c, n) }

// CheckDeclaration refuses nothing.
func (identifierConstraint) CheckDeclaration(string, *Field, map[string]Field) []string { return nil }

// Check refuses v unless PRECIS's IdentifierClass accepts it, and names
// each offending character by code point, position (counted in characters
// from 1) and Unicode name. Nothing is stripped or mapped.
func (c identifierConstraint) Check(_ *Field, v Value) []Problem {
	s := v.Text
	if s == "" {
		return nil // required fields are refused as empty on their own
	}
	if _, err := identifierProfile.String(s); err == nil {
		return nil
	}
	const expected = "PRECIS IdentifierClass (RFC 8264)"
	var named []string
	bad, pos := 0, 0
	for _, r := range s {
		pos++
		if _, err := identifierProfile.String(string(r)); err == nil {
			continue
		}
		bad++
		if bad <= maxNamedChars {
			named = append(named, describeRune(r)+" at position "+strconv.Itoa(pos))
		}
	}
	if bad == 0 { // every character is fine alone: a contextual or Bidi rule
		return []Problem{{Rule: c.Rule(), Code: "identifier.context", Expected: expected}}
	}
	if bad > maxNamedChars {
		named = append(named, fmt.Sprintf("%d more", bad-maxNamedChars))
	}
	return []Problem{{Rule: c.Rule(), Code: "identifier.chars", Expected: expected, Args: []string{"chars", strings.Join(named, ", ")}}}
}

// describeRune names r as "U+200B ZERO WIDTH SPACE"; characters without a
// name of their own get their general category, such as "U+0000 (control)".
func describeRune(r rune) string {
	code := fmt.Sprintf("%U", r)
	if n := runenames.Name(r); n != "" && !strings.HasPrefix(n, "<") {
		return code + " " + n
	}
	switch {
	case unicode.Is(unicode.Cc, r):
		return code + " (control)"
	case unicode.Is(unicode.Co, r):
		return code + " (private use)"
	case unicode.Is(unicode.Cs, r):
		return code + " (surrogate)"
	}
	return code + " (unassigned)"
}

// Describe tells the model to copy the identifier exactly.
func (identifierConstraint) Describe(*Field) Description {
	return Description{Sentence: "An identifier: copy it exactly; no spaces, control, invisible (such as U+200B) or full-width characters are accepted, and none is removed for you."}
}

// Texts are identifier's.
func (identifierConstraint) Texts() map[string]string {
	return map[string]string{
		"identifier.chars":   "contains {{.chars}}: an identifier may not hold control, format, invisible, space or full-width (compatibility) characters; ask the user for the exact id instead of removing or replacing characters",
		"identifier.context": "is not a valid identifier (PRECIS IdentifierClass, RFC 8264): a character is not allowed where it stands, such as right-to-left text mixed with left-to-right text; ask the user for the exact id",
	}
}
