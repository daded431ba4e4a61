package hub

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Spans of the send path, children of the caller's span (Config.Tracer):
//
//	hub.admit        identify, wait for the session, validate (Admit)
//	hub.fold         stamp and apply the envelopes, decide the follow-ups
//	hub.settle       what the write decides across a tree (results, closes)
//	hub.commit_wait  the append: group commit and fsync
//	hub.deliver      derived state, hooks, timers, subscribers' queues
//	hub.timers       a session's due timers (continuing its turn's trace)
//
// Every envelope a write logs carries a traceparent: its own if the
// sender gave one, else the caller's span's (so a turn's trace reaches
// the agents it is delivered to, and the log shows it).
const (
	spanAdmit      = "hub.admit"
	spanFold       = "hub.fold"
	spanSettle     = "hub.settle"
	spanCommitWait = "hub.commit_wait"
	spanDeliver    = "hub.deliver"
	spanTimers     = "hub.timers"
)

// traceparentOf is the W3C traceparent of the span in ctx, "" without one.
func traceparentOf(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// continueTrace returns ctx with e's traceparent as its remote parent, if
// e has one.
func continueTrace(ctx context.Context, e *hubpb.Envelope) context.Context {
	if tp := e.GetTraceparent(); tp != "" {
		return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
	}
	return ctx
}

// tracing starts the spans of the send path with Config.Tracer.
type tracing struct {
	tracer    trace.Tracer
	recording bool // tracer records spans (not the no-op one)
}

func newTracing(t trace.Tracer) tracing {
	_, noop := t.(noop.Tracer)
	return tracing{tracer: t, recording: !noop}
}

// start starts the span name of the send path, naming session id
// unless zero. With the no-op tracer (Config.Tracer unset) it starts
// none and builds no attribute: ctx keeps its span context, which is what
// the envelopes' traceparents are taken from, and the span returned is
// ctx's own, not recording.
func (t tracing) start(ctx context.Context, name string, id session.ID, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !t.recording {
		if span := trace.SpanFromContext(ctx); !span.IsRecording() {
			return ctx, span
		}
	}
	if !id.IsZero() {
		opts = append(opts, sessionAttr(id))
	}
	return t.tracer.Start(ctx, name, opts...)
}

// sessionAttr names a session on a span.
func sessionAttr(id session.ID) trace.SpanStartOption {
	return trace.WithAttributes(attribute.String("hubd.session_id", id.String()))
}

// endSpan ends span, marked failed when err is not nil, and returns err.
func endSpan(span trace.Span, err error) error {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}
