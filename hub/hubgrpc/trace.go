package hubgrpc

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
)

// TracerName is the instrumentation name of the spans of the gRPC (and
// JSON) edge.
const TracerName = "github.com/hubd/hubd/hub/hubgrpc"

// TraceInterceptor returns a unary interceptor that continues the caller's
// W3C trace: the parent is the "traceparent" (and "tracestate") metadata of
// the call, which the HTTP side fills from the headers of those names, or
// else the traceparent of the envelope a Send carries. The call runs in a
// server span named for the method ("hubd.v1.Hub/Send"), and a Send's
// envelope that has no traceparent gets the span's, so the log, replays,
// exports and every delivery carry the trace.
//
// With a nil or no-op provider nothing is recorded, but the caller's
// traceparent still reaches the envelope as given. Chain it after the
// authentication interceptor: an unauthenticated call starts no span.
func TraceInterceptor(tp trace.TracerProvider) grpc.UnaryServerInterceptor {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	tracer := tp.Tracer(TracerName)
	recording := Recording(tp)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx = traceParent(ctx, req)
		if !recording { // no span to start: the caller's trace context alone reaches the envelope
			if env := sentEnvelope(req); env != nil && env.GetTraceparent() == "" {
				env.Traceparent = Traceparent(trace.SpanContextFromContext(ctx))
			}
			return handler(ctx, req)
		}
		service, method := splitMethod(info.FullMethod)
		attrs := []attribute.KeyValue{attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service),
			attribute.String("rpc.method", method)}
		if id, ok := FromContext(ctx); ok {
			attrs = append(attrs, attribute.String("hubd.agent", id.Agent))
		}
		if r, ok := req.(interface{ GetSessionId() string }); ok && r.GetSessionId() != "" {
			attrs = append(attrs, attribute.String("hubd.session_id", r.GetSessionId()))
		}
		ctx, span := tracer.Start(ctx, strings.TrimPrefix(info.FullMethod, "/"), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		if env := sentEnvelope(req); env != nil && env.GetTraceparent() == "" {
			env.Traceparent = Traceparent(span.SpanContext())
		}
		resp, err := handler(ctx, req)
		failed(span, err)
		return resp, err
	}
}

// Recording reports whether tp records spans: not nil and not the no-op
// provider, with which the send path builds no span or attribute.
func Recording(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// failed records a call's error status on its span.
func failed(span trace.Span, err error) {
	if err == nil {
		return
	}
	st := status.Convert(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(st.Code())))
	if r := reasonIn(st); r != "" {
		span.SetAttributes(attribute.String("hubd.reason", r))
	}
	span.SetStatus(otelcodes.Error, st.Message())
}

// The span names of a send and an open, by a call or on an agent stream:
// one name for both, so traces read the same.
const (
	sendMethod = "hubd.v1.Hub/Send"
	openMethod = "hubd.v1.Hub/Open"
)

// traceStream starts the span of a send or open (method) on an agent
// stream, as TraceInterceptor does for the call: its parent is the
// frame's own trace context (traceparent, tracestate), else a sent
// envelope's; an envelope without a traceparent gets the span's.
func (s *Service) traceStream(ctx context.Context, method, agent, sessionID, traceparent, tracestate string, env *hubpb.Envelope) (context.Context, trace.Span) {
	c := propagation.MapCarrier{}
	switch {
	case traceparent != "":
		c["traceparent"] = traceparent
		if tracestate != "" {
			c["tracestate"] = tracestate
		}
	case env.GetTraceparent() != "":
		c["traceparent"] = env.GetTraceparent()
	}
	if len(c) > 0 {
		ctx = propagation.TraceContext{}.Extract(ctx, c)
	}
	if span := trace.SpanFromContext(ctx); !s.recording && !span.IsRecording() {
		// No span to start (and no attributes to build): the trace
		// context alone reaches the envelope.
		if env != nil && env.GetTraceparent() == "" {
			env.Traceparent = Traceparent(span.SpanContext())
		}
		return ctx, span
	}
	service, m := splitMethod(method)
	attrs := []attribute.KeyValue{attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service),
		attribute.String("rpc.method", m), attribute.String("hubd.transport", "agent_stream"), attribute.String("hubd.agent", agent)}
	if sessionID != "" {
		attrs = append(attrs, attribute.String("hubd.session_id", sessionID))
	}
	ctx, span := s.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	if env != nil && env.GetTraceparent() == "" {
		env.Traceparent = Traceparent(span.SpanContext())
	}
	return ctx, span
}

// traceParent returns ctx with the caller's trace context as the remote
// parent: from the call's metadata, else from a Send's envelope.
func traceParent(ctx context.Context, req any) context.Context {
	tc := propagation.TraceContext{}
	md, _ := metadata.FromIncomingContext(ctx)
	if out := tc.Extract(ctx, mdCarrier(md)); trace.SpanContextFromContext(out).IsValid() {
		return out
	}
	if env := sentEnvelope(req); env != nil && env.GetTraceparent() != "" {
		return tc.Extract(ctx, propagation.MapCarrier{"traceparent": env.GetTraceparent()})
	}
	return ctx
}

// sentEnvelope is the envelope a request writes, if it carries one.
func sentEnvelope(req any) *hubpb.Envelope {
	if r, ok := req.(*hubpb.SendRequest); ok {
		return r.GetEnvelope()
	}
	return nil
}

// Traceparent formats a span context as a W3C traceparent
// ("00-<trace id>-<span id>-<flags>"); "" when it is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// splitMethod splits "/pkg.Service/Method".
func splitMethod(full string) (service, method string) {
	s, m, _ := strings.Cut(strings.TrimPrefix(full, "/"), "/")
	return s, m
}

// reasonIn returns the hubd reason of a status, or "".
func reasonIn(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			return info.GetReason()
		}
	}
	return ""
}

// mdCarrier reads gRPC metadata as a propagation.TextMapCarrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c { //hubd:orderless the propagator looks keys up by name
		keys = append(keys, k)
	}
	return keys
}
