package benche2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuardAnswersReadsEachLabel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/metrics", r.URL.Path)
		_, _ = w.Write([]byte(`# HELP oncegate_amnesia_guard_answers_total who answered
# TYPE oncegate_amnesia_guard_answers_total counter
oncegate_amnesia_guard_answers_total{by="index"} 41
oncegate_amnesia_guard_answers_total{by="truth"} 3
oncegate_amnesia_guard_answers_total_created{by="index"} 1.7e+09
`))
	}))
	t.Cleanup(srv.Close)
	g, err := newGateway([]string{srv.URL}, devToken, srv.Client())
	require.NoError(t, err)
	got, err := g.guardAnswers(context.Background())
	require.NoError(t, err)
	assert.Equal(t, guardCounts{index: 41, truth: 3}, got)

	// Two gateways (the production-like profile's): each one's answers count.
	two, err := newGateway([]string{srv.URL, srv.URL}, devToken, srv.Client())
	require.NoError(t, err)
	got, err = two.guardAnswers(context.Background())
	require.NoError(t, err)
	assert.Equal(t, guardCounts{index: 82, truth: 6}, got)
}
