package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

func TestExportingOnlyWithAnEndpoint(t *testing.T) {
	assert.False(t, Config{}.Exporting())
	assert.True(t, Config{Endpoint: "http://127.0.0.1:4318"}.Exporting())
	assert.True(t, Config{TracesEndpoint: "http://127.0.0.1:4318/v1/traces"}.Exporting())

	tp, err := NewTracerProvider(context.Background(), "test", Config{})
	require.NoError(t, err)
	require.NoError(t, tp.Shutdown(context.Background()))
}

func TestContinue(t *testing.T) {
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	for name, tc := range map[string]struct {
		traceparent string
		sameTrace   bool
		sampled     bool
	}{
		"a caller's sampled trace":     {"00-" + caller + "-00f067aa0ba902b7-01", true, true},
		"a caller's unsampled trace":   {"00-" + caller + "-00f067aa0ba902b7-00", true, false},
		"no traceparent":               {"", false, true},
		"an invalid all-zero trace id": {"00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01", false, true},
	} {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			if tc.traceparent != "" {
				h.Set("Traceparent", tc.traceparent)
			}
			sc := trace.SpanContextFromContext(Continue(context.Background(), h))
			require.True(t, sc.IsValid())
			assert.Equal(t, tc.sameTrace, sc.TraceID().String() == caller)
			assert.NotEqual(t, "00f067aa0ba902b7", sc.SpanID().String(), "a span id of its own")
			assert.Equal(t, tc.sampled, sc.IsSampled())
			assert.False(t, sc.IsRemote())
		})
	}
	a := trace.SpanContextFromContext(Continue(context.Background(), http.Header{}))
	b := trace.SpanContextFromContext(Continue(context.Background(), http.Header{}))
	assert.NotEqual(t, a.TraceID(), b.TraceID(), "each request a trace of its own")
}
