package cluster

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// feedBuffer is how many deliveries a routed stream holds for its client:
// past it, the streams feeding it wait (and the nodes' own bounds cut off
// a client that does not read, as on one node).
const feedBuffer = 256

// pipe is a hubgrpc.Deliveries that goroutines feed (the streams of the nodes
// that serve the sessions): each delivery pushed passes keep, under the
// pipe's lock and in the order pushed, and is handed out in that order.
// A failure ends it once what was pushed before is handed out.
type pipe struct {
	ctx    context.Context // ends with Close; the feeding goroutines' context
	cancel context.CancelFunc
	q      chan *hubpb.Delivery
	keep   func(*hubpb.Delivery) bool
	wg     sync.WaitGroup // the feeding goroutines

	pmu sync.Mutex // one push at a time: keep and the hand-over in one step

	mu     sync.Mutex
	err    error
	failed chan struct{} // closed by fail
	ready  func()
}

func newPipe(ctx context.Context, keep func(*hubpb.Delivery) bool) *pipe {
	p := &pipe{q: make(chan *hubpb.Delivery, feedBuffer), keep: keep, failed: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(ctx) // the call's: its client gone, the pipe ends too
	return p
}

// push hands d on unless keep drops it; false once the pipe is closed.
func (p *pipe) push(d *hubpb.Delivery) bool {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if !p.keep(d) {
		return true
	}
	select {
	case p.q <- d:
	case <-p.ctx.Done():
		return false
	}
	p.notify()
	return true
}

// fail ends the pipe with err (once).
func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	close(p.failed)
	p.mu.Unlock()
	p.notify()
}

func (p *pipe) notify() {
	p.mu.Lock()
	f := p.ready
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// Next implements hubgrpc.Deliveries.
func (p *pipe) Next(ctx context.Context) (*hubpb.Delivery, error) {
	select {
	case d := <-p.q:
		return d, nil
	default:
	}
	select {
	case d := <-p.q:
		return d, nil
	case <-p.failed:
		return p.afterFailure()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.ctx.Done():
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, hub.ErrClosed
	}
}

// TryNext implements hubgrpc.Deliveries.
func (p *pipe) TryNext(context.Context) (*hubpb.Delivery, bool, error) {
	select {
	case d := <-p.q:
		return d, true, nil
	case <-p.failed:
		d, err := p.afterFailure()
		return d, d != nil, err
	default:
		return nil, false, nil
	}
}

// afterFailure hands out what was pushed before the failure, then the
// failure.
func (p *pipe) afterFailure() (*hubpb.Delivery, error) {
	select {
	case d := <-p.q:
		return d, nil
	default:
		p.mu.Lock()
		defer p.mu.Unlock()
		return nil, p.err
	}
}

// OnReady implements hubgrpc.Deliveries.
func (p *pipe) OnReady(f func()) {
	p.mu.Lock()
	p.ready = f
	p.mu.Unlock()
}

// Close implements hubgrpc.Deliveries: the feeding goroutines end.
func (p *pipe) Close() {
	p.cancel()
	p.wg.Wait()
}

// source is one stream feeding a pipe: a hub's feed, or another node's
// stream.
type source struct {
	next  func() (*hubpb.Delivery, error) // a status, or io.EOF for a clean end
	close func()
}

// localSource opens a stream of this node's hub.
func (n *Node) localSource(ctx context.Context, method string, open func(context.Context) (hubgrpc.Deliveries, error)) (source, error) {
	f, err := open(ctx)
	if err != nil {
		return source{}, err
	}
	return source{close: f.Close, next: func() (*hubpb.Delivery, error) {
		d, err := f.Next(ctx)
		if err != nil && !errors.Is(err, io.EOF) {
			err = hubgrpc.Status(n.logger, method, err)
		}
		return d, err
	}}, nil
}

// remoteSource opens a Subscribe or a Watch (req) on node's node service
// for the client id of the call from; it returns once the node has
// registered it (its response headers) or refused it.
func (n *Node) remoteSource(ctx, from context.Context, id hubgrpc.Identity, node string, req any) (source, error) {
	cc, err := n.peer(node)
	if err != nil {
		return source{}, err
	}
	sctx, cancel := context.WithCancel(outgoingAs(ctx, from, id))
	cl := hubsvc.NewHubClient(cc)
	var s grpc.ServerStreamingClient[hubpb.Delivery]
	switch r := req.(type) {
	case *hubpb.SubscribeRequest:
		s, err = cl.Subscribe(sctx, r)
	case *hubpb.WatchRequest:
		s, err = cl.Watch(sctx, r)
	}
	if err == nil {
		_, err = s.Header()
	}
	if err != nil {
		cancel()
		return source{}, err
	}
	return source{next: s.Recv, close: cancel}, nil
}

// reopenWait is the wait before the try-th attempt to reopen a stream (0
// first): 50 ms, doubling, at most a second.
func reopenWait(try int) time.Duration {
	return min(50*time.Millisecond<<min(try, 5), time.Second)
}

// sleep waits d, false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
