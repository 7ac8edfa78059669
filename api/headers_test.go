package api

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/telemetry"
)

// The response headers of the hot answers, pinned whole (keys, values and
// their order): rendering and the trace middleware may be made cheaper,
// never different.

// traceIDPattern and spanIDPattern match a trace id (32 hex digits) and a span id (16).
var (
	traceIDPattern = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	spanIDPattern  = regexp.MustCompile(`\b[0-9a-f]{16}\b`)
)

// headerShape is h with every trace id written T and every span id S, and
// the trace id of X-Trace-Id checked against Traceparent's and the body's.
func headerShape(t *testing.T, h http.Header, body string) http.Header {
	t.Helper()
	traceID := h.Get("X-Trace-Id")
	require.Len(t, traceID, 32)
	assert.Equal(t, "00-"+traceID+"-", h.Get("Traceparent")[:36])
	assert.Contains(t, body, `"trace_id":"`+traceID+`"`)
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			v = traceIDPattern.ReplaceAllString(v, "T")
			out[k] = append(out[k], spanIDPattern.ReplaceAllString(v, "S"))
		}
	}
	return out
}

// answerHeaders serves req and returns its headers' shape.
func answerHeaders(t *testing.T, b *bundle, req *http.Request) http.Header {
	t.Helper()
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	return headerShape(t, rec.Header(), rec.Body.String())
}

func TestAnswerHeaders(t *testing.T) {
	t.Parallel()
	for _, exporting := range []bool{false, true} {
		b := setupWith(t, func(o *Options) {
			if exporting {
				o.Config.Telemetry = telemetry.Config{Endpoint: "http://127.0.0.1:1"}
			}
		})
		base := http.Header{"Content-Type": {"application/json"}, "Content-Language": {"en"},
			"Traceparent": {"00-T-S-01"}, "X-Trace-Id": {"T"}}
		with := func(kv ...string) http.Header {
			h := base.Clone()
			for i := 0; i+1 < len(kv); i += 2 {
				h[kv[i]] = []string{kv[i+1]}
			}
			return h
		}
		body := `{"params":` + transferParams + `}`
		assert.Equal(t, base, answerHeaders(t, b, benchRequest("POST", "/v1/actions/payments.legacy_transfer/preview", body)))

		opID, confirmBody := benchCompleted(t, b)
		replay := benchRequest("POST", "/v1/actions/payments.legacy_transfer/confirm", confirmBody)
		assert.Equal(t, with(HeaderReplayed, "true"), answerHeaders(t, b, replay))
		assert.Equal(t, base, answerHeaders(t, b, benchRequest("GET", "/v1/operations/"+opID, "")))

		zh := benchRequest("GET", "/v1/operations/"+opID, "")
		zh.Header.Set("Accept-Language", "zh-CN")
		assert.Equal(t, with("Content-Language", "zh"), answerHeaders(t, b, zh))

		unauth := httptest.NewRequest("GET", "/v1/operations/"+opID, nil)
		assert.Equal(t, with("Www-Authenticate", `Bearer realm="oncegate"`), answerHeaders(t, b, unauth))

		traced := benchRequest("GET", "/v1/operations/"+opID, "")
		traced.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
		traced.Header.Set("Tracestate", "vendor=x")
		h := answerHeaders(t, b, traced)
		assert.Equal(t, with("Traceparent", "00-T-S-00", "Tracestate", "vendor=x"), h)
	}
}
