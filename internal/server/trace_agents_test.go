package server

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hubd/hubd/agentsdk"
)

// TestTraceAcrossAgents: a turn started in a trace reaches the agent that
// answers it; its handler runs in that trace and its reply carries it, so
// one trace spans the agents of the session.
func TestTraceAcrossAgents(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	srv := startHTTP(t, Config{Tracer: tp})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice, bob := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 1)
	serving, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- bob.Serve(serving, func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			_, span := tp.Tracer("bob").Start(ctx, "bob.think")
			span.End()
			handled <- span.SpanContext().TraceID().String()
			return agentsdk.ReplyText("pong"), nil
		}, agentsdk.WithTracerProvider(tp), agentsdk.WithView("", 0))
	}()
	root, span := tp.Tracer("alice").Start(ctx, "alice.ask")
	if _, err := alice.SendText(root, s.ID(), "ping"); err != nil {
		t.Fatal(err)
	}
	span.End()
	traceID := span.SpanContext().TraceID().String()
	if got := <-handled; got != traceID {
		t.Fatalf("bob's handler ran in trace %s, want %s", got, traceID)
	}
	w, err := alice.Watch(ctx, s.ID(), 4)
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if e := d.GetEnvelope(); e.GetText().GetText() != "pong" || !strings.Contains(e.GetTraceparent(), traceID) {
		t.Fatalf("bob's reply %v is not in the trace %s", e, traceID)
	}
	stop()
	if err := <-served; err != nil { // its turns have ended, their spans too
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sp := range exp.GetSpans() {
		if sp.SpanContext.TraceID().String() == traceID {
			names[sp.Name] = true
		}
	}
	for _, want := range []string{"alice.ask", "hubd.v1.Hub/Send", "hub.commit_wait", "agentsdk.turn", "bob.think"} {
		if !names[want] {
			t.Errorf("no %s span in the trace (have %v)", want, names)
		}
	}
}
