package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// A caller's trace: trace id 4bf9…, its span 00f0….
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	callerParent  = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// traced starts a server whose spans go to an in-memory exporter.
func traced(t *testing.T) (*Server, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return startHTTP(t, Config{Tracer: tp}), exp
}

// lastEnvelope reads a session's last envelope.
func lastEnvelope(t *testing.T, c *agentsdk.Client, id string) *hubpb.Envelope {
	t.Helper()
	es, err := c.ReadLog(context.Background(), id, 1, 0)
	if err != nil || len(es) == 0 {
		t.Fatalf("read log: %v", err)
	}
	return es[len(es)-1]
}

// sendSpan finds the server span of a Send that carried the caller's
// trace, and checks its parent.
func sendSpan(t *testing.T, exp *tracetest.InMemoryExporter) tracetest.SpanStub {
	t.Helper()
	for _, s := range exp.GetSpans() {
		if s.Name == "hubd.v1.Hub/Send" && s.SpanContext.TraceID().String() == callerTraceID {
			if s.Parent.SpanID().String() != callerSpanID || !s.Parent.IsRemote() || s.SpanKind != trace.SpanKindServer {
				t.Errorf("span %s: parent %v (remote %v), kind %v", s.Name, s.Parent.SpanID(), s.Parent.IsRemote(), s.SpanKind)
			}
			return s
		}
	}
	t.Fatalf("no Send span in the caller's trace among %d spans", len(exp.GetSpans()))
	return tracetest.SpanStub{}
}

// TestTraceGRPC: a traceparent in gRPC metadata becomes the parent of the
// call's span, and the envelope the call produces carries the span's
// traceparent, in the log and in deliveries.
func TestTraceGRPC(t *testing.T) {
	srv, exp := traced(t)
	ctx := context.Background()
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	bob := dial(t, srv.Addr(), "bob")
	w, err := bob.Watch(ctx, s.ID(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := alice.SendText(metadata.AppendToOutgoingContext(ctx, "traceparent", callerParent), s.ID(), "traced"); err != nil {
		t.Fatal(err)
	}
	span := sendSpan(t, exp)
	want := "00-" + callerTraceID + "-" + span.SpanContext.SpanID().String() + "-01"
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != want {
		t.Errorf("logged traceparent %q, want the server span's %q", got, want)
	}
	d, err := w.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := d.GetEnvelope().GetTraceparent(); got != want {
		t.Errorf("delivered traceparent %q, want %q", got, want)
	}
	attrs := map[string]string{}
	for _, a := range span.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["hubd.agent"] != "alice" || attrs["hubd.session_id"] != s.ID() || attrs["rpc.method"] != "Send" {
		t.Errorf("span attributes %v", attrs)
	}
}

// TestTraceOpenOnStream: an open on agentsdk's agent stream runs in a
// server span "hubd.v1.Hub/Open" whose parent is the caller's trace
// context, as an Open call's would, and the envelopes it writes carry
// the span's traceparent.
func TestTraceOpenOnStream(t *testing.T) {
	srv, exp := traced(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", callerParent)
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	var span tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "hubd.v1.Hub/Open" && sp.SpanContext.TraceID().String() == callerTraceID {
			span = sp
		}
	}
	attrs := map[string]string{}
	for _, a := range span.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	if span.Parent.SpanID().String() != callerSpanID || !span.Parent.IsRemote() || attrs["hubd.transport"] != "agent_stream" ||
		attrs["rpc.method"] != "Open" || attrs["hubd.agent"] != "alice" {
		t.Fatalf("the open's span: %q, parent %v, attributes %v", span.Name, span.Parent.SpanID(), attrs)
	}
	want := "00-" + callerTraceID + "-" + span.SpanContext.SpanID().String() + "-01"
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != want {
		t.Errorf("logged traceparent %q, want the open's span's %q", got, want)
	}
}

// TestTraceHTTP: the traceparent header of a JSON call does the same, and
// an envelope that brings its own traceparent keeps it.
func TestTraceHTTP(t *testing.T) {
	srv, exp := traced(t)
	ctx := context.Background()
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string, header map[string]string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+srv.HTTPAddr()+"/v1/sessions/"+s.ID()+"/envelopes", strings.NewReader(body))
		req.Header.Set("X-Hubd-Agent", "alice")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("send: %d", resp.StatusCode)
		}
	}
	post(`{"type":"text","text":{"text":"over http"}}`, map[string]string{"traceparent": callerParent})
	span := sendSpan(t, exp)
	want := "00-" + callerTraceID + "-" + span.SpanContext.SpanID().String() + "-01"
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != want {
		t.Errorf("logged traceparent %q, want %q", got, want)
	}
	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	post(`{"type":"text","text":{"text":"mine"},"traceparent":"`+own+`"}`, nil)
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != own {
		t.Errorf("an envelope's own traceparent became %q", got)
	}
	for _, sp := range exp.GetSpans() {
		if sp.Name == "hubd.v1.Hub/Send" && sp.SpanContext.TraceID().String() == "0af7651916cd43dd8448eb211c80319c" && sp.Parent.SpanID().String() != "b7ad6b7169203331" {
			t.Errorf("span %s of the envelope's trace has parent %v", sp.Name, sp.Parent.SpanID())
		}
	}
}

// TestTraceOff: without a tracer provider nothing is recorded, but the
// caller's traceparent reaches the envelope as given.
func TestTraceOff(t *testing.T) {
	srv := startHTTP(t, Config{})
	ctx := context.Background()
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(metadata.AppendToOutgoingContext(ctx, "traceparent", callerParent), s.ID(), "carried"); err != nil {
		t.Fatal(err)
	}
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != callerParent {
		t.Errorf("traceparent %q, want the caller's %q", got, callerParent)
	}
	if _, err := alice.SendText(ctx, s.ID(), "untraced"); err != nil {
		t.Fatal(err)
	}
	if got := lastEnvelope(t, alice, s.ID()).GetTraceparent(); got != "" {
		t.Errorf("an untraced call's envelope has traceparent %q", got)
	}
}
