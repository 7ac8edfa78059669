package api

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// previewView is the body's preview of a preview_ready answer: the action,
// its normalized bound params and its free params, and the downstream's
// quote when there is one, every number as a string of its exact text. It
// keeps the maps as Bind and the quote left them: the body writes it
// directly (bodyWriter.preview), without copying them as stringNumbers
// would, and anything else encodes it through MarshalJSON, which writes the
// same bytes.
type previewView struct {
	// scope is the action.
	scope string
	// params are the normalized bound params.
	params map[string]any
	// free are the free params as the agent wrote them.
	free map[string]json.RawMessage
	// quote is the downstream's quote; nil when the action has none.
	quote map[string]any
}

// asMap is the view as a map with numbers as strings (stringNumbers): what
// it encodes to.
func (v previewView) asMap() map[string]any {
	m := map[string]any{"scope": v.scope, "params": stringNumbers(v.params), "free": stringNumbers(v.free)}
	if v.quote != nil {
		m["quote"] = stringNumbers(v.quote)
	}
	return m
}

// MarshalJSON encodes the view as its map.
func (v previewView) MarshalJSON() ([]byte, error) { return json.Marshal(v.asMap()) }

// preview writes v as encoding/json writes asMap, and reports whether it
// did: the members sorted (free, params, quote, scope); a bound value that
// is a string, a number (as a string) or a boolean and a free value that
// is a plain string (writePlain) are written directly; anything else
// leaves v to the encoder, like bodyWriter.value.
func (w bodyWriter) preview(v previewView) bool {
	w.b.WriteString(`{"free":{`)
	var room [bodyKeys]string
	for i, k := range sortedKeys(room[:0], v.free) {
		raw := bytes.TrimSpace(v.free[k])
		n := len(raw)
		if n < 2 || raw[0] != '"' || raw[n-1] != '"' || !plain(raw[1:n-1]) {
			return false
		}
		w.member(i, k)
		w.b.Write(raw)
	}
	w.b.WriteString(`},"params":{`)
	for i, k := range sortedKeys(room[:0], v.params) {
		w.member(i, k)
		switch t := v.params[k].(type) {
		case string:
			w.string(t)
		case json.Number:
			w.string(string(t))
		case bool:
			w.b.WriteString(strconv.FormatBool(t))
		default:
			return false
		}
	}
	w.b.WriteByte('}')
	if v.quote != nil {
		w.b.WriteString(`,"quote":`)
		if !w.value(stringNumbers(v.quote)) {
			return false
		}
	}
	w.b.WriteString(`,"scope":`)
	w.string(v.scope)
	w.b.WriteByte('}')
	return true
}

// member writes the key of an object's i-th member k, with the comma
// before it.
func (w bodyWriter) member(i int, k string) {
	if i > 0 {
		w.b.WriteByte(',')
	}
	w.string(k)
	w.b.WriteByte(':')
}
