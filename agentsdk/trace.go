package agentsdk

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/hubd/hubd/hubpb"
)

// WithTracerProvider records a span "agentsdk.turn" around each turn
// Serve runs, a child of the trace its trigger carries; the handler's
// context holds it, so the handler's own spans join the session's trace.
// Without it (the default) nothing is recorded, but the trace still
// travels: the handler's context carries the trigger's, and the reply
// carries it on to the next agent.
func WithTracerProvider(tp trace.TracerProvider) ServeOption {
	return func(c *serveConfig) { c.tracer = tp.Tracer("github.com/hubd/hubd/agentsdk") }
}

// startTurn continues the trigger's trace in a turn span.
func (sv *serving) startTurn(ctx context.Context, e *hubpb.Envelope) (context.Context, trace.Span) {
	if tp := e.GetTraceparent(); tp != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
	}
	tracer := sv.cfg.tracer
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("")
	}
	return tracer.Start(ctx, "agentsdk.turn", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("hubd.session_id", e.GetSessionId()), attribute.Int64("hubd.trigger_seq", int64(e.GetSeq())),
		attribute.String("hubd.agent", sv.c.name)))
}

// traceparentOf is the W3C traceparent of the span in ctx, "" without one.
func traceparentOf(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// traceContextOf is the W3C trace context a send made with ctx carries
// on the agent stream, as a Send call would in its metadata: a
// "traceparent" (and "tracestate") the caller put in the outgoing
// metadata, else the span in ctx's.
func traceContextOf(ctx context.Context) (parent, state string) {
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if v := md.Get("traceparent"); len(v) > 0 {
			if s := md.Get("tracestate"); len(s) > 0 {
				state = s[0]
			}
			return v[0], state
		}
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// traceMetadata sends the W3C trace context of a call's context as the
// "traceparent" (and "tracestate") metadata, so the hub's span of the call
// joins the caller's trace and the envelope it writes carries it.
func traceMetadata(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if trace.SpanContextFromContext(ctx).IsValid() {
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		for k, v := range c { //hubd:orderless metadata keys are unordered
			ctx = metadata.AppendToOutgoingContext(ctx, k, v)
		}
	}
	return invoke(ctx, method, req, reply, cc, opts...)
}
