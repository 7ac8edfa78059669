package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// integerFields are the only members of an answer that may be JSON
// numbers: millisecond counts, never money. Every decimal is a string
// (docs/contract.md §4), and so is every number the downstream answered.
var integerFields = []string{"poll_after_ms", "retry_after_ms"}

// numbersIn returns the path of every JSON number in raw, except the
// members named by integerFields at the top level.
func numbersIn(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoErrorf(t, dec.Decode(&v), "answer is not JSON: %s", raw)
	var out []string
	var walk func(path string, v any, top bool)
	walk = func(path string, v any, top bool) {
		switch t := v.(type) {
		case json.Number:
			out = append(out, fmt.Sprintf("%s=%s", path, t))
		case map[string]any:
			for k, e := range t {
				if top && slices.Contains(integerFields, k) {
					continue
				}
				walk(path+"."+k, e, false)
			}
		case []any:
			for i, e := range t {
				walk(path+"["+strconv.Itoa(i)+"]", e, false)
			}
		}
	}
	walk("", v, true)
	return out
}

// assertNoNumbers fails when an answer carries a decimal (or any number
// but the millisecond counts) as a JSON number.
func assertNoNumbers(t testing.TB, raw []byte, what string) {
	t.Helper()
	assert.Emptyf(t, numbersIn(t, raw), "%s: numbers must be strings in answers: %s", what, raw)
}

func TestNumbersIn(t *testing.T) {
	t.Parallel()
	assert.Empty(t, numbersIn(t, []byte(`{"poll_after_ms":2000,"preview":{"params":{"amount":"12.5"}}}`)))
	assert.Equal(t, []string{".preview.params.amount=12.5"}, numbersIn(t, []byte(`{"preview":{"params":{"amount":12.5}}}`)))
	assert.Equal(t, []string{".result.fees[0].poll_after_ms=1"}, numbersIn(t, []byte(`{"result":{"fees":[{"poll_after_ms":1}]}}`)))
}
