package telemetry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TestHeaderCarrierIsHeaderCarrier: the carrier gets and sets what
// propagation.HeaderCarrier does, whatever the key's case.
func TestHeaderCarrierIsHeaderCarrier(t *testing.T) {
	for _, key := range []string{"traceparent", "tracestate", "Traceparent", "TRACESTATE", "baggage", "x-other"} {
		h := http.Header{"Traceparent": {"tp", "tp2"}, "Tracestate": {"ts"}, "Baggage": {"b"}}
		assert.Equal(t, propagation.HeaderCarrier(h).Get(key), headerCarrier(h).Get(key), key)
		want, got := h.Clone(), h.Clone()
		propagation.HeaderCarrier(want).Set(key, "v")
		headerCarrier(got).Set(key, "v")
		assert.Equal(t, want, got, key)
		assert.ElementsMatch(t, propagation.HeaderCarrier(h).Keys(), headerCarrier(h).Keys())
	}
	assert.Empty(t, headerCarrier(http.Header{}).Get("traceparent"))
}

// TestEchoIsInjectAndTraceID: Echo writes the headers Propagator.Inject
// writes through propagation.HeaderCarrier and returns TraceID, for any
// span context: none, every flag byte, with and without a tracestate.
func TestEchoIsInjectAndTraceID(t *testing.T) {
	state, err := trace.ParseTraceState("vendor=x,other=y")
	require.NoError(t, err)
	contexts := []context.Context{context.Background(),
		trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID()}))}
	for flags := range 256 {
		for _, ts := range []trace.TraceState{{}, state} {
			sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID(),
				TraceFlags: trace.TraceFlags(flags), TraceState: ts, Remote: rand.IntN(2) == 0})
			contexts = append(contexts, trace.ContextWithSpanContext(context.Background(), sc))
		}
	}
	for _, ctx := range contexts {
		want, got := http.Header{"X-Other": {"o"}}, http.Header{"X-Other": {"o"}}
		Propagator.Inject(ctx, propagation.HeaderCarrier(want))
		assert.Equal(t, TraceID(ctx), Echo(ctx, got))
		assert.Equal(t, want, got)
	}
}
