package metrics

import (
	"context"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// UnaryInterceptor counts unary calls and their durations by method and
// status code, labelled with transport ("grpc", or "http" for the JSON
// API's calls). Chain it first, so refused calls count too.
func (m *Metrics) UnaryInterceptor(transport string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		method := methodName(info.FullMethod)
		m.requests.WithLabelValues(transport, method, status.Code(err).String()).Inc()
		m.requestSeconds.WithLabelValues(transport, method).Observe(time.Since(start).Seconds())
		return resp, err
	}
}

// StreamRequest counts a send or open (method "Send", "Open") of an agent
// stream that took d and ended with err (a status, or nil), as a call of
// that method with transport "agent_stream" (hubgrpc.Config.OnStreamRequest).
func (m *Metrics) StreamRequest(method string, err error, d time.Duration) {
	m.requests.WithLabelValues("agent_stream", method, status.Code(err).String()).Inc()
	m.requestSeconds.WithLabelValues("agent_stream", method).Observe(d.Seconds())
}

// StreamInterceptor counts open streams by kind (the method: subscribe,
// watch) and those the hub cut off.
func (m *Metrics) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !strings.HasPrefix(info.FullMethod, "/hubd.") {
		return handler(srv, ss) // health, reflection
	}
	ended := m.Stream(snake(methodName(info.FullMethod)))
	err := handler(srv, ss)
	ended(err)
	return err
}

// Stream counts a stream of the given kind as open until the returned
// function is called with the error that ended it (nil: the client left);
// a SLOW_SUBSCRIBER error counts as a cut-off.
func (m *Metrics) Stream(kind string) (ended func(err error)) {
	g := m.subscribers.WithLabelValues(kind)
	g.Inc()
	return func(err error) {
		g.Dec()
		if reasonOf(err) == hubpb.Reason_SLOW_SUBSCRIBER.String() {
			m.cutoffs.WithLabelValues(kind).Inc()
		}
	}
}

// Limited counts a refusal at a limit, or a stream cut off at a buffer
// bound, by the limit's name (hub.Hooks.Limited, hubgrpc.Config.OnLimit,
// hubhttp.Config.OnLimit).
func (m *Metrics) Limited(limit string) { m.limits.WithLabelValues(limit).Inc() }

// snake is a method's name as a label: AgentStream is agent_stream.
func snake(method string) string {
	var b strings.Builder
	for i, r := range method {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// methodName is the last part of "/hubd.v1.Hub/Send".
func methodName(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// reasonOf returns the stable reason an error carries, as a hub error or
// as a status with a hubd ErrorInfo, or "".
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	if r, ok := session.ReasonOf(err); ok {
		return r.String()
	}
	if st, ok := status.FromError(err); ok {
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == hubgrpc.Domain {
				return info.GetReason()
			}
		}
	}
	return ""
}
