package messages

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownOperationPointsToTheSafeRetry: a previewed operation whose
// confirm was lost is unknown to the status tool, and the preview already
// named its operation_id; the answer must send the agent to the one safe
// retry (the same confirm, same fingerprint), not away from it.
func TestUnknownOperationPointsToTheSafeRetry(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	want := map[Lang]struct{ meaning, instruction []string }{
		English: {[]string{"preview alone starts nothing", "never confirmed"},
			[]string{"same fingerprint and the same params", "preview or confirm answer", "fingerprint has expired"}},
		Chinese: {[]string{"仅有预览不会启动任何东西", "从未被确认"},
			[]string{"同一个指纹和同样的参数", "从预览或确认的回答中", "指纹已过期"}},
	}
	for lang, w := range want {
		m, i, err := c.Render(lang, "unknown_operation", Data{OperationID: "0123456789abcdef0123456789abcdef"})
		require.NoError(t, err)
		for _, s := range w.meaning {
			assert.Contains(t, m, s, lang)
		}
		for _, s := range w.instruction {
			assert.Contains(t, i, s, lang)
		}
		assert.NotContains(t, i, "Do not call a confirm tool", lang)
		assert.NotContains(t, i, "从确认响应中原样复制", lang)
	}
}
