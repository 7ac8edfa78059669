package combined

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
)

// TestDecideRelease covers every path of Release: every answer of the
// truth's Release, and every answer of Redis's where the truth leads to it.
func TestDecideRelease(t *testing.T) {
	t.Parallel()
	names := map[releaseCall]string{releaseAskTruth: "truth.Release", releaseAskFast: "fast.Release"}
	paths := decidetest.Explore(t,
		func(in releaseFacts) (releaseCall, bool) {
			p := decideRelease(in)
			return p.Ask, p.Ask == releaseDecided
		},
		func(in releaseFacts, c releaseCall, a answer) releaseFacts {
			switch c {
			case releaseAskTruth:
				in.Truth = a
			case releaseAskFast:
				in.Fast = a
			case releaseDecided:
			}
			return in
		},
		func(c releaseCall) (string, []option) { return names[c], callAnswers(names[c], c == releaseAskFast) })

	// want is Release's answer: the error's whole text ("" for nil), and
	// the text of the Redis error that is only logged.
	type want struct {
		err     string
		ignored string
	}
	released := want{}
	ignored := func(text string) want { return want{ignored: "fast.Release: " + text} }
	truthErr := func(text string) want { return want{err: "truth: truth.Release: " + text} }
	notFound := truthErr(textNotFound)
	notFoundIgnored := func(text string) want { w := ignored(text); w.err = notFound.err; return w }
	tests := map[string]want{
		// The truth holds the claim under another owner, or cannot answer.
		"truth.Release=not owner":        truthErr(textNotOwner),
		"truth.Release=already terminal": truthErr(textTerminal),
		"truth.Release=unavailable":      truthErr(textUnavailable),
		"truth.Release=failed":           truthErr(textDiskFull),

		// Released on the truth: Redis follows, or its failure is only logged.
		"truth.Release=ok → fast.Release=ok":               released,
		"truth.Release=ok → fast.Release=skipped":          released,
		"truth.Release=ok → fast.Release=not found":        ignored(textNotFound),
		"truth.Release=ok → fast.Release=not owner":        ignored(textNotOwner),
		"truth.Release=ok → fast.Release=already terminal": ignored(textTerminal),
		"truth.Release=ok → fast.Release=unavailable":      ignored(textUnavailable),
		"truth.Release=ok → fast.Release=failed":           ignored(textDiskFull),

		// The truth has no claim: one only Redis holds is released there;
		// otherwise the truth's ErrNotFound (Redis's failure logged, but not
		// another owner's claim, nor a degraded store's).
		"truth.Release=not found → fast.Release=ok":               released,
		"truth.Release=not found → fast.Release=skipped":          notFound,
		"truth.Release=not found → fast.Release=not owner":        notFound,
		"truth.Release=not found → fast.Release=not found":        notFoundIgnored(textNotFound),
		"truth.Release=not found → fast.Release=already terminal": notFoundIgnored(textTerminal),
		"truth.Release=not found → fast.Release=unavailable":      notFoundIgnored(textUnavailable),
		"truth.Release=not found → fast.Release=failed":           notFoundIgnored(textDiskFull),
	}
	require.ElementsMatch(t, decidetest.Keys(tests), decidetest.Keys(paths), "the table covers every path, and only those")

	for key, in := range paths {
		w := tests[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			p := decideRelease(in)
			require.Equal(t, releaseDecided, p.Ask)
			if w.ignored == "" {
				assert.NoError(t, p.Ignored, "nothing ignored")
			} else {
				assert.Same(t, in.Fast.Err, p.Ignored, "Redis's own error is logged")
				assert.EqualError(t, p.Ignored, w.ignored)
			}
			if w.err == "" {
				assert.NoError(t, p.Err)
				return
			}
			require.EqualError(t, p.Err, w.err)
			assert.Same(t, in.Truth.Err, errors.Unwrap(p.Err), "the truth's own error is answered")
		})
	}
}

// TestDecideReleaseSkippedTruthIsUnexpected: only the fast path is ever
// skipped, so a truth answered replySkipped is an error, never an answer.
func TestDecideReleaseSkippedTruthIsUnexpected(t *testing.T) {
	t.Parallel()
	p := decideRelease(releaseFacts{Truth: answer{Reply: replySkipped}})
	require.Equal(t, releaseDecided, p.Ask)
	assert.ErrorIs(t, p.Err, errTruthAnswer)
	assert.NotErrorIs(t, p.Err, idemstore.ErrNotFound)
}
