package api

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/plainjson"
)

// preview writes v as encoding/json writes its AsMap, and reports whether it
// did: the members sorted (free, params, quote, scope); a bound value that
// is a string, a number (as a string) or a boolean and a free value that
// is a plain string (writePlain) are written directly; anything else
// leaves v to the encoder, like bodyWriter.value.
func (w bodyWriter) preview(v gateway.PreviewView) bool {
	w.b.WriteString(`{"free":{`)
	var room [bodyKeys]string
	for i, k := range sortedKeys(room[:0], v.Free) {
		raw := bytes.TrimSpace(v.Free[k])
		n := len(raw)
		if n < 2 || raw[0] != '"' || raw[n-1] != '"' || !plainjson.Plain(raw[1:n-1]) {
			return false
		}
		w.member(i, k)
		w.b.Write(raw)
	}
	w.b.WriteString(`},"params":{`)
	for i, k := range sortedKeys(room[:0], v.Params) {
		w.member(i, k)
		switch t := v.Params[k].(type) {
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
	if v.Quote != nil {
		w.b.WriteString(`,"quote":`)
		if !w.value(gateway.StringNumbers(v.Quote)) {
			return false
		}
	}
	w.b.WriteString(`,"scope":`)
	w.string(v.Scope)
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
