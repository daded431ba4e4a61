package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// The methods that list across partitions.
const (
	methodListSessions  = "/hubd.v1.Hub/ListSessions"
	methodListQuestions = "/hubd.v1.Hub/ListQuestions"
	methodPendingTurns  = "/hubd.v1.Hub/PendingTurns"
	// methodErase is gathered when it names sessions by thread or
	// participant only: every node erases what it serves of them.
	methodErase = "/hubd.v1.Hub/Erase"
)

// gathered reports whether a call runs on every node and is merged.
func gathered(method string, m proto.Message) bool {
	switch method {
	case methodListSessions, methodListQuestions, methodPendingTurns:
		return true
	case methodErase:
		return len(m.(*hubpb.EraseRequest).GetSessionIds()) == 0
	}
	return false
}

// forwardTimeout bounds a forwarded call whose client set no shorter
// deadline: a send waits for a quorum write, longer during a NATS leader
// election.
const forwardTimeout = 20 * time.Second

// maxHops bounds how many owners one call is forwarded to, when the one
// it reached lost the partition meanwhile.
const maxHops = 3

// methods are the Hub service's unary methods, by full name, with their
// request and reply types.
type methods map[string]method

type method struct {
	request, reply protoreflect.MessageType
}

// hubMethods indexes the Hub service's unary methods.
func hubMethods() (methods, error) {
	out := methods{}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(hubsvc.Hub_ServiceDesc.ServiceName))
	if err != nil {
		return nil, fmt.Errorf("routing: the Hub service's descriptor: %w", err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("routing: %s is no service", hubsvc.Hub_ServiceDesc.ServiceName)
	}
	for _, m := range hubsvc.Hub_ServiceDesc.Methods {
		full := "/" + hubsvc.Hub_ServiceDesc.ServiceName + "/" + m.MethodName
		md := sd.Methods().ByName(protoreflect.Name(m.MethodName))
		if md == nil {
			return nil, fmt.Errorf("routing: method %s has no descriptor", full)
		}
		reply, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			return nil, fmt.Errorf("routing: the reply of %s: %w", full, err)
		}
		request, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			return nil, fmt.Errorf("routing: the request of %s: %w", full, err)
		}
		out[full] = method{request: request, reply: reply}
	}
	return out, nil
}

// Unary is the cluster's interceptor of every unary call, gRPC or JSON,
// chained after authentication and tracing, and the Router's Unary for
// the sends and opens of agent streams: listings are gathered from every
// node (gather.go); any other call runs here and, refused with NOT_OWNER
// naming another node, is forwarded to that node, which runs it on the
// caller's behalf (the same request, the caller's identity) and whose
// reply or status goes back unchanged. While the session's partition has
// no owner (it changes hands: a lease expiring, a hydrate), or its owner
// cannot be reached, the call is tried again, for up to retryFor within
// the caller's deadline; then NOT_OWNER with no owner address says to
// retry shortly. A forwarded call not answered within forwardTimeout is
// answered so at once (it may have run: a send retried with the same
// client message id is not written twice).
func (n *Node) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := req.(proto.Message)
	if _, hub := n.methods[info.FullMethod]; !ok || !hub || n.service == nil {
		return handler(ctx, req) // health, reflection: this node's own
	}
	if gathered(info.FullMethod, m) {
		return n.gather(ctx, m, info.FullMethod, handler)
	}
	// The request as the client sent it, kept for the owner unless its
	// session is served here (the handler may change the request).
	var orig proto.Message
	if !n.holds(m) {
		orig = proto.Clone(m)
	}
	deadline := time.Now().Add(retryFor)
	if d, ok := ctx.Deadline(); ok && d.Add(-retryMargin).Before(deadline) {
		deadline = d.Add(-retryMargin) // the caller gets NOT_OWNER, not its deadline
	}
	for try := 0; ; try++ {
		resp, again, err := n.route1(ctx, info.FullMethod, req, orig, handler)
		wait := reopenWait(try)
		if !again || time.Now().Add(wait).After(deadline) || !sleep(ctx, wait) {
			return resp, err
		}
		req = proto.Clone(orig)
	}
}

// retryFor bounds how long a call waits for its session's partition to
// have an owner that answers: a lease's expiry and a hydrate. The wait
// ends retryMargin before the caller's deadline.
const (
	retryFor    = 20 * time.Second
	retryMargin = 250 * time.Millisecond
)

// route1 runs a call once: here, then on the owner its refusal names
// (following at most maxHops owners). again says the call did not run
// and may be tried again shortly: the partition has no owner at the
// moment, or its owner could not be reached.
func (n *Node) route1(ctx context.Context, method string, req any, orig proto.Message, handler grpc.UnaryHandler) (any, bool, error) {
	resp, err := handler(ctx, req)
	if err == nil || orig == nil {
		return resp, false, err
	}
	owner := ownerIn(err)
	if owner == "" || owner == n.cfg.NodeID {
		return resp, isReason(err, hubpb.Reason_NOT_OWNER), err // no owner, or being loaded here
	}
	for hop := 1; ; hop++ {
		resp, reached, ferr := n.forward(ctx, owner, method, orig)
		if ferr == nil {
			return resp, false, nil
		}
		next := ownerIn(ferr)
		switch {
		case !reached:
			return nil, true, ferr
		case next == "" || next == owner || hop == maxHops:
			return nil, isReason(ferr, hubpb.Reason_NOT_OWNER) && next == "", ferr
		case next == n.cfg.NodeID:
			// The partition came here meanwhile: run the request as the
			// client sent it (the first run may have changed req).
			resp, err := handler(ctx, proto.Clone(orig))
			return resp, isReason(err, hubpb.Reason_NOT_OWNER) && ownerIn(err) == "", err
		}
		owner = next
	}
}

// holds reports whether the session a request is about (its session_id,
// or an open's parent_session_id) is served here; false for a request
// about none (a root's open).
func (n *Node) holds(m proto.Message) bool {
	var s string
	switch r := m.(type) {
	case interface{ GetSessionId() string }:
		s = r.GetSessionId()
	case interface{ GetParentSessionId() string }:
		s = r.GetParentSessionId()
	}
	if s == "" {
		return false
	}
	id, err := session.ParseID(s)
	if err != nil {
		return true // refused here: nothing to forward
	}
	return n.hub.Holds(id)
}

// hubInfo returns the hubd ErrorInfo of a status error (nil for none: an
// error of gRPC's own, such as a connection that failed).
func hubInfo(err error) *errdetails.ErrorInfo {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == hubgrpc.Domain {
			return info
		}
	}
	return nil
}

// ownerIn returns the node a NOT_OWNER status names as the owner ("" for
// none, or another error).
func ownerIn(err error) string {
	if info := hubInfo(err); info.GetReason() == hubpb.Reason_NOT_OWNER.String() {
		return info.GetMetadata()["owner_node"]
	}
	return ""
}

// isReason reports whether err is a status with reason r.
func isReason(err error, r hubpb.Reason) bool { return hubInfo(err).GetReason() == r.String() }

// Metadata of the calls between nodes: the caller as the node asked
// authenticated it. A node service believes them only from a node
// (nodeservice.go).
const (
	mdAgent    = "hubd-node-agent"
	mdOperator = "hubd-node-operator"
	mdServed   = "hubd-node-served" // trailer: the partitions served throughout a listing
)

// outgoing is the context of a call to another node on behalf of the
// client of from: the client's identity and trace context as metadata,
// with the deadline and cancellation of ctx.
func outgoing(ctx, from context.Context) context.Context {
	id, _ := hubgrpc.FromContext(from)
	return outgoingAs(ctx, from, id)
}

// outgoingAs is outgoing for the client id.
func outgoingAs(ctx, from context.Context, id hubgrpc.Identity) context.Context {
	md := metadata.Pairs(mdAgent, id.Agent)
	if id.Operator {
		md.Set(mdOperator, "1")
	}
	if tp := hubgrpc.Traceparent(trace.SpanContextFromContext(from)); tp != "" {
		md.Set("traceparent", tp) // this node's span of the call, as the parent
	} else if in, ok := metadata.FromIncomingContext(from); ok {
		if v := in.Get("traceparent"); len(v) > 0 {
			md.Set("traceparent", v[0])
		}
		if v := in.Get("tracestate"); len(v) > 0 {
			md.Set("tracestate", v[0])
		}
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// forward has node owner run the call and returns its reply, or its
// status as it is; reached is false when the owner could not be called
// (its address unknown, or no connection to it), and the status then
// NOT_OWNER with no owner address: retry shortly. An owner that does not
// answer within forwardTimeout makes the same status, reached (the call
// may have run).
func (n *Node) forward(ctx context.Context, owner, method string, req proto.Message) (resp any, reached bool, err error) {
	fctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	reply := n.methods[method].reply.New().Interface()
	cc, err := n.peer(owner)
	if err == nil {
		err = cc.Invoke(outgoing(fctx, ctx), method, req, reply)
		if err == nil {
			return reply, true, nil
		}
		if hubInfo(err) != nil {
			return nil, true, err // the owner's answer
		}
	}
	if ctx.Err() != nil {
		return nil, true, hubgrpc.Status(n.logger, method, ctx.Err())
	}
	why := fmt.Sprintf("node %s, which serves the session, did not answer the call forwarded to it (%v); retry shortly (a send with the same client_msg_id is not written twice)", owner, err)
	reached = !errors.Is(err, ErrUnreachable) && status.Code(err) != codes.Unavailable
	if reached {
		n.logger.Warn().Err(err).Str("method", method).Str("owner", owner).Msg("forwarded call not answered")
	} else {
		why = fmt.Sprintf("node %s, which serves the session, is not reachable at the moment (%v); retry shortly", owner, err)
		n.logger.Debug().Err(err).Str("method", method).Str("owner", owner).Msg("forwarded call: the owner is not reachable")
	}
	return nil, reached, hubgrpc.Status(n.logger, method, &hub.NotOwnerError{Partition: -1, Why: why})
}
