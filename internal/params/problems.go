package params

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/oncegate/oncegate/internal/catalog"
)

// Rules a FieldProblem names beside the constraints' own
// (catalog.Constraint: min, max_length, ...): the rules every params object
// follows.
const (
	// RuleJSON: the params are not acceptable JSON (syntax, limits, duplicate keys).
	RuleJSON = "json"
	// RuleRequired: a required field is missing, null or empty.
	RuleRequired = "required"
	// RuleType: a value has another type than the declared one.
	RuleType = "type"
	// RuleUnknownField: a field the action neither binds nor lists as free.
	RuleUnknownField = "unknown_field"
	// RuleEnum: a value that is none of the allowed ones (the enum
	// constraint's rule, also used by the ops list's filters).
	RuleEnum = "enum"
	// RuleCatalog: the catalog itself is inconsistent (unknown type or normalizer).
	RuleCatalog = "catalog"
)

// ownTexts are the English texts of the problem codes of the rules every
// params object follows, as text/template strings over the problem's Args.
// problemTexts adds each constraint's own.
var ownTexts = map[string]string{
	"json.size":            "JSON is {{.bytes}} bytes, more than the limit of {{.limit}}",
	"json.utf8":            "JSON is not valid UTF-8",
	"json.trailing":        "invalid JSON: data after the top-level value",
	"json.eof":             "invalid JSON: unexpected end of input",
	"json.syntax":          "invalid JSON: {{.detail}}",
	"json.key":             "invalid JSON: object key is not a string",
	"json.depth":           "nested deeper than {{.limit}} levels",
	"json.members":         "more than {{.limit}} members in total",
	"json.duplicate_key":   "duplicate key",
	"json.object":          "params must be a JSON object, not a JSON {{.got}}",
	"json.unsupported":     "unsupported value of type {{.got}}",
	"params.missing":       "params are missing: send the action's params as a JSON object, such as {\"amount\":\"12.50\"}",
	"number.syntax":        "{{.value}} is not a JSON number",
	"number.exponent":      "{{.value}} has an exponent beyond {{.limit}}: write the number in plain digits",
	"decimal.empty":        "is an empty string: write the number as a decimal string such as \"12.50\"",
	"decimal.separator":    "{{.value}} contains a separator (comma, space, underscore or apostrophe): a decimal string has a point as its only separator and no thousands separators, such as \"1000.50\"",
	"decimal.space":        "{{.value}} has white space around it: write the decimal string without it, {{.plain}}",
	"decimal.plus":         "{{.value}} starts with a plus sign: a decimal string has a sign only when it is negative; write {{.plain}}",
	"decimal.exponent":     "{{.value}} is written with an exponent: a decimal string is plain digits; write {{.plain}}",
	"decimal.leading_zero": "{{.value}} has a leading zero: write {{.plain}}",
	"decimal.point":        "{{.value}} needs a digit on both sides of the decimal point: write {{.plain}}",
	"decimal.syntax":       "{{.value}} is not a decimal string: write an optional minus sign, digits, and optionally a point followed by digits, such as \"12.50\" (no plus sign, exponent, spaces or separators)",
	"number.inexact":       "{{.value}} is not an exact decimal: {{.detail}}",
	"number.infinite":      "{{.value}} is not a finite number",
	"number.digits":        "{{.value}} has more than {{.limit}} digits in plain form",
	"type.string":          "must be a string, not a JSON {{.got}}",
	"type.boolean":         "must be a JSON boolean (true or false), not a JSON {{.got}}",
	"type.number":          "must be {{if eq .type \"integer\"}}an{{else}}a{{end}} {{.type}} (a JSON number or a string holding one), not a JSON {{.got}}",
	"type.fraction":        "must be an integer: {{.value}} has a fractional part",
	"required.missing":     "required {{.type}} field is missing",
	"required.null":        "required {{.type}} field is null",
	"required.empty":       "required string field is empty",
	"unknown_field":        "unknown field: not declared by the action, remove it",
	"no_action":            "no action to validate the params against",
	"catalog.type":         "the catalog declares an unknown type {{.type}}",
	"catalog.normalizer":   "the catalog declares an unknown normalizer {{.normalizer}}",
}

// problemTexts returns the English texts of every problem code: ownTexts
// and each constraint's (catalog.Constraint.Texts), gathered at first use,
// after every constraint registered. The translations live in api/messages
// (problems.<lang>.yaml) under the same codes, with the same arguments; a
// test keeps the two in step.
var problemTexts = sync.OnceValue(func() map[string]string {
	texts := maps.Clone(ownTexts)
	for _, c := range catalog.Constraints() {
		maps.Copy(texts, c.Texts())
	}
	return texts
})

// parsedTexts are problemTexts parsed once.
var parsedTexts = sync.OnceValue(func() map[string]*template.Template {
	out := make(map[string]*template.Template, len(problemTexts()))
	for code, text := range problemTexts() {
		out[code] = template.Must(template.New(code).Option("missingkey=error").Parse(text))
	}
	return out
})

// ProblemCodes returns every problem code, sorted; each has an English
// text here and a translation in api/messages.
func ProblemCodes() []string { return slices.Sorted(maps.Keys(problemTexts())) }

// argRE finds the arguments a text uses: {{.name}}, also inside actions.
var argRE = regexp.MustCompile(`\.([a-z_]+)\b`)

// ProblemArgs returns the argument names the English text of code uses,
// sorted: a translation uses the same ones.
func ProblemArgs(code string) []string {
	seen := map[string]bool{}
	for _, m := range argRE.FindAllStringSubmatch(strings.Join(actionsOf(problemTexts()[code]), " "), -1) {
		seen[m[1]] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// actionsOf returns the {{...}} actions of a template text.
func actionsOf(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			return out
		}
		j := strings.Index(text[i:], "}}")
		if j < 0 {
			return out
		}
		out = append(out, text[i+2:i+j])
		text = text[i+j+2:]
	}
}

// newProblem builds the problem of field under rule with the English text
// of code filled with args (pairs of name and value).
func newProblem(field, rule, code, expected string, args ...string) FieldProblem {
	p := FieldProblem{Field: field, Rule: rule, Expected: expected, Code: code}
	if len(args) > 0 {
		p.Args = make(map[string]string, len(args)/2)
		for i := 0; i+1 < len(args); i += 2 {
			p.Args[args[i]] = args[i+1]
		}
	}
	var b strings.Builder
	if t, ok := parsedTexts()[code]; !ok {
		b.WriteString(code)
	} else if err := t.Execute(&b, p.Args); err != nil {
		b.Reset()
		fmt.Fprintf(&b, "%s %v", code, p.Args)
	}
	p.Problem = b.String()
	return p
}
