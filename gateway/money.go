package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/oncegate/oncegate/internal/plainjson"
)

// Every decimal an answer carries is a JSON string ("12.5", never 12.5),
// so that no client reads money as a binary float (docs/contract.md §4). The
// gateway knows the bound and free decimals from the catalog; what the
// downstream answers (a quote, a result) has no declared types, so every
// number in it is written as a string of its exact text. Only the values'
// notation changes in answers: what is hashed, stored and sent downstream
// stays as it was.

// StringNumbers returns v with every number (json.Number or float64) at any
// depth replaced by its exact text as a string. Maps and slices are copied.
func StringNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return string(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = StringNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = StringNumbers(e)
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

// stringNumbersRaw is StringNumbers for raw JSON: the numbers of raw become
// strings of their exact text. JSON that does not parse is returned as it is.
func stringNumbersRaw(raw json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return raw
	}
	if n := len(trimmed); n >= 2 && trimmed[0] == '"' && trimmed[n-1] == '"' && plainjson.Plain(trimmed[1:n-1]) {
		return trimmed // a plain string (a memo): what decoding and marshalling it write
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := json.Marshal(StringNumbers(v))
	if err != nil {
		return raw
	}
	return out
}

// resultFormsSize is how many stored results' answer forms a gateway keeps
// (the outcomes replayed or polled most recently).
const resultFormsSize = 4096

// resultForms keeps the answer form (stringNumbersRaw) of stored results,
// keyed by the SHA-256 of the stored bytes: a terminal outcome's result never
// changes, so its replays and status polls do not decode and encode it again,
// and other bytes never get another result's form. Bounded (least recently
// used out first) and safe for concurrent use; a form it returns is shared
// and never changed.
type resultForms struct {
	forms *lru.Cache[[sha256.Size]byte, json.RawMessage]
}

// newResultForms returns a resultForms of at most size forms.
func newResultForms(size int) (*resultForms, error) {
	forms, err := lru.New[[sha256.Size]byte, json.RawMessage](size)
	if err != nil {
		return nil, fmt.Errorf("result forms: %w", err)
	}
	return &resultForms{forms: forms}, nil
}

// of returns stringNumbersRaw(stored), "null" for no result.
func (r *resultForms) of(stored json.RawMessage) json.RawMessage {
	if len(stored) == 0 {
		return json.RawMessage("null")
	}
	key := sha256.Sum256(stored)
	if form, ok := r.forms.Get(key); ok {
		return form
	}
	form := stringNumbersRaw(stored)
	if len(form) == 0 {
		form = json.RawMessage("null")
	}
	r.forms.Add(key, form)
	return form
}
