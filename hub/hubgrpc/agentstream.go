package hubgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// DefaultMaxInFlight is how many sends of one agent stream the hub runs
// at once unless Config says otherwise; the stream's further frames are
// read as they complete (gRPC's flow control holds the agent back).
const DefaultMaxInFlight = 256

// connectMethod is the agent stream's full method name: its frames are
// checked one by one (a malformed send is answered, not the stream ended).
const connectMethod = "/hubd.v1.Hub/AgentStream"

// AgentStream implements hubsvc.HubServer: an agent's connection as one
// stream. The handler's goroutine reads the agent's frames. Sends and
// opens run on a small pool of the stream's own goroutines (as many as
// are in flight, none when idle), each answered with its ref once
// durable, or with the status Send or Open would return. Deliveries,
// once subscribed, are written by a goroutine that runs only while some
// are ready: an idle stream holds the handler's goroutine alone (with
// StreamTap installed; without it a second goroutine reads, so that the
// handler can end the stream). Writes to the stream are serialised.
func (s *Service) AgentStream(stream grpc.BidiStreamingServer[hubpb.AgentFrame, hubpb.HubFrame]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "AgentStream", err)
	}
	done, err := s.takeConnStream(ctx)
	if err != nil {
		return statusOf(s.lg, "AgentStream", err)
	}
	defer done()
	// The stream is one of the agent's over all its connections, whether it
	// subscribes or only sends.
	place, err := s.f.TakeStream(id.Agent)
	if err != nil {
		return statusOf(s.lg, "AgentStream", err)
	}
	defer place.Release()
	c := &agentConn{svc: s, id: id, stream: stream, place: place, slots: make(chan struct{}, s.maxInFlight), ended: make(chan struct{})}
	c.cancelStream, _ = ctx.Value(streamCancelKey{}).(context.CancelCauseFunc)
	return c.run(ctx)
}

// streamCancelKey is the context key of an agent stream's cancel
// function, put there by StreamTap.
type streamCancelKey struct{}

// StreamTap is a grpc.InTapHandle for a server of this service: it gives
// each agent stream a context the service can cancel, which is how a
// stream whose only goroutine sits in Recv is ended by the hub (a slow
// subscriber cut off, the hub closing). Other calls pass through.
func StreamTap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != connectMethod {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx) // cancelled with the stream's own context at its end
	return context.WithValue(ctx, streamCancelKey{}, cancel), nil
}

// agentConn is one agent stream.
type agentConn struct {
	svc    *Service
	id     Identity
	stream grpc.BidiStreamingServer[hubpb.AgentFrame, hubpb.HubFrame]
	place  *feed.StreamPlace // the stream's place among the agent's; its subscription's too
	slots  chan struct{}     // one per send in flight
	wmu    sync.Mutex        // serialises stream.Send
	wg     sync.WaitGroup

	mu       sync.Mutex
	queue    []*hubpb.AgentFrame // sends and opens, checked
	running  int                 // workers started and not yet exited
	busy     int                 // of which are running a send or open
	parked   int                 // of which wait for work (linger)
	workWake chan struct{}       // wakes a parked worker; made with the first worker

	// cancelStream cancels the stream's context (StreamTap); nil without
	// the tap.
	cancelStream context.CancelCauseFunc
	endOnce      sync.Once
	ended        chan struct{} // closed by end
	endErr       error         // why, set before ended is closed

	dmu      sync.Mutex
	ctx      context.Context // the handler's, for the drainer
	sub      Deliveries
	draining bool          // a drainer runs
	pending  bool          // something was queued while it ran
	closed   bool          // the handler is returning: no new drainer
	grace    *time.Timer   // cancels the stream if the agent ignores a closing frame
	wake     chan struct{} // wakes a lingering drainer; made with the first drainer
}

// linger is how long a stream's send worker or drainer, out of work,
// waits for more before it exits: a busy stream keeps its goroutines (and
// the stacks they grew), an idle one holds none.
const linger = 50 * time.Millisecond

// run serves the stream until the agent leaves, the hub closes or the
// subscription ends; every send read is answered before it returns.
func (c *agentConn) run(ctx context.Context) error {
	// The handler's return cancels what it started. With the tap the
	// stream's own context is cancellable and serves; only without it is
	// another made (a context and its done channel less per idle stream).
	cancel := c.cancelStream
	if cancel == nil {
		ctx, cancel = context.WithCancelCause(ctx)
	}
	c.ctx = ctx
	defer func() {
		c.dmu.Lock()
		c.closed = true
		sub := c.sub
		if c.grace != nil {
			c.grace.Stop()
		}
		c.dmu.Unlock()
		cancel(nil) // sends not begun give up; begun ones are answered
		if sub != nil {
			sub.Close()
		}
		c.wg.Wait() // no write after the handler returns
	}()
	defer c.svc.track(c)()
	ready := &hubpb.HubFrame{Frame: &hubpb.HubFrame_Ready{Ready: &hubpb.StreamReady{Agent: c.id.Agent, MaxInFlight: uint32(cap(c.slots)), Opens: true}}}
	if err := c.write(ready); err != nil {
		return err
	}
	if c.cancelStream == nil { // no tap: only the handler can end the stream, so another goroutine reads
		readDone := make(chan error, 1)
		go func() { readDone <- c.read(ctx, cancel) }()
		select {
		case err := <-readDone:
			return c.afterRead(ctx, err)
		case <-c.ended:
			return c.endErr
		}
	}
	return c.afterRead(ctx, c.read(ctx, cancel))
}

// afterRead is what the stream returns once the agent's side has ended
// (err nil) or failed: the stream's own end if it came first; else, on a
// subscribed stream, deliveries go on until the agent cancels or the
// subscription ends.
func (c *agentConn) afterRead(ctx context.Context, err error) error {
	select {
	case <-c.ended:
		return c.endErr
	default:
	}
	if err != nil {
		return err
	}
	c.dmu.Lock()
	subscribed := c.sub != nil
	c.dmu.Unlock()
	if !subscribed {
		return nil
	}
	select {
	case <-c.ended:
		return c.endErr
	case <-ctx.Done():
		return c.endedBy(ctx)
	}
}

// DefaultCloseGrace is how long the hub waits, after a closing frame,
// for the agent to close its side before it cancels the stream.
const DefaultCloseGrace = 5 * time.Second

// end ends the stream with err (a status; nil when the handler is
// returning anyway), once: the agent is told by a closing frame and asked
// to close its side, after which the handler returns err as the stream's
// status. Without StreamTap the handler returns at once; with it, an
// agent that does not close its side within Config.CloseGrace has the stream
// cancelled under it.
func (c *agentConn) end(err error) {
	c.endOnce.Do(func() {
		c.endErr = err
		close(c.ended)
		if err == nil {
			return
		}
		c.dmu.Lock()
		if c.closed {
			c.dmu.Unlock()
			return
		}
		c.wg.Add(1) // the handler returns only after this write
		c.dmu.Unlock()
		defer c.wg.Done()
		_ = c.write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Closing{Closing: StreamError(err)}})
		if c.cancelStream != nil {
			t := time.AfterFunc(c.svc.closeGrace, func() { c.cancelStream(err) })
			c.dmu.Lock()
			c.grace = t
			c.dmu.Unlock()
		}
	})
}

// isEnded reports whether end was called.
func (c *agentConn) isEnded() bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

// endedBy is what a stream whose context ended returns: the reader's
// failure, or nothing when the agent left.
func (c *agentConn) endedBy(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// subscribe starts the stream's deliveries.
func (c *agentConn) subscribe(ctx context.Context, req *hubpb.SubscribeRequest) error {
	if _, err := subscribeOptions(req); err != nil {
		return err
	}
	sub, err := c.svc.subscribe(ctx, c.id, req, c.place)
	if err != nil {
		return err
	}
	c.dmu.Lock()
	if c.closed {
		c.dmu.Unlock()
		sub.Close()
		return hub.ErrClosed
	}
	c.sub = sub
	c.draining = true // the handler reads first: a kick meanwhile is left pending
	c.dmu.Unlock()
	sub.OnReady(c.kick)
	// The first read of the catch-up is made here, on the handler's
	// goroutine: a stream with nothing to catch up on (an idle agent's
	// usual start) starts no drainer until something arrives.
	d, ok, err := sub.TryNext(ctx)
	if err != nil {
		return err
	}
	if ok {
		if err := c.write(deliveryFrame(d)); err != nil {
			return err
		}
	}
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if ok || c.pending { // maybe more: the drainer goes on
		c.pending = false
		c.startDrain()
	} else {
		c.draining = false
	}
	return nil
}

// startDrain starts a drainer; c.dmu is held.
func (c *agentConn) startDrain() {
	if c.wake == nil {
		c.wake = make(chan struct{}, 1)
	}
	c.draining = true
	c.wg.Add(1)
	go c.drain(c.ctx, c.sub)
}

// kick makes sure a drainer runs: the subscription has, or may have,
// something to write. Called by whoever queued it; it never blocks.
func (c *agentConn) kick() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	switch {
	case c.closed || c.sub == nil:
	case c.draining:
		c.pending = true
		select {
		case c.wake <- struct{}{}:
		default:
		}
	default:
		c.startDrain()
	}
}

// drain writes the subscription's deliveries until none is ready and
// none comes within linger, then exits; a subscription that ends ends the
// stream.
func (c *agentConn) drain(ctx context.Context, sub Deliveries) {
	defer c.wg.Done()
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		if c.isEnded() {
			c.dmu.Lock()
			c.draining = false
			c.dmu.Unlock()
			return
		}
		d, ok, err := sub.TryNext(ctx)
		if err != nil {
			if ctx.Err() != nil {
				c.end(c.endedBy(ctx))
			} else {
				c.end(statusOf(c.svc.lg, "AgentStream", err))
			}
			return
		}
		if ok {
			if err := c.write(deliveryFrame(d)); err != nil {
				c.end(err)
				return
			}
			continue
		}
		if c.more() {
			continue
		}
		if t == nil {
			t = time.NewTimer(linger)
		} else {
			t.Reset(linger)
		}
		select {
		case <-c.wake:
			continue
		case <-t.C:
		case <-ctx.Done():
		}
		if c.more() {
			continue
		}
		c.dmu.Lock()
		if c.pending && !c.closed { // kicked as the timer fired
			c.pending = false
			c.dmu.Unlock()
			continue
		}
		c.draining = false
		c.dmu.Unlock()
		return
	}
}

// more reports, for the drainer, whether it was kicked since it last
// looked (and takes the kick).
func (c *agentConn) more() bool {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.pending && !c.closed {
		c.pending = false
		return true
	}
	return false
}

// read reads the agent's frames until its side ends (nil) or fails: sends
// and opens go to the workers, the one subscribe request starts the
// deliveries.
func (c *agentConn) read(ctx context.Context, cancel context.CancelCauseFunc) error {
	subscribed := false
	for {
		f, err := c.stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			cancel(err)
			return err
		}
		checkErr := c.svc.check(f)
		switch fr := f.GetFrame().(type) {
		case *hubpb.AgentFrame_Send, *hubpb.AgentFrame_Open:
			select {
			case c.slots <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			if checkErr == nil && c.isEnded() {
				checkErr = fmt.Errorf("the stream is closing (%v): send it again on a new stream (an open with the same idempotency key, a send with the same client_msg_id): %w", c.endErr, hub.ErrClosed)
			}
			if checkErr != nil {
				c.answer(&hubpb.StreamAck{Ref: refOf(f)}, checkErr)
				<-c.slots
				continue
			}
			c.enqueue(ctx, f)
		case *hubpb.AgentFrame_Delta:
			c.delta(ctx, fr.Delta, checkErr)
		case *hubpb.AgentFrame_Subscribe:
			err := checkErr
			if err == nil && subscribed {
				err = fmt.Errorf("this agent stream is already subscribed (one subscribe per stream): %w", session.ErrMalformed)
			}
			if err == nil {
				err = c.subscribe(ctx, fr.Subscribe)
			}
			if err != nil {
				err = statusOf(c.svc.lg, "AgentStream", err)
				cancel(err)
				return err
			}
			subscribed = true
		default:
			err := checkErr
			if err == nil {
				err = fmt.Errorf("an AgentFrame needs send, open, delta or subscribe: %w", session.ErrMalformed)
			}
			err = statusOf(c.svc.lg, "AgentStream", err)
			cancel(err)
			return err
		}
	}
}

// refOf is the ref of a send or open frame.
func refOf(f *hubpb.AgentFrame) uint64 {
	if o := f.GetOpen(); o != nil {
		return o.GetRef()
	}
	return f.GetSend().GetRef()
}

// enqueue queues a send or open, waking a parked worker or starting one
// unless one is free to take it.
func (c *agentConn) enqueue(ctx context.Context, f *hubpb.AgentFrame) {
	c.mu.Lock()
	c.queue = append(c.queue, f)
	start := c.running-c.busy < len(c.queue)
	if start {
		c.running++
		c.wg.Add(1)
		if c.workWake == nil {
			c.workWake = make(chan struct{}, cap(c.slots))
		}
	}
	wake := !start && c.parked > 0
	c.mu.Unlock()
	switch {
	case start:
		go c.work(ctx)
	case wake:
		select {
		case c.workWake <- struct{}{}:
		default:
		}
	}
}

// work runs queued sends and opens until none is left and none comes
// within linger.
func (c *agentConn) work(ctx context.Context) {
	defer c.wg.Done()
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.parked++
			c.mu.Unlock()
			if t == nil {
				t = time.NewTimer(linger)
			} else {
				t.Reset(linger)
			}
			woke := false
			select {
			case <-c.workWake:
				woke = true
			case <-t.C:
			case <-ctx.Done():
			}
			c.mu.Lock()
			c.parked--
			if len(c.queue) == 0 && !woke { // a stale wake-up parks again
				c.running--
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			continue
		}
		f := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = c.queue[:0:0] // let the backing array go
		}
		c.busy++
		c.mu.Unlock()
		c.serve(ctx, f)
		<-c.slots
		c.mu.Lock()
		c.busy--
		c.mu.Unlock()
	}
}

// serve runs one send or open and answers it, in its span.
func (c *agentConn) serve(ctx context.Context, f *hubpb.AgentFrame) {
	began := time.Now()
	var (
		method string
		span   trace.Span
		err    error
	)
	ack := &hubpb.StreamAck{Ref: refOf(f)}
	if o := f.GetOpen(); o != nil {
		method = "Open"
		ctx, span = c.svc.traceStream(ctx, openMethod, c.id.Agent, "", o.GetTraceparent(), o.GetTracestate(), nil)
		ack.Opened, err = c.open(ctx, o)
	} else {
		method = "Send"
		s := f.GetSend()
		ctx, span = c.svc.traceStream(ctx, sendMethod, c.id.Agent, s.GetSessionId(), s.GetTraceparent(), s.GetTracestate(), s.GetEnvelope())
		ack.Response, err = c.send(ctx, s)
	}
	err = c.answer(ack, err)
	failed(span, err)
	span.End()
	if c.svc.onStreamRequest != nil {
		c.svc.onStreamRequest(method, err, time.Since(began))
	}
}

// send is Send on the stream: the sender is the stream's agent.
func (c *agentConn) send(ctx context.Context, f *hubpb.StreamSend) (*hubpb.SendResponse, error) {
	sid, err := parseID("session_id", f.GetSessionId())
	if err != nil {
		return nil, err
	}
	if c.svc.router == nil {
		return c.svc.h.Send(ctx, c.id.Agent, sid, f.GetEnvelope()) // unknown fields: dropped by the codec
	}
	req := &hubpb.SendRequest{SessionId: f.GetSessionId(), Envelope: f.GetEnvelope()}
	return routed(c, ctx, hubsvc.Hub_Send_FullMethodName, req, func(ctx context.Context, r *hubpb.SendRequest) (*hubpb.SendResponse, error) {
		return c.svc.h.Send(ctx, c.id.Agent, sid, r.GetEnvelope())
	})
}

// open is Open on the stream: the creator is the stream's agent.
func (c *agentConn) open(ctx context.Context, f *hubpb.StreamOpen) (*hubpb.OpenResponse, error) {
	if f.GetRequest() == nil {
		return nil, fmt.Errorf("StreamOpen.request is required: %w", session.ErrMalformed)
	}
	if c.svc.router == nil {
		return c.svc.h.Open(ctx, c.id.Agent, f.GetRequest())
	}
	return routed(c, ctx, hubsvc.Hub_Open_FullMethodName, f.GetRequest(), func(ctx context.Context, r *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
		return c.svc.h.Open(ctx, c.id.Agent, r)
	})
}

// routed runs a send or open of the stream through the Router, as the
// call method with request req; run runs a request on the hub (req, or
// the copy the Router tries again).
func routed[R any, T any](c *agentConn, ctx context.Context, method string, req R, run func(context.Context, R) (T, error)) (T, error) {
	return routedAs(c.svc, c.id, ctx, method, req, run)
}

// routedAs is routed for a call of id's on svc that is not a unary call
// (a frame of a stream).
func routedAs[R any, T any](svc *Service, id Identity, ctx context.Context, method string, req R, run func(context.Context, R) (T, error)) (T, error) {
	var zero T
	resp, err := svc.router.Unary(WithIdentity(ctx, id), req, &grpc.UnaryServerInfo{Server: svc, FullMethod: method},
		func(ctx context.Context, r any) (any, error) {
			in, ok := r.(R)
			if !ok {
				return nil, statusOf(svc.lg, method, fmt.Errorf("routed %s was given a %T", method, r))
			}
			resp, err := run(ctx, in)
			if err != nil {
				return nil, statusOf(svc.lg, method, err)
			}
			return resp, nil
		})
	if err != nil {
		return zero, err
	}
	out, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("routed %s answered a %T", method, resp)
	}
	return out, nil
}

// answer writes ack, or err as the status of a Send or Open call carries
// it (ack's answer dropped), and returns that status (nil for an ack). A
// failed write is the stream's end, which the handler sees.
func (c *agentConn) answer(ack *hubpb.StreamAck, err error) error {
	if err != nil {
		err = statusOf(c.svc.lg, "AgentStream", err)
		ack.Response, ack.Opened, ack.Error = nil, nil, StreamError(err)
	}
	_ = c.write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Ack{Ack: ack}})
	return err
}

func (c *agentConn) write(f *hubpb.HubFrame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.stream.Send(f)
}

// StreamError is the StreamError of a status error: its code, message and
// hubd ErrorInfo.
func StreamError(err error) *hubpb.StreamError {
	st := status.Convert(err)
	e := &hubpb.StreamError{Code: int32(st.Code()), Message: st.Message()}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			e.Reason = hubpb.Reason(hubpb.Reason_value[info.GetReason()])
			e.Metadata = info.GetMetadata()
		}
	}
	return e
}

// subscribeOptions reads a SubscribeRequest (of Subscribe or of an agent
// stream).
func subscribeOptions(req *hubpb.SubscribeRequest) (feed.SubscribeOptions, error) {
	opts := feed.SubscribeOptions{Cursors: map[session.ID]uint64{}, Ended: req.GetIncludeEnded(), Terse: req.GetTerse(), Deltas: req.GetDeltas()}
	if v := req.GetTurnView(); v != nil {
		opts.TurnView = &feed.ViewOptions{Name: v.GetName(), Window: int(v.GetWindow()), History: v.GetHistory()}
	}
	for _, k := range slices.Sorted(maps.Keys(req.GetCursors())) { // the first bad key named is always the same
		sid, err := parseID("cursors key", k)
		if err != nil {
			return opts, err
		}
		opts.Cursors[sid] = req.GetCursors()[k]
	}
	return opts, nil
}
