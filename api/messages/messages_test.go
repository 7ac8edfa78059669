package messages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatalogsCoverSameKeys(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	en := c.Keys(English)
	require.NotEmpty(t, en)
	for _, lang := range Langs[1:] {
		assert.Equal(t, en, c.Keys(lang), "language %s must cover exactly the keys of en.yaml", lang)
	}
}

func TestEveryTextRenders(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	d := Data{
		OperationID: "0123456789abcdef0123456789abcdef", Scope: "payments.transfer",
		PreviewTool: "payments_transfer_preview", ConfirmTool: "payments_transfer_confirm",
		PollWith: "get_operation_status", PollAfterMS: 2000, PollAfterSeconds: "2",
		RetryAfterMS: 1000, RetryAfterSeconds: "1", State: "DONE", TraceID: "t", RetryLimit: 3,
		Field: "params", Expected: "object", Got: "503", Offset: 7, Err: "e",
	}
	for _, lang := range Langs {
		for _, key := range c.Keys(lang) {
			if strings.HasPrefix(key, FragmentPrefix) {
				text, err := c.Fragment(lang, key, d)
				require.NoError(t, err, "%s/%s", lang, key)
				assert.NotEmpty(t, text)
				assert.NotContains(t, text, "<no value>", "%s/%s", lang, key)
				_, _, err = c.Render(lang, key, d)
				assert.Error(t, err, "a fragment is not a status text")
				_, _, err = c.RenderInto(nil, lang, key, d)
				assert.Error(t, err, "a fragment is not a status text")
				continue
			}
			m, i, err := c.Render(lang, key, d)
			require.NoError(t, err, "%s/%s", lang, key)
			// RenderInto writes the same texts into a buffer of any room,
			// from its start.
			for _, room := range []int{0, 16, TextRoom} {
				buf := append(make([]byte, 0, room), "held"...)
				bm, bi, err := c.RenderInto(buf, lang, key, d)
				require.NoError(t, err, "%s/%s", lang, key)
				assert.Equal(t, m, string(bm), "%s/%s: meaning into %d bytes", lang, key, room)
				assert.Equal(t, i, string(bi), "%s/%s: instruction into %d bytes", lang, key, room)
			}
			assert.NotEmpty(t, m)
			assert.NotEmpty(t, i)
			assert.NotContains(t, m+i, "<no value>", "%s/%s", lang, key)
			assert.NotContains(t, m+i, "\n", "%s/%s must be one paragraph", lang, key)
		}
	}
	_, i, err := c.Render(English, "in_progress", d)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(i, "Do not call payments_transfer_confirm again"), i)
	assert.Contains(t, i, "Wait 2 seconds, then call get_operation_status")
}

func TestAWaitOfOneSecondIsSingular(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	for _, tt := range []struct {
		key  string
		d    Data
		want string
	}{
		{"temporarily_unavailable", Data{RetryAfterSeconds: "1", RetryLimit: 3}, "Wait 1 second, then"},
		{"temporarily_unavailable", Data{RetryAfterSeconds: "1.5", RetryLimit: 3}, "Wait 1.5 seconds, then"},
		{"rate_limited", Data{RetryAfterSeconds: "1", RetryLimit: 3}, "Wait 1 second (retry_after_ms"},
		{"in_progress", Data{PollAfterSeconds: "1", PollWith: "get_operation_status"}, "Wait 1 second, then call"},
		{"in_progress", Data{PollAfterSeconds: "10", PollWith: "get_operation_status"}, "Wait 10 seconds, then call"},
	} {
		_, i, err := c.Render(English, tt.key, tt.d)
		require.NoError(t, err)
		assert.Contains(t, i, tt.want, tt.key)
	}
}

func TestParseAcceptLanguage(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]Lang{
		"":                        English,
		"zh":                      Chinese,
		"zh-CN,zh;q=0.9,en;q=0.8": Chinese,
		"ZH-hant":                 Chinese,
		"en-US,zh;q=0.5":          English,
		"fr, zh-TW":               Chinese,
		"fr":                      English,
	} {
		assert.Equal(t, want, ParseAcceptLanguage(header), header)
	}
}

// TestFailedClaimsNothingExecutedOnlyWhenProved renders the failure texts
// for every failure kind: "no money moved" is said only for the kinds that
// prove it (a refusal, reconciliation after the processing window, a
// request never sent), and the other kinds tell the model not to claim it.
func TestFailedClaimsNothingExecutedOnlyWhenProved(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	claims := map[Lang]string{English: "no money moved", Chinese: "资金没有变动。"}
	warns := map[Lang]string{English: "Do not tell the user that nothing was executed", Chinese: "不要告诉用户"}
	for _, key := range []string{"failed", "already_failed"} {
		for kind, proved := range map[string]bool{
			"downstream_refused": true, "not_executed": true, "not_sent": true,
			"operator_decision": false, "": false,
		} {
			for _, lang := range Langs {
				m, i, err := c.Render(lang, key, Data{OperationID: "op", Reason: "r", FailureKind: kind, NothingExecuted: proved})
				require.NoError(t, err)
				name := fmt.Sprintf("%s/%s/%q", lang, key, kind)
				if proved {
					assert.Contains(t, m, claims[lang], name)
					assert.NotContains(t, i, warns[lang], name)
				} else {
					assert.NotContains(t, m, claims[lang], name)
					assert.Contains(t, i, warns[lang], name)
				}
			}
		}
	}
}

// RenderInto trims the texts as Render does: a YAML block keeps its last
// line's newline, which no answer shows.
func TestRenderIntoTrimsAsRender(t *testing.T) {
	t.Parallel()
	texts, err := parse(English, []byte("padded:\n  meaning: |\n    Ready: {{.Scope}}.\n  instruction: \"  Call {{.ConfirmTool}}. \\n\"\n"))
	require.NoError(t, err)
	c := &Catalog{texts: map[Lang]map[string]entry{English: texts}}
	d := Data{Scope: "payments.transfer", ConfirmTool: "payments_transfer_confirm"}
	m, i, err := c.Render(English, "padded", d)
	require.NoError(t, err)
	assert.Equal(t, "Ready: payments.transfer.", m)
	assert.Equal(t, "Call payments_transfer_confirm.", i)
	bm, bi, err := c.RenderInto(make([]byte, 0, TextRoom), English, "padded", d)
	require.NoError(t, err)
	assert.Equal(t, m, string(bm))
	assert.Equal(t, i, string(bi))
}
