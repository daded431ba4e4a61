package agentsdk

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// A hubd cluster (docs/SCALING.md) serves each session on one node, the
// owner of its partition; any other node answers NOT_OWNER with the
// owner's gRPC address in the ErrorInfo metadata ("owner_addr"). With
// Options.Peers the Client follows it without its caller noticing:
//
//   - a unary call refused with NOT_OWNER is sent again, as it was (the
//     same client message id, so a send is never written twice), to the
//     owner; one without an owner yet (a partition changing hands) is sent
//     again after a short wait; one that cannot reach its node (a dead
//     node) or that a stopping node refuses (DRAINING) goes to the next
//     node, which knows the owner. It gives up
//     after Options.FollowFor.
//   - Subscribe opens one stream per node and merges them: each node
//     delivers the sessions it serves. A node's stream that ends (its
//     partitions moved: NOT_OWNER; the node died or restarts) is reopened
//     from the Client's own cursors, so the merged stream sees no gap and
//     no duplicate per session (a pending turn may be told again, as
//     after any resubscribe).
//   - Watch (one session's, or a tree's: Follow and FollowTree too)
//     follows NOT_OWNER as a unary call does, and a watch that ends
//     because its partition moved (NOT_OWNER) or its node died is
//     reopened where the session is served, after the last seq it handed
//     out per session: no gap, no duplicate.

// followingKey marks a call already being followed, so that the pool's
// connections (which carry the interceptor too) do not follow again.
type followingKey struct{}

// peers is a Client's view of a cluster: every node's address and a
// connection to each, made when first needed.
type peers struct {
	self      string
	addrs     []string // self first, then Options.Peers, then learned ones
	opts      Options
	followFor time.Duration
	logf      func(string, ...any)

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newPeers(self string, opts Options) *peers {
	p := &peers{self: self, opts: opts, followFor: opts.FollowFor, logf: opts.Logf, conns: map[string]*grpc.ClientConn{}}
	if p.followFor <= 0 {
		p.followFor = 30 * time.Second
	}
	if p.logf == nil {
		p.logf = func(string, ...any) {}
	}
	p.addrs = append(p.addrs, self)
	for _, a := range opts.Peers {
		if !slices.Contains(p.addrs, a) {
			p.addrs = append(p.addrs, a)
		}
	}
	return p
}

// nodes returns every known node's address.
func (p *peers) nodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.addrs)
}

// conn returns the connection to addr, dialling it (without waiting) the
// first time; the Client's own connection for self.
func (p *peers) conn(addr string, self *grpc.ClientConn) (*grpc.ClientConn, error) {
	if addr == p.self {
		return self, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, dialOptions(p.opts, p)...)
	if err != nil {
		return nil, err
	}
	p.conns[addr] = c
	if !slices.Contains(p.addrs, addr) {
		p.addrs = append(p.addrs, addr)
	}
	return c, nil
}

// next returns the node after addr in the ring of known nodes.
func (p *peers) next(addr string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.addrs, addr)
	return p.addrs[(i+1)%len(p.addrs)]
}

func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = map[string]*grpc.ClientConn{}
}

// redirect says where a call refused with err at node at goes next, and
// after what wait; ok is false for an error not to follow.
func (p *peers) redirect(err error, at string, try int) (next string, wait time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus {
		return "", 0, false
	}
	w := backoffDelay(try, 50*time.Millisecond, time.Second)
	reason, md := errorInfoOf(st)
	switch {
	case reason == hubpb.Reason_NOT_OWNER.String() && md["owner_addr"] != "" && md["owner_addr"] != at:
		if try > 1 {
			return md["owner_addr"], w, true // a chain of moves: do not spin
		}
		return md["owner_addr"], 0, true
	case reason == hubpb.Reason_NOT_OWNER.String():
		return at, w, true // no owner yet: the partition changes hands
	case reason == "" && st.Code() == codes.Unavailable, reason == hubpb.Reason_DRAINING.String():
		return p.next(at), w, true // the node is unreachable or stopping: ask another
	}
	return "", 0, false
}

// errorInfoOf returns a status's hubd ErrorInfo reason and metadata.
func errorInfoOf(st *status.Status) (string, map[string]string) {
	for _, d := range st.Details() {
		if info, ok := d.(interface {
			GetReason() string
			GetDomain() string
			GetMetadata() map[string]string
		}); ok && info.GetDomain() == ErrorDomain {
			return info.GetReason(), info.GetMetadata()
		}
	}
	return "", nil
}

// unary is the interceptor that follows NOT_OWNER and dead nodes.
func (p *peers) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if ctx.Value(followingKey{}) != nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	ctx = context.WithValue(ctx, followingKey{}, true)
	err := invoker(ctx, method, req, reply, cc, opts...)
	at, deadline := p.self, time.Now().Add(p.followFor)
	for try := 1; err != nil && time.Now().Before(deadline); try++ {
		next, wait, ok := p.redirect(err, at, try)
		if !ok || ctx.Err() != nil {
			return err
		}
		if wait > 0 && !sleep(ctx, wait) {
			return err
		}
		c, cerr := p.conn(next, cc)
		if cerr != nil {
			return err
		}
		if next != at {
			p.logf("agentsdk: %s: following to %s (%v)", method, next, err)
		}
		at = next
		err = c.Invoke(ctx, method, req, reply, opts...)
	}
	return err
}

// clusterStream is Subscribe over every node of a cluster: one stream per
// node, merged, each reopened from the merged cursors when it ends.
type clusterStream struct {
	ctx    context.Context
	out    chan *hubpb.Delivery
	errc   chan error
	cancel context.CancelFunc

	mu      sync.Mutex
	cursors map[string]uint64 // highest seq handed out per session
}

// subscribeCluster opens the merged stream.
func (c *Client) subscribeCluster(ctx context.Context, opts SubscribeOptions, callOpts ...grpc.CallOption) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	cs := &clusterStream{ctx: ctx, out: make(chan *hubpb.Delivery, 256), errc: make(chan error, 1), cancel: cancel,
		cursors: maps.Clone(opts.Cursors)}
	if cs.cursors == nil {
		cs.cursors = map[string]uint64{}
	}
	started := make(chan error, 1)
	var once sync.Once
	for i, addr := range c.peers.nodes() {
		conn, err := c.peers.conn(addr, c.conn)
		if err != nil {
			cancel()
			return nil, wrapErr("subscribe", err)
		}
		go cs.node(ctx, c, hubsvc.NewHubClient(conn), addr, opts, callOpts, func(err error) {
			if i == 0 {
				once.Do(func() { started <- err })
			}
		})
	}
	// The node dialled answers first, so that a refusal (credentials) is
	// Subscribe's error as on a single hub.
	select {
	case err := <-started:
		if err != nil {
			cancel()
			return nil, err
		}
	case <-ctx.Done():
		cancel()
		return nil, wrapErr("subscribe", ctx.Err())
	}
	return &Stream{op: "subscribe", merged: cs, cancel: cancel}, nil
}

// node keeps one node's stream open until ctx ends, handing its
// deliveries on; started is told how the first attempt went. Each attempt
// subscribes with opts from the merged stream's cursors.
func (cs *clusterStream) node(ctx context.Context, c *Client, rpc hubsvc.HubClient, addr string, opts SubscribeOptions, callOpts []grpc.CallOption, started func(error)) {
	for try := 1; ; try++ {
		cs.mu.Lock()
		opts.Cursors = cs.cursors
		req := subscribeRequest(opts) // copies the cursors
		cs.mu.Unlock()
		s, err := rpc.Subscribe(context.WithValue(ctx, followingKey{}, true), req, callOpts...)
		if err == nil {
			started(nil)
			for {
				var d *hubpb.Delivery
				if d, err = s.Recv(); err != nil {
					break
				}
				try = 1
				select {
				case cs.out <- d:
				case <-ctx.Done():
					return
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		werr := wrapErr("subscribe", err)
		if errors.Is(err, io.EOF) {
			werr = nil
		}
		if werr != nil && !retryable(werr) {
			started(werr)
			select {
			case cs.errc <- werr:
			default:
			}
			return
		}
		started(nil) // a node down is not the merged stream's failure
		c.logf("agentsdk: subscribe: the stream of %s ended (%v); reopening from the cursors", addr, werr)
		if !sleep(ctx, backoffDelay(try, 50*time.Millisecond, time.Second)) {
			return
		}
	}
}

// recv returns the next delivery not handed out yet (a turn told again
// passes).
func (cs *clusterStream) recv() (*hubpb.Delivery, error) {
	for {
		select {
		case d := <-cs.out:
			e := d.GetEnvelope()
			cs.mu.Lock()
			fresh := e.GetSeq() > cs.cursors[e.GetSessionId()]
			if fresh {
				cs.cursors[e.GetSessionId()] = e.GetSeq()
			}
			cs.mu.Unlock()
			if fresh || d.GetYourTurn() {
				return d, nil
			}
		case err := <-cs.errc:
			return nil, err
		case <-cs.ctx.Done():
			return nil, wrapErr("subscribe", status.FromContextError(cs.ctx.Err()).Err())
		}
	}
}

// clusterWatch is a Watch that follows its session's partition.
type clusterWatch struct {
	ctx      context.Context
	c        *Client
	req      *hubpb.WatchRequest
	callOpts []grpc.CallOption
	next     map[string]uint64 // the next seq per session
	at       string            // the node watched
	s        grpc.ServerStreamingClient[hubpb.Delivery]
	cancel   context.CancelFunc // ends s
}

// watchCluster opens a Watch at the Client's node, to be followed from
// there.
func (c *Client) watchCluster(ctx context.Context, req *hubpb.WatchRequest, callOpts ...grpc.CallOption) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &clusterWatch{ctx: ctx, c: c, req: req, callOpts: callOpts, next: map[string]uint64{req.GetSessionId(): max(req.GetFromSeq(), 1)},
		at: c.peers.self}
	for id, cur := range req.GetCursors() {
		w.next[id] = cur + 1
	}
	if err := w.open(); err != nil {
		cancel()
		return nil, wrapErr("watch", err)
	}
	return &Stream{op: "watch", watch: w, cancel: cancel}, nil
}

// open (re)opens the watch at w.at, after the seqs handed out.
func (w *clusterWatch) open() error {
	if w.cancel != nil {
		w.cancel()
	}
	req := proto.Clone(w.req).(*hubpb.WatchRequest)
	req.FromSeq = w.next[req.GetSessionId()]
	if req.GetTree() {
		req.Cursors = map[string]uint64{}
		for id, n := range w.next {
			if id != req.GetSessionId() {
				req.Cursors[id] = n - 1
			}
		}
	}
	conn, err := w.c.peers.conn(w.at, w.c.conn)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.WithValue(w.ctx, followingKey{}, true))
	// A node that is down fails at once (WaitForReady would wait for it):
	// the next one knows the owner.
	s, err := hubsvc.NewHubClient(conn).Watch(ctx, req, append(slices.Clip(w.callOpts), grpc.WaitForReady(false))...)
	if err != nil {
		cancel()
		return err
	}
	w.s, w.cancel = s, cancel
	return nil
}

// recv returns the next delivery not handed out yet, following the
// session's partition when the watch is refused or ends.
func (w *clusterWatch) recv() (*hubpb.Delivery, error) {
	var deadline time.Time
	for try := 1; ; {
		d, err := w.s.Recv()
		if err == nil {
			try, deadline = 1, time.Time{}
			e := d.GetEnvelope()
			if e.GetSeq() < w.next[e.GetSessionId()] {
				continue
			}
			w.next[e.GetSessionId()] = e.GetSeq() + 1
			return d, nil
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if w.ctx.Err() != nil {
			return nil, wrapErr("watch", status.FromContextError(w.ctx.Err()).Err())
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(w.c.peers.followFor)
		}
		next, wait, ok := w.c.peers.redirect(err, w.at, try)
		if !ok || time.Now().After(deadline) {
			return nil, wrapErr("watch", err)
		}
		if wait > 0 && !sleep(w.ctx, wait) {
			return nil, wrapErr("watch", err)
		}
		if next != w.at {
			w.c.logf("agentsdk: watch %s: following to %s (%v)", w.req.GetSessionId(), next, err)
		}
		w.at = next
		try++
		for err = w.open(); err != nil; err = w.open() {
			// A node that cannot be dialled: the next one.
			if w.at = w.c.peers.next(w.at); time.Now().After(deadline) || !sleep(w.ctx, wait) {
				return nil, wrapErr("watch", err)
			}
		}
	}
}
