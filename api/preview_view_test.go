package api

import (
	"encoding/json"
	"testing"

	"github.com/oncegate/oncegate/gateway"
	"github.com/stretchr/testify/require"
)

// oldPreview is the preview as the handler built it before gateway.PreviewView:
// the oracle gateway.PreviewView's bytes are checked against.
func oldPreview(v gateway.PreviewView) map[string]any {
	preview := map[string]any{"scope": v.Scope, "params": gateway.StringNumbers(v.Params), "free": gateway.StringNumbers(v.Free)}
	if v.Quote != nil {
		preview["quote"] = gateway.StringNumbers(v.Quote)
	}
	return preview
}

// requireOldBytes requires that the body of v, written directly or
// through the encoder, is the body of oldPreview(v), byte for byte.
func requireOldBytes(t *testing.T, v gateway.PreviewView) {
	t.Helper()
	fields := map[string]any{"preview": v, "fingerprint": "f.p", "expires_at": "2026-01-02T03:04:05Z"}
	old := map[string]any{"preview": oldPreview(v), "fingerprint": "f.p", "expires_at": "2026-01-02T03:04:05Z"}
	want := marshalEach("preview_ready", "m", "i", false, "0af7651916cd43dd8448eb211c80319c", "0123456789abcdef0123456789abcdef", old)
	got := bodyOf("preview_ready", "m", "i", false, "0af7651916cd43dd8448eb211c80319c", "0123456789abcdef0123456789abcdef", fields)
	require.Equal(t, string(want), string(got))
	wantJSON, wantErr := json.Marshal(oldPreview(v))
	gotJSON, gotErr := json.Marshal(v)
	require.Equal(t, wantErr == nil, gotErr == nil, "%v, %v", wantErr, gotErr)
	require.Equal(t, string(wantJSON), string(gotJSON))
}

// The preview of a preview_ready answer is written as the handler's map of
// it was: directly when its values allow, else through the encoder, the
// same bytes either way.
func TestPreviewViewWritesTheOldBytes(t *testing.T) {
	t.Parallel()
	transfer := map[string]any{"amount": json.Number("12.5"), "currency": "USD", "payee_id": "p-1"}
	for name, v := range map[string]gateway.PreviewView{
		"transfer":           {Scope: "payments.legacy_transfer", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`"rent"`)}},
		"no free":            {Scope: "payments.transfer", Params: transfer, Free: map[string]json.RawMessage{}},
		"nil maps":           {Scope: "payments.transfer"},
		"several free":       {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"z": json.RawMessage(`"1"`), "a": json.RawMessage(`"2"`), "m": json.RawMessage(`""`)}},
		"free spaced":        {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(" \"rent\"\n")}},
		"free html":          {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`"<b>&"`)}},
		"free escaped":       {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`"a\"b\u00e9"`)}},
		"free unicode":       {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`"预览 é"`)}},
		"free number":        {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"tip": json.RawMessage(`1.50`)}},
		"free object":        {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"meta": json.RawMessage(`{ "b" : 2e3, "a": [1, "x"] }`)}},
		"free bool and null": {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"t": json.RawMessage(`true`), "n": json.RawMessage(`null`)}},
		"free key html":      {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"<k>": json.RawMessage(`"v"`)}},
		"free key unicode":   {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"é": json.RawMessage(`"v"`), "z": json.RawMessage(`"w"`)}},
		"params kinds": {Scope: "s", Params: map[string]any{"b": true, "f": false, "n": json.Number("-0.001"), "s": "x<y",
			"u": "预览", "é": "key", "Z": "upper"}, Free: map[string]json.RawMessage{}},
		"params other kind": {Scope: "s", Params: map[string]any{"f": 1.25, "i": int64(3), "nil": nil}, Free: map[string]json.RawMessage{}},
		"scope html":        {Scope: "a<b>&c", Params: transfer, Free: map[string]json.RawMessage{}},
		"quote": {Scope: "payments.fx", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`"rent"`)},
			Quote: map[string]any{"rate": json.Number("1.0842"), "fee": 0.5, "ok": true, "legs": []any{json.Number("1"), "x"},
				"nested": map[string]any{"n": json.Number("2"), "s": "<"}}},
		"empty quote":   {Scope: "payments.fx", Params: transfer, Free: map[string]json.RawMessage{}, Quote: map[string]any{}},
		"free not JSON": {Scope: "s", Params: transfer, Free: map[string]json.RawMessage{"memo": json.RawMessage(`{"a":`)}},
		"quote unencodable": {Scope: "payments.fx", Params: transfer, Free: map[string]json.RawMessage{},
			Quote: map[string]any{"bad": func() {}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireOldBytes(t, v)
		})
	}
}

// The bytes stay the old ones for any free params and any bound string,
// number or key.
func FuzzPreviewView(f *testing.F) {
	f.Add(`{"memo":"rent"}`, "amount", "12.5", "USD", "payments.legacy_transfer", true)
	f.Add(`{"memo":"<b>","tip":1.5,"meta":{"a":[1,null]}}`, "é", "-0", "预览", "s", false)
	f.Add(`{"a":"x\u2028y","b":"\ud83d\ude00"}`, "<k>", "1e3", "a\"b", "", true)
	f.Fuzz(func(t *testing.T, free, key, number, text, scope string, flag bool) {
		var members map[string]json.RawMessage
		if json.Unmarshal([]byte(free), &members) != nil {
			// Not an object, or not JSON at all: the old map failed to
			// encode, and the answer said why, in the same words.
			members = map[string]json.RawMessage{"memo": json.RawMessage(free)}
		}
		params := map[string]any{key: text, key + "n": json.Number(number), key + "b": flag}
		requireOldBytes(t, gateway.PreviewView{Scope: scope, Params: params, Free: members})
	})
}
