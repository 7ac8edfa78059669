package messages

import (
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/params"
)

// TestProblemTranslations: every problem code of internal/params has a text in
// every other language, using the English text's arguments and no others,
// and no language translates a code that does not exist.
func TestProblemTranslations(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	codes := params.ProblemCodes()
	for _, lang := range Langs[1:] {
		assert.Equal(t, codes, c.ProblemCodes(lang), "%s: translated codes", lang)
		for _, code := range codes {
			args := map[string]string{}
			for _, a := range params.ProblemArgs(code) {
				args[a] = "<" + a + ">"
			}
			text, ok := c.Problem(lang, code, args)
			require.Truef(t, ok, "%s %s renders with args %v", lang, code, args)
			assert.Truef(t, hasHan(text), "%s %s: %q", lang, code, text)
			for _, a := range params.ProblemArgs(code) {
				if a != "type" || code != "type.number" {
					assert.Containsf(t, text, "<"+a+">", "%s %s shows %s", lang, code, a)
				}
			}
		}
	}
	_, ok := c.Problem(English, "min", map[string]string{"limit": "1", "value": "0"})
	assert.False(t, ok, "English is the problem's own text")
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}
