package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stored result's answer form is stringNumbersRaw's, kept for its bytes
// only: other bytes (another outcome's result) get their own form.
func TestResultFormsAreEachResultsOwn(t *testing.T) {
	t.Parallel()
	forms, err := newResultForms(8)
	require.NoError(t, err)
	for _, stored := range []string{
		`{"id":"tr_1","amount":12.50,"fees":[0.25,1e2]}`,
		`{"id":"tr_2","amount":7}`,
		`{"id":"tr_1","amount":12.50,"fees":[0.25,1e2]}`,
		`  `,
		`not json`,
	} {
		got := forms.of(json.RawMessage(stored))
		assert.Equal(t, string(stringNumbersRaw(json.RawMessage(stored))), string(got), stored)
	}
	assert.JSONEq(t, `{"id":"tr_1","amount":"12.50","fees":["0.25","1e2"]}`,
		string(forms.of(json.RawMessage(`{"id":"tr_1","amount":12.50,"fees":[0.25,1e2]}`))))
	assert.Equal(t, "null", string(forms.of(nil)), "no result is null")
	_, err = newResultForms(0)
	require.Error(t, err)
}

// A JSON string is answered with the bytes decoding and marshalling it
// write, whether stringNumbersRaw takes its plain-string shortcut or not.
func TestStringNumbersRawOfStringsIsMarshals(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`"memo"`, ` "memo" `, `""`, `"rent for may"`, `"a<b"`, `"a&b"`, `"a>b"`, `"é"`, `"\u00e9"`,
		`"a\"b"`, `"a\\b"`, `"\u2028"`, "\"tab\there\"", `"~"`, `"a"b"`, `"12.50"`, `12.50`, `"x" `,
	} {
		var want json.RawMessage
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			want = json.RawMessage(raw)
		} else {
			b, err := json.Marshal(StringNumbers(v))
			require.NoError(t, err)
			want = b
		}
		assert.Equal(t, string(want), string(stringNumbersRaw(json.RawMessage(raw))), raw)
	}
}
