package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/jcs"
)

// Limits on the JSON accepted by CanonicalJSON, Canonicalize and
// Validate. Input beyond any of them is refused with ErrInvalid.
const (
	// MaxParamsBytes is the largest accepted JSON input, in bytes.
	MaxParamsBytes = 64 << 10
	// MaxDepth is the deepest accepted nesting of objects and arrays (the
	// top-level object or array is depth 1).
	MaxDepth = 32
	// MaxMembers is the largest accepted total of object members and array
	// elements, counted over the whole document.
	MaxMembers = 1024
	// MaxNumberDigits is the longest accepted number in its canonical plain
	// form (digits, sign and point), so that 1e999999 cannot blow up.
	MaxNumberDigits = 128
)

// maxExponent bounds a number's written exponent before apd sees it.
const maxExponent = 10000

// CanonicalJSON canonicalizes any JSON value with the rules of docs/contract.md §3:
// members whose value is null are dropped (recursively; null array elements
// stay), object keys are sorted by UTF-16 code units, strings (keys
// included) are NFC-normalized and minimally escaped as RFC 8785 does, and
// numbers are exact decimals written plainly: no exponent, no trailing zeros,
// no point for integers, -0 as 0. Input that is not valid JSON, is not valid
// UTF-8, has duplicate keys (also after NFC), or exceeds MaxParamsBytes,
// MaxDepth, MaxMembers or MaxNumberDigits is refused with an error wrapping
// ErrInvalid.
func CanonicalJSON(raw []byte) ([]byte, error) {
	v, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(raw)), v, nil)
}

// parser decodes JSON into map[string]any, []any, string, json.Number, bool
// and nil with a streaming json.Decoder, enforcing the limits and refusing
// duplicate keys. Object keys are NFC-normalized while parsing.
type parser struct {
	dec     *json.Decoder
	members int
	path    []string
}

// parseJSON parses one JSON value and refuses anything after it. The
// scanner reads valid JSON; whatever it gives up on, the decoder's parser
// reads again and refuses with its problem.
func parseJSON(raw []byte) (any, error) {
	if v, members, ok := scanJSON(raw); ok {
		if members != nil {
			return object{members: members}.values(), nil
		}
		return v, nil
	}
	return parseJSONDecoder(raw)
}

// parseJSONDecoder is parseJSON with encoding/json's streaming decoder
// alone: the parser whose problems the agent reads, and the oracle the
// scanner is fuzzed against.
func parseJSONDecoder(raw []byte) (any, error) {
	if len(raw) > MaxParamsBytes {
		return nil, newProblem("", RuleJSON, "json.size", "", "bytes", strconv.Itoa(len(raw)), "limit", strconv.Itoa(MaxParamsBytes))
	}
	if !utf8.Valid(raw) {
		return nil, newProblem("", RuleJSON, "json.utf8", "")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := &parser{dec: dec}
	v, err := p.value(1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, newProblem("", RuleJSON, "json.trailing", "")
	}
	return v, nil
}

// fail returns a FieldProblem located at the parser's current path.
func (p *parser) fail(code string, args ...string) error {
	return newProblem(joinPath(p.path), RuleJSON, code, "", args...)
}

func (p *parser) syntax(err error) error {
	if errors.Is(err, io.EOF) {
		return p.fail("json.eof")
	}
	return p.fail("json.syntax", "detail", err.Error())
}

func (p *parser) value(depth int) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth > MaxDepth {
			return nil, p.fail("json.depth", "limit", strconv.Itoa(MaxDepth))
		}
		switch t {
		case '{':
			return p.object(depth)
		case '[':
			return p.array(depth)
		}
		return nil, p.fail("json.syntax", "detail", fmt.Sprintf("unexpected %q", rune(t)))
	case string, json.Number, bool, nil:
		return t, nil
	}
	return nil, p.fail("json.syntax", "detail", fmt.Sprintf("unexpected token %v", tok))
}

func (p *parser) count() error {
	p.members++
	if p.members > MaxMembers {
		return p.fail("json.members", "limit", strconv.Itoa(MaxMembers))
	}
	return nil
}

func (p *parser) object(depth int) (any, error) {
	obj := make(map[string]any)
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, p.syntax(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, p.fail("json.key")
		}
		key = norm.NFC.String(key)
		p.path = append(p.path, key)
		if _, dup := obj[key]; dup {
			return nil, p.fail("json.duplicate_key")
		}
		if err := p.count(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		obj[key] = v
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, p.syntax(err)
	}
	return obj, nil
}

func (p *parser) array(depth int) (any, error) {
	arr := make([]any, 0)
	for p.dec.More() {
		p.path = append(p.path, "["+strconv.Itoa(len(arr))+"]")
		if err := p.count(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		arr = append(arr, v)
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, p.syntax(err)
	}
	return arr, nil
}

// joinPath renders a path such as a.b[2].c.
func joinPath(path []string) string {
	var b []byte
	for i, s := range path {
		if i > 0 && (s == "" || s[0] != '[') {
			b = append(b, '.')
		}
		b = append(b, s...)
	}
	return string(b)
}

// appendCanonical appends the canonical form of v (a value produced by the
// parser or by Canonicalize) to dst. path locates errors.
func appendCanonical(dst []byte, v any, path []string) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case string:
		return jcs.AppendString(dst, norm.NFC.String(t)), nil
	case json.Number:
		n, err := canonicalNumber(string(t))
		if err != nil {
			return nil, err.problem(joinPath(path), RuleJSON)
		}
		return append(dst, n...), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k, e := range t {
			if e != nil {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, jcs.CompareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jcs.AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendCanonical(dst, t[k], append(path, k)); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCanonical(dst, e, append(path, "["+strconv.Itoa(i)+"]")); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return nil, newProblem(joinPath(path), RuleJSON, "json.unsupported", "", "got", fmt.Sprintf("%T", v))
}

// isJSONNumber reports whether s follows the JSON number grammar and its
// exponent, if any, is within maxExponent.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp <= maxExponent {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start || exp > maxExponent {
			return false
		}
	}
	return i == len(s)
}

// withoutExponent returns s up to its exponent (s when it has none).
func withoutExponent(s string) string {
	if i := strings.IndexAny(s, "eE"); i >= 0 && i+1 < len(s) {
		return s[:i]
	}
	return s
}

// numberError is why a text is not an acceptable exact number: a problem
// code and its arguments.
type numberError struct {
	code string
	args []string
}

// problem is the FieldProblem of e at field under rule.
func (e *numberError) problem(field, rule string) FieldProblem {
	return newProblem(field, rule, e.code, "", e.args...)
}

// parseDecimal parses a JSON number (or a string holding one) exactly and
// removes its trailing zeros.
func parseDecimal(s string) (*apd.Decimal, *numberError) {
	if !isJSONNumber(s) {
		if isJSONNumber(withoutExponent(s)) {
			return nil, &numberError{"number.exponent", []string{"value", catalog.Quoted(s), "limit", strconv.Itoa(maxExponent)}}
		}
		return nil, &numberError{"number.syntax", []string{"value", catalog.Quoted(s)}}
	}
	var d apd.Decimal
	if _, _, err := d.SetString(s); err != nil {
		return nil, &numberError{"number.inexact", []string{"value", catalog.Quoted(s), "detail", err.Error()}}
	}
	if d.Form != apd.Finite {
		return nil, &numberError{"number.infinite", []string{"value", catalog.Quoted(s)}}
	}
	d.Reduce(&d)
	if d.IsZero() {
		d.SetInt64(0)
	}
	digits := d.NumDigits()
	var plain int64
	if d.Exponent >= 0 {
		plain = digits + int64(d.Exponent)
	} else {
		plain = max(digits, int64(-d.Exponent)+1) + 1
	}
	if plain > MaxNumberDigits {
		return nil, &numberError{"number.digits", []string{"value", catalog.Quoted(s), "limit", strconv.Itoa(MaxNumberDigits)}}
	}
	return &d, nil
}

// canonicalNumber returns the canonical plain text of the JSON number s:
// exact, no exponent, no trailing zeros, no point for integers, -0 as 0.
func canonicalNumber(s string) (string, *numberError) {
	d, err := parseDecimal(s)
	if err != nil {
		return "", err
	}
	return d.Text('f'), nil
}
