package cluster

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

// A watch (of a session, or of its tree, which lives in one partition)
// runs where its session is served: on this node's hub when it serves it,
// on the owner's node service otherwise. The node asked follows the
// session: a watch that ends because its partition moved (NOT_OWNER), its
// node stops (DRAINING) or cannot be reached is opened again where the
// session is served now, after the last seq handed on per session, for up
// to forwardTimeout without progress: no gap, no duplicate. A watch that
// ends cleanly (a tree watch whose root ended) ends the same way here.

// followed is a watch that follows its session from node to node.
type followed struct {
	*pipe
	n     *Node
	from  context.Context
	id    hubgrpc.Identity
	req   *hubpb.WatchRequest
	local hubgrpc.OpenLocal[*hubpb.WatchRequest]

	mu   sync.Mutex
	next map[string]uint64 // the next seq to hand on, per session
}

// Watch implements hubgrpc.Router: the watch runs where its session is
// served, and follows it there. The first attempt's refusal (an unknown
// session, a caller who may not watch it) is the call's.
func (n *Node) Watch(ctx context.Context, id hubgrpc.Identity, req *hubpb.WatchRequest, local hubgrpc.OpenLocal[*hubpb.WatchRequest]) (hubgrpc.Deliveries, error) {
	if n.service == nil {
		return local(ctx, req)
	}
	w := &followed{n: n, from: ctx, id: id, req: req, local: local, next: map[string]uint64{req.GetSessionId(): max(req.GetFromSeq(), 1)}}
	for s, c := range req.GetCursors() { //hubd:orderless copied
		w.next[s] = c + 1
	}
	w.pipe = newPipe(ctx, w.fresh)
	src, err := w.find("")
	if err != nil {
		w.cancel()
		return nil, err
	}
	w.wg.Add(1)
	go w.run(src)
	return w, nil
}

// fresh is the pipe's keep: an envelope not handed on yet.
func (w *followed) fresh(d *hubpb.Delivery) bool {
	if d.GetDelta() != nil {
		return true // best-effort, outside the cursors
	}
	e := d.GetEnvelope()
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.GetSeq() < w.next[e.GetSessionId()] {
		return false
	}
	w.next[e.GetSessionId()] = e.GetSeq() + 1
	return true
}

// request is the watch's request, after what was handed on.
func (w *followed) request() *hubpb.WatchRequest {
	r := proto.CloneOf(w.req)
	w.mu.Lock()
	defer w.mu.Unlock()
	r.FromSeq = w.next[r.GetSessionId()]
	if r.GetTree() {
		r.Cursors = map[string]uint64{}
		for _, s := range slices.Sorted(maps.Keys(w.next)) {
			if s != r.GetSessionId() {
				r.Cursors[s] = w.next[s] - 1
			}
		}
	}
	return r
}

// open opens the watch on node at ("" or this node: its hub).
func (w *followed) open(at string) (source, error) {
	if at == "" || at == w.n.cfg.NodeID {
		return w.n.localSource(w.ctx, "Watch", func(ctx context.Context) (hubgrpc.Deliveries, error) { return w.local(ctx, w.request()) })
	}
	return w.n.remoteSource(w.ctx, w.from, w.id, at, w.request())
}

// find opens the watch where its session is served, starting at node at
// ("": this node's hub, which knows the owner): a NOT_OWNER naming
// another node goes there; one naming none (the partition changes hands),
// or a node stopping or unreachable, is asked again of this node after a
// wait, for up to forwardTimeout. Any other refusal is the answer.
func (w *followed) find(at string) (source, error) {
	deadline := time.Now().Add(forwardTimeout)
	for try := 0; ; try++ {
		src, err := w.open(at)
		if err == nil {
			return src, nil
		}
		owner := ownerIn(err)
		switch {
		case w.ctx.Err() != nil:
			return source{}, err
		case owner != "" && owner != at && try < maxHops:
			at = owner
			continue
		case !isReason(err, hubpb.Reason_NOT_OWNER) && (at == "" || at == w.n.cfg.NodeID || !unavailable(err)):
			return source{}, err
		case time.Now().After(deadline):
			return source{}, err
		}
		at = ""
		if !sleep(w.ctx, reopenWait(try)) {
			return source{}, err
		}
	}
}

// run hands on what the watch delivers, and follows its session when it
// ends for a reason that says to; its end, or a failure to follow, ends
// the feed.
func (w *followed) run(src source) {
	defer w.wg.Done()
	for {
		var err error
		for {
			var d *hubpb.Delivery
			if d, err = src.next(); err != nil {
				break
			}
			if !w.push(d) {
				break
			}
		}
		src.close()
		switch {
		case w.ctx.Err() != nil:
			return
		case errors.Is(err, io.EOF):
			w.fail(io.EOF)
			return
		case !isReason(err, hubpb.Reason_NOT_OWNER) && !unavailable(err):
			w.fail(err)
			return
		}
		w.n.logger.Debug().Err(err).Str("session", w.req.GetSessionId()).Msg("cluster: a watch ended; following its session")
		if src, err = w.find(ownerIn(err)); err != nil {
			w.fail(err)
			return
		}
	}
}
