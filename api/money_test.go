package api

import (
	"encoding/json"
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
