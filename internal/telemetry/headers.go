package telemetry

import (
	"context"
	"net/http"
	"net/textproto"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// headerCarrier is propagation.HeaderCarrier that knows the W3C trace
// context's keys (traceparent, tracestate) in their canonical forms, so that
// the trace of every request is read and written without canonicalising
// (and allocating) those keys again. It gets and sets exactly what
// propagation.HeaderCarrier does.
type headerCarrier http.Header

// canonicalKey is textproto.CanonicalMIMEHeaderKey(key), without its work
// for the trace context's own keys.
func canonicalKey(key string) string {
	switch key {
	case "traceparent":
		return "Traceparent"
	case "tracestate":
		return "Tracestate"
	}
	return textproto.CanonicalMIMEHeaderKey(key)
}

// Get returns the first value of key, or "".
func (c headerCarrier) Get(key string) string {
	if v := c[canonicalKey(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set makes value the only value of key.
func (c headerCarrier) Set(key, value string) {
	c[canonicalKey(key)] = []string{value}
}

// Keys lists the keys of the headers.
func (c headerCarrier) Keys() []string {
	return propagation.HeaderCarrier(c).Keys()
}

// traceparentSize is the length of a version 00 traceparent:
// 00-<32 hex digits of trace id>-<16 of span id>-<2 of flags>.
const traceparentSize = 55

// Echo writes ctx's trace context into h, the headers of the answer to a
// request (Propagator.Inject: Traceparent, and Tracestate when there is
// one), and returns ctx's trace id as TraceID does, read from the
// traceparent just written rather than formatted again.
func Echo(ctx context.Context, h http.Header) string {
	Propagator.Inject(ctx, headerCarrier(h))
	if tp := h["Traceparent"]; trace.SpanContextFromContext(ctx).IsValid() && len(tp) == 1 &&
		len(tp[0]) == traceparentSize && tp[0][:3] == "00-" {
		return tp[0][3:35]
	}
	return TraceID(ctx)
}
