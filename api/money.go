package api

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Every decimal an answer carries is a JSON string ("12.5", never 12.5),
// so that no client reads money as a binary float (docs/contract.md §4). The
// gateway knows the bound and free decimals from the catalog; what the
// downstream answers (a quote, a result) has no declared types, so every
// number in it is written as a string of its exact text. Only the values'
// notation changes in answers: what is hashed, stored and sent downstream
// stays as it was.

// stringNumbers returns v with every number (json.Number or float64) at any
// depth replaced by its exact text as a string. Maps and slices are copied.
func stringNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return string(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = stringNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = stringNumbers(e)
		}
		return out
	case map[string]json.RawMessage:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = stringNumbersRaw(e)
		}
		return out
	}
	return v
}

// stringNumbersRaw is stringNumbers for raw JSON: the numbers of raw become
// strings of their exact text. JSON that does not parse is returned as it is.
func stringNumbersRaw(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := json.Marshal(stringNumbers(v))
	if err != nil {
		return raw
	}
	return out
}
