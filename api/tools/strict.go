package tools

import (
	"maps"
	"slices"
	"strconv"
)

// StrictKeywords are the JSON Schema keywords a strict-mode schema keeps:
// the subset OpenAI's strict function calling supports that the tools use.
// Every other keyword is dropped (and its meaning kept in a pattern or a
// description, as for maxLength).
var StrictKeywords = []string{"type", "description", "properties", "required", "additionalProperties", "enum", "pattern", "anyOf"}

// Strict returns schema rewritten for OpenAI's strict mode (Structured
// Outputs): every object lists all its properties as required and has
// additionalProperties false; a property that was optional accepts null
// through anyOf [{...}, {"type":"null"}] — no type union such as
// ["string","null"], which strict JSON Schema validators (Ajv's strictTypes)
// refuse; a string's minLength and maxLength become its pattern when it has
// none (the description already states the limit); no other keyword is
// kept. The gateway treats null as absent, so a model that fills every
// field with null where it has nothing calls the tool correctly.
func Strict(schema map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range StrictKeywords {
		if v, ok := schema[k]; ok {
			out[k] = v
		}
	}
	if schema["type"] == "string" {
		if _, has := out["pattern"]; !has {
			if p := lengthPattern(schema); p != "" {
				out["pattern"] = p
			}
		}
	}
	if anyOf, ok := schema["anyOf"].([]any); ok {
		strictOf := make([]any, len(anyOf))
		for i, s := range anyOf {
			if m, ok := s.(map[string]any); ok {
				strictOf[i] = Strict(m)
			} else {
				strictOf[i] = s
			}
		}
		out["anyOf"] = strictOf
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		return out
	}
	required := map[string]bool{}
	switch r := schema["required"].(type) {
	case []string:
		for _, n := range r {
			required[n] = true
		}
	case []any:
		for _, n := range r {
			if s, ok := n.(string); ok {
				required[s] = true
			}
		}
	}
	strictProps := make(map[string]any, len(props))
	for name, p := range props {
		ps, ok := p.(map[string]any)
		if !ok {
			strictProps[name] = p
			continue
		}
		sp := Strict(ps)
		if !required[name] {
			sp = nullable(sp)
		}
		strictProps[name] = sp
	}
	out["properties"] = strictProps
	out["required"] = slices.Sorted(maps.Keys(props))
	out["additionalProperties"] = false
	return out
}

// nullable wraps s so that null is accepted too; the description moves to
// the wrapper.
func nullable(s map[string]any) map[string]any {
	inner := maps.Clone(s)
	out := map[string]any{}
	if d, ok := inner["description"].(string); ok {
		delete(inner, "description")
		out["description"] = d + " Send null to leave it out."
	}
	out["anyOf"] = []any{inner, map[string]any{"type": "null"}}
	return out
}

// lengthPattern returns an anchored pattern for a string's minLength and
// maxLength, or "" when it has neither.
func lengthPattern(s map[string]any) string {
	lo, hasLo := intKeyword(s["minLength"])
	hi, hasHi := intKeyword(s["maxLength"])
	switch {
	case hasLo && hasHi:
		return `^[\s\S]{` + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}$"
	case hasHi:
		return `^[\s\S]{0,` + strconv.Itoa(hi) + "}$"
	case hasLo:
		return `^[\s\S]{` + strconv.Itoa(lo) + ",}$"
	}
	return ""
}

func intKeyword(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	}
	return 0, false
}
