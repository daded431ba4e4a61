package cluster

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

// An agent's deliveries (Subscribe, or an agent stream's subscription)
// come from every node that serves a session it takes part in. The node
// asked gathers them: it subscribes its own hub and, for the same client,
// the node service of every node holding a lease, and merges what they
// deliver, each session's envelopes once and in seq order (a pending turn
// may be told again, as after any resubscribe). A node's stream that ends
// because partitions moved (NOT_OWNER: the node lost them, or loaded
// sessions the agent takes part in), because the node is stopping
// (DRAINING) or cannot be reached is opened again from the merged
// cursors, so that what moved is caught up from where the client is; a
// node that no longer holds any lease is dropped, and one that takes a
// lease is subscribed as soon as the lease is seen. Any other end (a
// limit, the client too slow for a node's bounds) ends the merged stream
// with that node's status, as one node's would.

// registerTimeout bounds the wait, as a merged subscription starts, for
// the other nodes to register their parts (so that what is sent once the
// subscription is answered reaches it): a node slower than that is
// caught up from the cursors once it answers.
const registerTimeout = 2 * time.Second

// merged is a subscription gathered from every node.
type merged struct {
	*pipe
	n     *Node
	from  context.Context // the client's call: its trace context
	id    hubgrpc.Identity
	req   *hubpb.SubscribeRequest
	local hubgrpc.OpenLocal[*hubpb.SubscribeRequest]

	mu      sync.Mutex
	cursors map[string]uint64 // the highest seq handed on per session
	parts   map[string]bool   // the nodes with a stream open or reopening
}

// Subscribe implements hubgrpc.Router: the deliveries of id, gathered
// from every node. The hub's own part is opened first and its refusal is
// the call's (credentials, limits), as on one node.
func (n *Node) Subscribe(ctx context.Context, id hubgrpc.Identity, req *hubpb.SubscribeRequest, local hubgrpc.OpenLocal[*hubpb.SubscribeRequest]) (hubgrpc.Deliveries, error) {
	if n.service == nil {
		return local(ctx, req)
	}
	m := &merged{n: n, from: ctx, id: id, req: req, local: local, cursors: maps.Clone(req.GetCursors()), parts: map[string]bool{}}
	if m.cursors == nil {
		m.cursors = map[string]uint64{}
	}
	m.pipe = newPipe(ctx, m.fresh)
	own, err := n.localSource(m.ctx, "Subscribe", func(ctx context.Context) (hubgrpc.Deliveries, error) { return local(ctx, m.request()) })
	if err != nil {
		m.cancel()
		return nil, err
	}
	m.start(n.cfg.NodeID, &own, nil)
	peers := m.others()
	registered := make(chan struct{}, len(peers))
	for _, p := range peers {
		m.start(p, nil, registered)
	}
	t := time.NewTimer(registerTimeout)
	defer t.Stop()
wait:
	for range peers {
		select {
		case <-registered:
		case <-t.C:
			n.logger.Debug().Str("agent", id.Agent).Msg("cluster: a subscription started before every node registered it")
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	m.wg.Add(1)
	go m.follow()
	return m, nil
}

// request is the subscription's request with the merged cursors.
func (m *merged) request() *hubpb.SubscribeRequest {
	r := proto.CloneOf(m.req)
	m.mu.Lock()
	r.Cursors = maps.Clone(m.cursors)
	m.mu.Unlock()
	return r
}

// fresh is the pipe's keep: an envelope after the session's cursor, or a
// pending turn told again.
func (m *merged) fresh(d *hubpb.Delivery) bool {
	if d.GetDelta() != nil {
		return true // best-effort, outside the cursors
	}
	e := d.GetEnvelope()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.GetSeq() > m.cursors[e.GetSessionId()] {
		m.cursors[e.GetSessionId()] = e.GetSeq()
		return true
	}
	return d.GetYourTurn()
}

// others returns the nodes that hold a lease, this one aside, that have
// no stream yet.
func (m *merged) others() []string {
	var out []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.n.leases.Owners() { //hubd:orderless sorted below
		if o.NodeID != m.n.cfg.NodeID && !m.parts[o.NodeID] && !slices.Contains(out, o.NodeID) {
			out = append(out, o.NodeID)
		}
	}
	slices.Sort(out)
	return out
}

// start runs node's part: first (this node's own) opened already, or
// opened now; registered is told once the first attempt is answered.
func (m *merged) start(node string, first *source, registered chan<- struct{}) {
	m.mu.Lock()
	m.parts[node] = true
	m.mu.Unlock()
	m.wg.Add(1)
	go m.run(node, first, registered)
}

// follow subscribes the nodes that take a lease, as they do.
func (m *merged) follow() {
	defer m.wg.Done()
	for {
		changed := m.n.leases.Changed()
		for _, p := range m.others() {
			m.start(p, nil, nil)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-changed:
		}
	}
}

// run keeps node's stream open and pushes what it delivers, reopening it
// from the merged cursors when it ends for a reason that says to.
func (m *merged) run(node string, first *source, registered chan<- struct{}) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		delete(m.parts, node)
		m.mu.Unlock()
	}()
	for try := 0; ; try++ {
		src, err := m.open(node, first)
		first = nil
		if registered != nil {
			registered <- struct{}{}
			registered = nil
		}
		if err == nil {
			for {
				var d *hubpb.Delivery
				if d, err = src.next(); err != nil {
					break
				}
				try = 0
				if !m.push(d) {
					break
				}
			}
			src.close()
		}
		switch {
		case m.ctx.Err() != nil:
			return
		case !m.reopens(node, err):
			m.fail(err)
			return
		case node != m.n.cfg.NodeID && !m.n.serves(node):
			return // its partitions are served elsewhere now, and subscribed there
		}
		m.n.logger.Debug().Err(err).Str("agent", m.id.Agent).Str("from_node", node).Msg("cluster: a node's part of a subscription ended; reopening it from the cursors")
		if !sleep(m.ctx, reopenWait(try)) {
			return
		}
	}
}

// open opens node's part with the merged cursors (first if given).
func (m *merged) open(node string, first *source) (source, error) {
	switch {
	case first != nil:
		return *first, nil
	case node == m.n.cfg.NodeID:
		return m.n.localSource(m.ctx, "Subscribe", func(ctx context.Context) (hubgrpc.Deliveries, error) { return m.local(ctx, m.request()) })
	default:
		return m.n.remoteSource(m.ctx, m.from, m.id, node, m.request())
	}
}

// reopens reports whether a part that ended with err is opened again: its
// partitions moved (NOT_OWNER); and for another node's, the node stopping
// (DRAINING), gone or unreachable, or its stream ended. This node's own
// hub stopping ends the merged stream (DRAINING): the client goes to
// another node.
func (m *merged) reopens(node string, err error) bool {
	switch {
	case isReason(err, hubpb.Reason_NOT_OWNER):
		return true
	case node == m.n.cfg.NodeID:
		return false
	}
	return unavailable(err)
}

// unavailable reports an error that says another node cannot serve a
// stream at the moment: it stops (DRAINING), its address is not known, it
// cannot be reached, or its stream ended.
func unavailable(err error) bool {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, ErrUnreachable), isReason(err, hubpb.Reason_DRAINING):
		return true
	case hubInfo(err) == nil:
		c := status.Code(err)
		return c == codes.Unavailable || c == codes.Canceled || c == codes.Unknown || c == codes.Internal
	}
	return false
}

// serves reports whether node holds a lease.
func (n *Node) serves(node string) bool {
	for _, o := range n.leases.Owners() { //hubd:orderless a lookup
		if o.NodeID == node {
			return true
		}
	}
	return false
}
