package api

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// TestRetryAfterEqualsTheBodysWait walks the status registry: every status
// that asks to come back (it polls or tells when to retry) carries the
// Retry-After header, in whole seconds rounded up, equal to its body's
// wait; no other status carries it.
func TestRetryAfterEqualsTheBodysWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := echo.New()
	waits := 0
	for _, st := range status.All() {
		for _, wait := range []time.Duration{0, 1500 * time.Millisecond, 2 * time.Second, 1} {
			r := gateway.NewAnswer(st)
			r.RetryAfter, r.PollAfter = wait, wait
			rec := httptest.NewRecorder()
			c := e.NewContext(httptest.NewRequest("GET", "/", nil), rec)
			require.NoError(t, b.srv.render(c, r))
			var body map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			info, _ := status.Lookup(st)
			header := rec.Header().Get(HeaderRetryAfter)
			if !info.Wait() {
				assert.Empty(t, header, "%s asks nobody to come back", st)
				continue
			}
			field := "poll_after_ms"
			if info.RetryAfter {
				field = "retry_after_ms"
			}
			ms, ok := body[field].(float64)
			require.True(t, ok, "%s carries %s: %s", st, field, rec.Body.String())
			want := int64(ms+999) / 1000
			assert.Equal(t, strconv.FormatInt(want, 10), header, "%s: %s %v ms", st, field, ms)
			if wait >= time.Millisecond {
				assert.Equal(t, float64(wait.Milliseconds()), ms, "%s: the reply's own wait", st)
			}
			waits++
		}
	}
	assert.GreaterOrEqual(t, waits, 5*4, "in_progress, needs_manual_review, temporarily_unavailable, not_ready, rate_limited")
}
