package hubgrpc_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// intercept runs a Send through the trace interceptor with the given
// metadata and returns the span context the handler saw.
func intercept(t *testing.T, ic grpc.UnaryServerInterceptor, md metadata.MD, req *hubpb.SendRequest) trace.SpanContext {
	t.Helper()
	ctx := metadata.NewIncomingContext(context.Background(), md)
	var seen trace.SpanContext
	_, err := ic(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/hubd.v1.Hub/Send"}, func(ctx context.Context, _ any) (any, error) {
		seen = trace.SpanContextFromContext(ctx)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// TestTraceInterceptor: with spans recorded, the handler runs in a server
// span, child of the caller's traceparent, and the envelope carries it.
func TestTraceInterceptor(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ic := hubgrpc.TraceInterceptor(tp)
	req := &hubpb.SendRequest{SessionId: "s", Envelope: &hubpb.Envelope{Type: "text"}}
	sc := intercept(t, ic, metadata.Pairs("traceparent", parent), req)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() == "00f067aa0ba902b7" {
		t.Errorf("handler span %v", sc)
	}
	if got, want := req.GetEnvelope().GetTraceparent(), hubgrpc.Traceparent(sc); got != want {
		t.Errorf("envelope traceparent %q, want the server span's %q", got, want)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "hubd.v1.Hub/Send" || spans[0].Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("spans %v", spans)
	}
	// No metadata: the envelope's own traceparent is the parent and stays.
	own := &hubpb.SendRequest{Envelope: &hubpb.Envelope{Type: "text", Traceparent: parent}}
	if sc := intercept(t, ic, nil, own); sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("span %v not in the envelope's trace", sc)
	}
	if own.GetEnvelope().GetTraceparent() != parent {
		t.Errorf("the envelope's traceparent became %q", own.GetEnvelope().GetTraceparent())
	}
}

// TestTraceInterceptorOff: without a provider, or with the no-op one
// (which starts no span), the caller's traceparent is carried as given
// and is the handler's span context; a malformed one, or none, leaves the
// envelope bare.
func TestTraceInterceptorOff(t *testing.T) {
	for _, tp := range []trace.TracerProvider{nil, noop.NewTracerProvider()} {
		if hubgrpc.Recording(tp) {
			t.Errorf("%T records spans", tp)
		}
		ic := hubgrpc.TraceInterceptor(tp)
		for md, want := range map[string]string{parent: parent, "00-zz-zz-01": "", "": ""} {
			req := &hubpb.SendRequest{Envelope: &hubpb.Envelope{Type: "text"}}
			var m metadata.MD
			if md != "" {
				m = metadata.Pairs("traceparent", md)
			}
			sc := intercept(t, ic, m, req)
			if got := req.GetEnvelope().GetTraceparent(); got != want {
				t.Errorf("%T, metadata %q: envelope traceparent %q, want %q", tp, md, got, want)
			}
			if got := hubgrpc.Traceparent(sc); got != want {
				t.Errorf("%T, metadata %q: the handler's span context %q, want %q", tp, md, got, want)
			}
		}
	}
	if !hubgrpc.Recording(sdktrace.NewTracerProvider()) {
		t.Error("the SDK's provider does not record")
	}
}
