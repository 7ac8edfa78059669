// Package telemetry sets up OpenTelemetry tracing for the gateway and the
// worker: one trace from the HTTP request, through the Temporal client, the
// workflow and its activities, to the downstream call. Spans are exported
// over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise they are recorded
// and dropped, so trace ids in answers and logs are still real.
package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Propagator is the W3C trace context, the one way a trace crosses a process.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Config is whether spans are exported, part of the gateway's and the
// worker's configuration. The OTLP exporter reads these and the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeouts) itself; Config only
// decides whether there is an exporter at all.
type Config struct {
	// Endpoint is the OTLP/HTTP endpoint of every signal.
	Endpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	// TracesEndpoint is the OTLP/HTTP endpoint of traces.
	TracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`
}

// Exporting reports whether an OTLP endpoint is configured.
func (c Config) Exporting() bool {
	return c.Endpoint != "" || c.TracesEndpoint != ""
}

// NewTracerProvider returns the tracer provider of service and makes it and
// Propagator the process's globals. Shut it down at exit to flush spans.
func NewTracerProvider(ctx context.Context, service string, c Config) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	}
	if c.Exporting() {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otlp trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	return tp, nil
}

// TemporalInterceptor is the Temporal SDK's OpenTelemetry tracing
// interceptor on tp: client starts, workflows and activities become spans
// of the caller's trace.
func TemporalInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	i, err := opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{
		Tracer:            tp.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: Propagator,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}

// TraceID returns the trace id of ctx's span, or "".
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Continue returns ctx carrying the trace context of a request whose
// headers are h, without a span: the caller's trace (a valid traceparent)
// continued under a new span id with the caller's flags, or a new sampled
// trace. It is what a process that exports no spans needs from its request
// spans: real trace ids in answers and logs and in the trace context it
// passes on (to Temporal, and so to the worker), without building and
// dropping a span per request.
func Continue(ctx context.Context, h http.Header) context.Context {
	parent := trace.SpanContextFromContext(Propagator.Extract(ctx, headerCarrier(h)))
	sc := trace.SpanContextConfig{TraceFlags: trace.FlagsSampled, SpanID: newSpanID()}
	if parent.IsValid() {
		sc.TraceID, sc.TraceFlags, sc.TraceState = parent.TraceID(), parent.TraceFlags(), parent.TraceState()
	} else {
		sc.TraceID = newTraceID()
	}
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(sc))
}

// newTraceID is a random trace id, never the invalid all-zero one (the
// SDK's own ids come from math/rand too).
func newTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// newSpanID is a random span id, never the invalid all-zero one.
func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
