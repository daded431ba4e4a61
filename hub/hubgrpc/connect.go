package hubgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// DefaultMaxInFlight is how many sends of one Connect stream the hub runs
// at once unless Config says otherwise; the stream's further frames are
// read as they complete (gRPC's flow control holds the agent back).
const DefaultMaxInFlight = 256

// connectMethod is the Connect stream's full method name: its frames are
// checked one by one (a malformed send is answered, not the stream ended).
const connectMethod = "/hubd.v1.Hub/Connect"

// Connect implements hubsvc.HubServer: an agent's connection as one
// stream. Sends run on a small pool of the stream's own goroutines (as
// many as are in flight, none when idle), each answered with its ref once
// durable, or with the status Send would return; deliveries, once
// subscribed, come from the stream's handler goroutine. Writes to the
// stream are serialised.
func (s *Service) Connect(stream grpc.BidiStreamingServer[hubpb.AgentFrame, hubpb.HubFrame]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Connect", err)
	}
	done, err := s.takeConnStream(ctx)
	if err != nil {
		return statusOf(s.lg, "Connect", err)
	}
	defer done()
	c := &agentConn{svc: s, id: id, stream: stream, slots: make(chan struct{}, s.maxInFlight)}
	return c.run(ctx)
}

// agentConn is one Connect stream.
type agentConn struct {
	svc    *Service
	id     Identity
	stream grpc.BidiStreamingServer[hubpb.AgentFrame, hubpb.HubFrame]
	slots  chan struct{} // one per send in flight
	wmu    sync.Mutex    // serialises stream.Send
	wg     sync.WaitGroup

	mu      sync.Mutex
	queue   []*hubpb.StreamSend
	running int // workers started and not yet exited
	busy    int // of which are running a send
}

// run serves the stream until the agent leaves, the hub closes or the
// subscription ends; every send read is answered before it returns.
func (c *agentConn) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer func() {
		cancel(nil) // sends not begun give up; begun ones are answered
		c.wg.Wait() // no write after the handler returns
	}()
	ready := &hubpb.HubFrame{Frame: &hubpb.HubFrame_Ready{Ready: &hubpb.StreamReady{Agent: c.id.Agent, MaxInFlight: uint32(cap(c.slots))}}}
	if err := c.write(ready); err != nil {
		return err
	}
	subReq := make(chan *hubpb.SubscribeRequest, 1)
	readDone := make(chan error, 1)
	go func() { readDone <- c.read(ctx, cancel, subReq) }()
	var req *hubpb.SubscribeRequest
	select {
	case req = <-subReq:
	case err := <-readDone:
		c.wg.Wait()
		return err // the agent is done sending (nil) or the stream broke
	case <-c.svc.h.Done():
		return statusOf(c.svc.lg, "Connect", hub.ErrClosed)
	case <-ctx.Done():
		return c.ended(ctx)
	}
	opts, err := subscribeOptions(req)
	if err != nil {
		return statusOf(c.svc.lg, "Connect", err)
	}
	sub, err := c.svc.h.Subscribe(ctx, c.id.Agent, opts)
	if err != nil {
		return statusOf(c.svc.lg, "Connect", err)
	}
	defer sub.Close()
	for {
		d, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return c.ended(ctx)
			}
			return statusOf(c.svc.lg, "Connect", err)
		}
		if err := c.write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: d}}); err != nil {
			return err
		}
	}
}

// ended is what a stream whose context ended returns: the reader's
// failure, or nothing when the agent left.
func (c *agentConn) ended(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// read reads the agent's frames until its side ends (nil) or fails: sends
// go to the workers, the one subscribe request to run.
func (c *agentConn) read(ctx context.Context, cancel context.CancelCauseFunc, subReq chan<- *hubpb.SubscribeRequest) error {
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
		checkErr := checkRequest(f)
		switch f := f.GetFrame().(type) {
		case *hubpb.AgentFrame_Send:
			select {
			case c.slots <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			if checkErr != nil {
				c.answer(f.Send.GetRef(), nil, checkErr)
				<-c.slots
				continue
			}
			c.enqueue(ctx, f.Send)
		case *hubpb.AgentFrame_Subscribe:
			err := checkErr
			if err == nil && subscribed {
				err = fmt.Errorf("this Connect stream is already subscribed (one subscribe per stream): %w", session.ErrMalformed)
			}
			if err != nil {
				err = statusOf(c.svc.lg, "Connect", err)
				cancel(err)
				return err
			}
			subscribed = true
			subReq <- f.Subscribe
		default:
			err := checkErr
			if err == nil {
				err = fmt.Errorf("an AgentFrame needs send or subscribe: %w", session.ErrMalformed)
			}
			err = statusOf(c.svc.lg, "Connect", err)
			cancel(err)
			return err
		}
	}
}

// enqueue queues a send, starting a worker unless one is free to take it.
func (c *agentConn) enqueue(ctx context.Context, f *hubpb.StreamSend) {
	c.mu.Lock()
	c.queue = append(c.queue, f)
	start := c.running-c.busy < len(c.queue)
	if start {
		c.running++
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if start {
		go c.work(ctx)
	}
}

// work runs queued sends until none is left.
func (c *agentConn) work(ctx context.Context) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		f := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = c.queue[:0:0] // let the backing array go
		}
		c.busy++
		c.mu.Unlock()
		began := time.Now()
		sctx, span := traceSend(ctx, c.svc.tracer, c.id.Agent, f)
		resp, err := c.send(sctx, f)
		err = c.answer(f.GetRef(), resp, err)
		failed(span, err)
		span.End()
		if c.svc.onSend != nil {
			c.svc.onSend(err, time.Since(began))
		}
		<-c.slots
		c.mu.Lock()
		c.busy--
		c.mu.Unlock()
	}
}

// send is Send on the stream: the sender is the stream's agent.
func (c *agentConn) send(ctx context.Context, f *hubpb.StreamSend) (*hubpb.SendResponse, error) {
	sid, err := parseID("session_id", f.GetSessionId())
	if err != nil {
		return nil, err
	}
	return c.svc.h.Send(ctx, c.id.Agent, sid, f.GetEnvelope()) // unknown fields: dropped by the codec
}

// answer writes a send's ack, or its error as Send's status carries it,
// and returns that status (nil for an ack). A failed write is the
// stream's end, which the handler sees.
func (c *agentConn) answer(ref uint64, resp *hubpb.SendResponse, err error) error {
	ack := &hubpb.StreamAck{Ref: ref, Response: resp}
	if err != nil {
		err = statusOf(c.svc.lg, "Connect", err)
		ack.Response, ack.Error = nil, StreamError(err)
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

// subscribeOptions reads a SubscribeRequest (of Subscribe or of a Connect
// stream).
func subscribeOptions(req *hubpb.SubscribeRequest) (hub.SubscribeOptions, error) {
	opts := hub.SubscribeOptions{Cursors: map[session.ID]uint64{}, Ended: req.GetIncludeEnded()}
	if v := req.GetTurnView(); v != nil {
		opts.TurnView = &hub.ViewOptions{Name: v.GetName(), Window: int(v.GetWindow()), History: v.GetHistory()}
	}
	for k, v := range req.GetCursors() {
		sid, err := parseID("cursors key", k)
		if err != nil {
			return opts, err
		}
		opts.Cursors[sid] = v
	}
	return opts, nil
}
