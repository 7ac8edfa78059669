package workflows

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TraceHeader is the Temporal header that carries the W3C traceparent of the
// HTTP request that started an operation, from the gateway into the workflow
// and its activities (which send it downstream). OpenTelemetry's Temporal
// interceptor can later take this seam over.
const TraceHeader = "traceparent"

// traceKey is the context key of the traceparent.
type traceKey struct{}

// WithTraceparent returns ctx carrying tp; a workflow started with that
// context (through a client with TracePropagator) carries it in its header.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	return context.WithValue(ctx, traceKey{}, tp)
}

// Traceparent returns the traceparent carried by ctx (an activity's
// context), or "".
func Traceparent(ctx context.Context) string {
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}

// WorkflowTraceparent returns the traceparent carried by a workflow context, or "".
func WorkflowTraceparent(ctx workflow.Context) string {
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}

// TracePropagator moves the traceparent between Go contexts, workflow
// contexts and Temporal headers. Register it on the clients of the gateway
// and the worker (client.Options.ContextPropagators).
type TracePropagator struct{}

var _ workflow.ContextPropagator = TracePropagator{}

// Inject writes the traceparent of a Go context into the header.
func (TracePropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return inject(Traceparent(ctx), w)
}

// InjectFromWorkflow writes the traceparent of a workflow context into the header.
func (TracePropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	return inject(WorkflowTraceparent(ctx), w)
}

// Extract reads the traceparent from the header into a Go context.
func (TracePropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	tp, err := extract(r)
	if err != nil || tp == "" {
		return ctx, err
	}
	return WithTraceparent(ctx, tp), nil
}

// ExtractToWorkflow reads the traceparent from the header into a workflow context.
func (TracePropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	tp, err := extract(r)
	if err != nil || tp == "" {
		return ctx, err
	}
	return workflow.WithValue(ctx, traceKey{}, tp), nil
}

func inject(tp string, w workflow.HeaderWriter) error {
	if tp == "" {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(tp)
	if err != nil {
		return fmt.Errorf("encode %s header: %w", TraceHeader, err)
	}
	w.Set(TraceHeader, p)
	return nil
}

func extract(r workflow.HeaderReader) (string, error) {
	p, ok := r.Get(TraceHeader)
	if !ok {
		return "", nil
	}
	var tp string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &tp); err != nil {
		return "", fmt.Errorf("decode %s header: %w", TraceHeader, err)
	}
	return tp, nil
}
