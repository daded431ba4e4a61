package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
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
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/session"
)

// Routing in a cluster. Every unary call, gRPC or JSON, passes through
// node.unary after authentication and tracing:
//
//   - A listing (ListSessions, ListQuestions, PendingTurns) is gathered:
//     the call, with the caller's identity, goes to every node that owns a
//     partition (cluster.Calls, on NATS), each answers from the partitions
//     it serves, and the asked node merges the answers in the order and
//     paging of one node. A listing that would miss a partition (it has no
//     owner at the moment, or its node did not answer within
//     gatherTimeout) fails with NOT_OWNER and no owner address: retry
//     shortly. It is never silently partial.
//   - Any other call runs here; refused with NOT_OWNER naming another
//     node, it is forwarded: the owner runs it on the caller's behalf
//     (the same request bytes and identity) and its reply or status goes
//     back unchanged. An owner that does not answer (gone, or not within
//     forwardTimeout) makes NOT_OWNER with no owner address: retry
//     shortly, with the same client message id (a send that did reach
//     the owner is not written twice). With ClusterConfig.NoForward, the
//     NOT_OWNER answer goes to the client as it is.
//
// A call a node runs for another (serveCall) goes straight to the
// service's handler, with the tracing interceptor only: it is neither
// gathered nor forwarded again. The identity it carries is believed
// because, with the cluster's credentials (ClusterConfig.Creds), a call
// that does not prove it comes from a node never reaches serveCall
// (cluster.NodeProof).

// The methods that list across partitions.
const (
	methodListSessions  = "/hubd.v1.Hub/ListSessions"
	methodListQuestions = "/hubd.v1.Hub/ListQuestions"
	methodPendingTurns  = "/hubd.v1.Hub/PendingTurns"
)

// gatherTimeout bounds the wait for the other nodes' parts of a listing:
// they answer from memory.
const gatherTimeout = 5 * time.Second

// forwardTimeout bounds a forwarded call whose client set no shorter
// deadline: a send waits for a quorum write, longer during a NATS leader
// election.
const forwardTimeout = 20 * time.Second

// maxHops bounds how many owners one call is forwarded to, when the one
// it reached lost the partition meanwhile.
const maxHops = 3

// router is what routing needs besides the node: the service whose
// handlers run calls for other nodes, and their types.
type router struct {
	svc      *hubgrpc.Service
	trace    grpc.UnaryServerInterceptor
	methods  map[string]grpc.MethodDesc          // by full method name
	replies  map[string]protoreflect.MessageType // each method's reply type
	requests map[string]protoreflect.MessageType // and request type
}

// newRouter indexes the Hub service's unary methods and their reply
// types.
func newRouter(svc *hubgrpc.Service, tp trace.TracerProvider) (*router, error) {
	r := &router{svc: svc, trace: hubgrpc.TraceInterceptor(tp), methods: map[string]grpc.MethodDesc{},
		replies: map[string]protoreflect.MessageType{}, requests: map[string]protoreflect.MessageType{}}
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
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			return nil, fmt.Errorf("routing: the reply of %s: %w", full, err)
		}
		in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			return nil, fmt.Errorf("routing: the request of %s: %w", full, err)
		}
		r.methods[full], r.replies[full], r.requests[full] = m, mt, in
	}
	return r, nil
}

// serveCalls starts answering the calls other nodes send this one.
func (n *node) serveCalls(svc *hubgrpc.Service, tp trace.TracerProvider) error {
	r, err := newRouter(svc, tp)
	if err != nil {
		return err
	}
	n.router = r
	n.calls, err = cluster.ServeCalls(cluster.CallsConfig{Conn: n.cc, NodeID: n.cfg.NodeID, Serve: n.serveCall, Logger: n.logger,
		Proof: n.cfg.Creds.Proof()})
	return err
}

// serveCall runs a call another node sends on a client's behalf: the
// service's handler with the client's identity, nothing gathered or
// forwarded. The answer says which partitions were served throughout.
func (n *node) serveCall(ctx context.Context, c cluster.Call) cluster.Answer {
	before := n.servedNow()
	m, ok := n.router.methods[c.Method]
	if !ok {
		return failed(status.Errorf(codes.Unimplemented, "method %s is not served between nodes", c.Method))
	}
	ctx = hubgrpc.WithIdentity(ctx, hubgrpc.Identity{Agent: c.Agent, Operator: c.Operator})
	if c.Traceparent != "" {
		md := metadata.Pairs("traceparent", c.Traceparent)
		if c.Tracestate != "" {
			md.Set("tracestate", c.Tracestate)
		}
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	dec := func(v any) error {
		if err := proto.Unmarshal(c.Body, v.(proto.Message)); err != nil {
			return hubgrpc.Status(n.logger, c.Method, fmt.Errorf("a call from node %s does not decode: %v: %w", c.From, err, session.ErrMalformed))
		}
		return nil
	}
	resp, err := m.Handler(n.router.svc, ctx, dec, n.router.trace)
	served := intersect(before, n.servedNow())
	if err != nil {
		a := failed(err)
		a.Served = served
		return a
	}
	b, err := proto.Marshal(resp.(proto.Message))
	if err != nil {
		return failed(hubgrpc.Status(n.logger, c.Method, err))
	}
	return cluster.Answer{Body: b, Served: served}
}

// failed is the answer of a call that failed with err (a status).
func failed(err error) cluster.Answer {
	b, _ := proto.Marshal(status.Convert(err).Proto())
	return cluster.Answer{Body: b, Failed: true}
}

// servedNow returns the partitions served (hydrated) at this moment.
func (n *node) servedNow() []int {
	var out []int
	for k := range n.serving {
		if n.serving[k].Load() {
			out = append(out, k)
		}
	}
	return out
}

// intersect returns the partitions in both ascending lists.
func intersect(a, b []int) []int {
	var out []int
	for _, k := range a {
		if _, found := slices.BinarySearch(b, k); found {
			out = append(out, k)
		}
	}
	return out
}

// unary is the cluster's interceptor of every unary call: listings are
// gathered from every node, a call for a session another node serves is
// forwarded to it.
func (n *node) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := req.(proto.Message)
	if !ok || n.router == nil {
		return handler(ctx, req)
	}
	if _, hub := n.router.methods[info.FullMethod]; !hub {
		return handler(ctx, req) // health, reflection: this node's own
	}
	switch info.FullMethod {
	case methodListSessions, methodListQuestions, methodPendingTurns:
		return n.gather(ctx, m, info.FullMethod, handler)
	}
	if n.cfg.NoForward {
		return handler(ctx, req)
	}
	// The request as the client sent it, kept for the owner unless its
	// session is served here (the handler may change the request).
	var body []byte
	if !n.holds(m) {
		var err error
		if body, err = proto.Marshal(m); err != nil {
			return handler(ctx, req)
		}
	}
	resp, err := handler(ctx, req)
	if err == nil || body == nil {
		return resp, err
	}
	owner := n.ownerIn(err)
	if owner == "" || owner == n.cfg.NodeID {
		return resp, err
	}
	for hop := 1; ; hop++ {
		resp, ferr := n.forward(ctx, owner, info.FullMethod, body)
		if ferr == nil {
			return resp, nil
		}
		next := n.ownerIn(ferr)
		switch {
		case next == "" || next == owner || hop == maxHops:
			return nil, ferr
		case next == n.cfg.NodeID:
			// The partition came here meanwhile: run the request as the
			// client sent it (the first run may have changed req).
			fresh := n.router.requests[info.FullMethod].New().Interface()
			if proto.Unmarshal(body, fresh) != nil {
				return nil, ferr
			}
			return handler(ctx, fresh)
		}
		owner = next
	}
}

// holds reports whether the session a request is about (its session_id,
// or an open's parent_session_id) is served here; false for a request
// about none (a root's open).
func (n *node) holds(m proto.Message) bool {
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

// ownerIn returns the node a NOT_OWNER status names as the owner ("" for
// none, or another error).
func (n *node) ownerIn(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if ok && info.GetDomain() == hubgrpc.Domain && info.GetReason() == hubpb.Reason_NOT_OWNER.String() {
			return info.GetMetadata()["owner_node"]
		}
	}
	return ""
}

// callOf is the call a node sends for the client of ctx.
func callOf(ctx context.Context, method string, body []byte) cluster.Call {
	id, _ := hubgrpc.FromContext(ctx)
	c := cluster.Call{Method: method, Agent: id.Agent, Operator: id.Operator, Body: body}
	if tp := hubgrpc.Traceparent(trace.SpanContextFromContext(ctx)); tp != "" {
		c.Traceparent = tp // this node's span of the call, as the parent
	} else if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("traceparent"); len(v) > 0 {
			c.Traceparent = v[0]
		}
		if v := md.Get("tracestate"); len(v) > 0 {
			c.Tracestate = v[0]
		}
	}
	return c
}

// forward has node owner run the call and returns its reply, or its
// status as it is; a node that does not answer makes NOT_OWNER with no
// owner address (retry shortly).
func (n *node) forward(ctx context.Context, owner, method string, body []byte) (any, error) {
	fctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	ans, err := n.calls.Call(fctx, owner, callOf(ctx, method, body))
	if err != nil {
		if ctx.Err() != nil {
			return nil, hubgrpc.Status(n.logger, method, ctx.Err())
		}
		why := fmt.Sprintf("node %s, which serves the session, did not answer the call forwarded to it (%v); retry shortly (a send with the same client_msg_id is not written twice)", owner, err)
		if errors.Is(err, cluster.ErrUnreachable) {
			why = fmt.Sprintf("node %s, which serves the session, is not reachable at the moment (%v); retry shortly", owner, err)
		}
		n.logger.Warn().Err(err).Str("method", method).Str("owner", owner).Msg("forwarded call not answered")
		return nil, hubgrpc.Status(n.logger, method, &hub.NotOwnerError{Partition: -1, Why: why})
	}
	return n.decode(method, ans)
}

// decode turns a node's answer into the reply message, or its status.
func (n *node) decode(method string, ans cluster.Answer) (proto.Message, error) {
	if ans.Failed {
		var st spb.Status
		if err := proto.Unmarshal(ans.Body, &st); err != nil {
			return nil, hubgrpc.Status(n.logger, method, fmt.Errorf("a node's failure does not decode: %w", err))
		}
		return nil, status.FromProto(&st).Err()
	}
	resp := n.router.replies[method].New().Interface()
	if err := proto.Unmarshal(ans.Body, resp); err != nil {
		return nil, hubgrpc.Status(n.logger, method, fmt.Errorf("a node's reply does not decode: %w", err))
	}
	return resp, nil
}

// part is one node's answer to a gathered listing.
type part struct {
	node   string
	resp   proto.Message
	served []int
	err    error
}

// gather runs a listing on every node that owns a partition (this one
// locally) and merges their answers; a partition no answer covers makes
// NOT_OWNER (retry shortly) rather than a partial listing.
func (n *node) gather(ctx context.Context, req proto.Message, method string, handler grpc.UnaryHandler) (any, error) {
	body, err := proto.Marshal(req)
	if err != nil {
		return nil, hubgrpc.Status(n.logger, method, err)
	}
	var peers []string
	for _, o := range n.leases.Owners() { //hubd:orderless sorted below
		if o.NodeID != n.cfg.NodeID && !slices.Contains(peers, o.NodeID) {
			peers = append(peers, o.NodeID)
		}
	}
	slices.Sort(peers)
	gctx, cancel := context.WithTimeout(ctx, gatherTimeout)
	defer cancel()
	parts := make([]part, len(peers)+1)
	var wg sync.WaitGroup
	wg.Add(len(peers))
	for i, p := range peers {
		go func() {
			defer wg.Done()
			parts[i+1].node = p
			ans, err := n.calls.Call(gctx, p, callOf(ctx, method, body))
			if err == nil {
				parts[i+1].served = ans.Served
				parts[i+1].resp, err = n.decode(method, ans)
			}
			parts[i+1].err = err
		}()
	}
	before := n.servedNow()
	resp, err := handler(ctx, req)
	parts[0] = part{node: n.cfg.NodeID, served: intersect(before, n.servedNow()), err: err}
	if err == nil {
		parts[0].resp = resp.(proto.Message)
	}
	if err != nil {
		// The same request is refused alike on every node: the local
		// refusal is the answer.
		cancel()
		wg.Wait()
		return nil, err
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, hubgrpc.Status(n.logger, method, ctx.Err())
	}
	covered := make([]bool, len(n.serving))
	var silent []string
	var answered []proto.Message
	for _, p := range parts {
		if p.err != nil {
			silent = append(silent, fmt.Sprintf("%s: %v", p.node, p.err))
			continue
		}
		for _, k := range p.served {
			if k >= 0 && k < len(covered) {
				covered[k] = true
			}
		}
		answered = append(answered, p.resp)
	}
	var missing []int
	for k, ok := range covered {
		if !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		why := fmt.Sprintf("listing across the cluster: partitions %v are not served at the moment (changing hands) or their node did not answer within %v", missing, gatherTimeout)
		if len(silent) > 0 {
			why += " (" + strings.Join(silent, "; ") + ")"
			n.logger.Warn().Strs("nodes", silent).Str("method", method).Msg("listing: nodes did not answer")
		}
		return nil, hubgrpc.Status(n.logger, method, &hub.NotOwnerError{Partition: missing[0], Why: why + "; retry shortly"})
	}
	switch method {
	case methodListSessions:
		return mergeSessions(req.(*hubpb.ListSessionsRequest), answered), nil
	case methodListQuestions:
		return mergeQuestions(answered), nil
	default:
		return mergeTurns(answered), nil
	}
}

// mergeSessions merges the nodes' pages of a listing into one page as one
// node gives it: by session id, at most the page size, the next page's
// token the last id when any node had more.
func mergeSessions(req *hubpb.ListSessionsRequest, parts []proto.Message) *hubpb.ListSessionsResponse {
	limit := int(req.GetPageSize())
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var all []*hubpb.SessionInfo
	more := false
	for _, p := range parts {
		r := p.(*hubpb.ListSessionsResponse)
		all = append(all, r.GetSessions()...)
		more = more || r.GetNextPageToken() != ""
	}
	slices.SortStableFunc(all, func(a, b *hubpb.SessionInfo) int {
		return cmp.Compare(a.GetMeta().GetSessionId(), b.GetMeta().GetSessionId())
	})
	// A partition changing hands during the call may be listed by both
	// nodes: keep the later state.
	uniq := all[:0]
	for _, x := range all {
		if k := len(uniq) - 1; k >= 0 && uniq[k].GetMeta().GetSessionId() == x.GetMeta().GetSessionId() {
			if x.GetSeq() > uniq[k].GetSeq() {
				uniq[k] = x
			}
			continue
		}
		uniq = append(uniq, x)
	}
	all = uniq
	if len(all) > limit {
		all, more = all[:limit], true
	}
	out := &hubpb.ListSessionsResponse{Sessions: all}
	if more && len(all) > 0 {
		out.NextPageToken = all[len(all)-1].GetMeta().GetSessionId()
	}
	return out
}

// mergeQuestions merges the nodes' pending questions, oldest first (ties
// by session id, then as their session lists them), as one node orders
// them.
func mergeQuestions(parts []proto.Message) *hubpb.ListQuestionsResponse {
	var all []*hubpb.PendingQuestion
	seen := map[[2]string]bool{}
	for _, p := range parts {
		for _, q := range p.(*hubpb.ListQuestionsResponse).GetQuestions() {
			k := [2]string{q.GetSessionId(), q.GetEnvelope().GetId()}
			if !seen[k] {
				seen[k] = true
				all = append(all, q)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b *hubpb.PendingQuestion) int {
		if c := a.GetEnvelope().GetAcceptedAt().AsTime().Compare(b.GetEnvelope().GetAcceptedAt().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetSessionId(), b.GetSessionId())
	})
	return &hubpb.ListQuestionsResponse{Questions: all}
}

// mergeTurns merges the nodes' pending turns by session id, as one node
// orders them.
func mergeTurns(parts []proto.Message) *hubpb.PendingTurnsResponse {
	var all []*hubpb.Delivery
	for _, p := range parts {
		all = append(all, p.(*hubpb.PendingTurnsResponse).GetTurns()...)
	}
	slices.SortStableFunc(all, func(a, b *hubpb.Delivery) int {
		return cmp.Compare(a.GetEnvelope().GetSessionId(), b.GetEnvelope().GetSessionId())
	})
	all = slices.CompactFunc(all, func(a, b *hubpb.Delivery) bool {
		return a.GetEnvelope().GetSessionId() == b.GetEnvelope().GetSessionId()
	})
	return &hubpb.PendingTurnsResponse{Turns: all}
}
