package agentsdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
)

// The transports of Options.Transport.
const (
	// TransportStream sends over the agent's stream (one
	// bidirectional stream per Client carries its sends and their acks,
	// and Serve's deliveries), falling back to TransportUnary against a
	// hub without it. The default.
	TransportStream = "stream"
	// TransportUnary sends with one Send call per envelope, and Serve
	// reads a Subscribe stream.
	TransportUnary = "unary"
)

// MaxStreamEnvelope is the largest envelope (encoded) sent on an agent
// stream: a larger one is sent with a Send call. A frame larger than the
// hub reads at all would end the whole stream (gRPC refuses the message,
// not the send); a Send call fails alone, with the hub's TOO_LARGE naming
// its limit (1 MiB by default) or gRPC's RESOURCE_EXHAUSTED
// ([ErrTooLarge]).
const MaxStreamEnvelope = 1 << 20

// errNoStream: the hub has no agent stream (an older hub); the caller
// falls back to unary calls.
var errNoStream = errors.New("agentsdk: the hub has no agent stream")

// ConnectOptions tune Client.Connect.
type ConnectOptions struct {
	// Subscribe, when set, subscribes the stream: its deliveries (what
	// Subscribe with these options delivers) are handed to OnDelivery.
	Subscribe *SubscribeOptions
	// OnDelivery is called with each delivery, in order, on the stream's
	// reader: while it blocks, nothing is read (acks neither).
	OnDelivery func(*hubpb.Delivery)
}

// AgentStream is an agent's stream: one bidirectional stream that
// carries the agent's sends and opens and their acknowledgements, and,
// when subscribed, its deliveries. It is safe for concurrent use; sends in
// flight are answered in any order. When it breaks, every send in flight
// fails with [ErrUnavailable] (its outcome unknown: send it again with the
// same client message id) and Done is closed.
type AgentStream struct {
	c       *Client
	s       grpc.BidiStreamingClient[hubpb.AgentFrame, hubpb.HubFrame]
	cancel  context.CancelFunc
	agent   string
	opens   bool // the hub takes opens on the stream
	deliver func(*hubpb.Delivery)
	wmu     sync.Mutex // serialises s.Send and s.CloseSend
	// halfClosed: this side is closed (the hub's closing frame); guarded
	// by wmu. A Send after CloseSend would end the whole stream with
	// gRPC's own INTERNAL error in place of the hub's status.
	halfClosed bool

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan *hubpb.StreamAck
	closing error // the hub's closing frame: why it ends the stream
	err     error
	done    chan struct{}
}

// Connect opens the agent's stream (see [AgentStream]), waiting
// at most until ctx is done for the hub to answer; the stream lives until
// Close, ctx's end, or a failure. Against a hub without the stream it
// fails with an [*Error] of code codes.Unimplemented: use unary calls. In
// a cluster the node the stream is to runs each send and open where its
// session is served, and delivers from every node.
func (c *Client) Connect(ctx context.Context, opts ConnectOptions, callOpts ...grpc.CallOption) (*AgentStream, error) {
	st, err := c.connect(ctx, ctx, opts, callOpts...)
	if errors.Is(err, errNoStream) {
		return nil, wrapErr("connect", status.Error(codes.Unimplemented, "the hub has no agent stream"))
	}
	return st, err
}

// connect opens a stream living as long as life, its opening bounded by
// setup.
func (c *Client) connect(setup, life context.Context, opts ConnectOptions, callOpts ...grpc.CallOption) (*AgentStream, error) {
	life, cancel := context.WithCancel(life)
	s, err := c.rpc.AgentStream(life, callOpts...)
	if err != nil {
		cancel()
		return nil, wrapErr("connect", err)
	}
	stop := context.AfterFunc(setup, cancel)
	f, err := s.Recv()
	stop()
	if err != nil {
		cancel()
		if status.Code(err) == codes.Unimplemented {
			return nil, errNoStream
		}
		if setup.Err() != nil {
			return nil, fmt.Errorf("agentsdk: connect: %w", setup.Err())
		}
		return nil, wrapErr("connect", err)
	}
	st := &AgentStream{c: c, s: s, cancel: cancel, agent: f.GetReady().GetAgent(), opens: f.GetReady().GetOpens(), deliver: opts.OnDelivery,
		waiting: map[uint64]chan *hubpb.StreamAck{}, done: make(chan struct{})}
	if o := opts.Subscribe; o != nil {
		if err := s.Send(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Subscribe{Subscribe: subscribeRequest(*o)}}); err != nil {
			cancel()
			return nil, wrapErr("connect", err)
		}
	}
	go st.read()
	return st, nil
}

func subscribeRequest(o SubscribeOptions) *hubpb.SubscribeRequest {
	req := &hubpb.SubscribeRequest{Cursors: maps.Clone(o.Cursors), IncludeEnded: o.IncludeEnded, Terse: o.Terse}
	if v := o.TurnView; v != nil {
		req.TurnView = &hubpb.GetViewRequest{Name: v.Name, Window: int32(v.Window)}
	}
	return req
}

// read hands acks to their senders and deliveries to OnDelivery until the
// stream ends.
func (st *AgentStream) read() {
	for {
		f, err := st.s.Recv()
		if err != nil {
			st.mu.Lock()
			why := st.closing
			st.mu.Unlock()
			if why != nil && status.Code(err) == codes.Canceled {
				err = why // the hub cancelled a stream that did not close in time
			}
			st.fail(err)
			return
		}
		switch f := f.GetFrame().(type) {
		case *hubpb.HubFrame_Closing:
			// The hub ends the stream: close this side; its status follows.
			st.mu.Lock()
			st.closing = statusOf(f.Closing)
			st.mu.Unlock()
			st.wmu.Lock()
			st.halfClosed = true
			_ = st.s.CloseSend()
			st.wmu.Unlock()
		case *hubpb.HubFrame_Ack:
			st.mu.Lock()
			ch := st.waiting[f.Ack.GetRef()]
			delete(st.waiting, f.Ack.GetRef())
			st.mu.Unlock()
			if ch != nil {
				ch <- f.Ack
			}
		case *hubpb.HubFrame_Delivery:
			if st.deliver != nil {
				st.deliver(f.Delivery)
			}
		}
	}
}

// fail ends the stream with err: sends in flight fail.
func (st *AgentStream) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return
	}
	st.err = wrapErr("connect", err)
	st.cancel()
	close(st.done)
}

// Agent is the agent the hub knows the stream as.
func (st *AgentStream) Agent() string { return st.agent }

// Done is closed once the stream has ended; Err then says why.
func (st *AgentStream) Done() <-chan struct{} { return st.done }

// Err is why the stream ended (an [*Error]; canceled after Close), or nil
// while it runs.
func (st *AgentStream) Err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// Close ends the stream; sends in flight fail.
func (st *AgentStream) Close() {
	st.cancel()
	st.fail(context.Canceled)
}

// SendText takes a turn with plain text (see Client.SendText).
func (st *AgentStream) SendText(ctx context.Context, sessionID, text string, opts ...SendOption) (Ack, error) {
	e := &hubpb.Envelope{Type: EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}
	for _, o := range opts {
		o(e)
	}
	if e.ClientMsgId == "" {
		e.ClientMsgId = newMsgID()
	}
	return st.send(ctx, sessionID, e)
}

// Send sends any envelope once (see Client.Send, which also retries); env
// must not be changed until it returns. An envelope larger than
// MaxStreamEnvelope is sent with a Send call instead, as the stream's
// agent (the same credentials). A stream that breaks with the send
// in flight fails it with [ErrUnavailable]: its outcome is unknown, so
// send it again with the same client message id.
func (st *AgentStream) Send(ctx context.Context, sessionID string, env *hubpb.Envelope) (Ack, error) {
	return st.send(ctx, sessionID, env)
}

func (st *AgentStream) send(ctx context.Context, sessionID string, e *hubpb.Envelope) (Ack, error) {
	if e.SizeVT() > MaxStreamEnvelope {
		resp, err := st.c.rpc.Send(ctx, &hubpb.SendRequest{SessionId: sessionID, Envelope: e})
		if err != nil {
			return Ack{}, wrapErr("send", err)
		}
		return Ack{SendResponse: resp, ClientMsgID: e.GetClientMsgId()}, nil
	}
	a, err := st.roundTrip(ctx, "send", func(ref uint64) *hubpb.AgentFrame {
		f := &hubpb.StreamSend{Ref: ref, SessionId: sessionID, Envelope: e}
		f.Traceparent, f.Tracestate = traceContextOf(ctx)
		return &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: f}}
	})
	if err != nil {
		return Ack{}, err
	}
	return ackOf(a, e)
}

// Open opens a session (see Client.Open) on the stream: its creator is
// the stream's agent. Against a hub that does not take opens on the
// stream, and for a request larger than MaxStreamEnvelope, it makes an
// Open call instead, with the same credentials.
func (st *AgentStream) Open(ctx context.Context, opts OpenOptions) (*Session, error) {
	req, err := opts.Proto()
	if err != nil {
		return nil, err
	}
	return st.open(ctx, req)
}

func (st *AgentStream) open(ctx context.Context, req *hubpb.OpenRequest) (*Session, error) {
	if !st.opens || req.SizeVT() > MaxStreamEnvelope {
		return st.c.openCall(ctx, req)
	}
	a, err := st.roundTrip(ctx, "open", func(ref uint64) *hubpb.AgentFrame {
		f := &hubpb.StreamOpen{Ref: ref, Request: req}
		f.Traceparent, f.Tracestate = traceContextOf(ctx)
		return &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Open{Open: f}}
	})
	if err != nil {
		return nil, err
	}
	if se := a.GetError(); se != nil {
		return nil, wrapErr("open", statusOf(se))
	}
	return &Session{SessionInfo: a.GetOpened().GetSession(), Existing: a.GetOpened().GetExisting()}, nil
}

// roundTrip writes the frame made with a new ref and waits for that
// ref's ack. A stream that breaks first fails it with [ErrUnavailable]
// (for op).
func (st *AgentStream) roundTrip(ctx context.Context, op string, frame func(ref uint64) *hubpb.AgentFrame) (*hubpb.StreamAck, error) {
	ch := make(chan *hubpb.StreamAck, 1)
	st.mu.Lock()
	if st.err != nil {
		st.mu.Unlock()
		return nil, st.broken(op)
	}
	st.next++
	ref := st.next
	st.waiting[ref] = ch
	st.mu.Unlock()
	st.wmu.Lock()
	err := errHalfClosed
	if !st.halfClosed {
		err = st.s.Send(frame(ref))
	}
	st.wmu.Unlock()
	if err != nil {
		st.forget(ref)
		return nil, st.broken(op) // the reader sees why
	}
	select {
	case a := <-ch:
		return a, nil
	case <-st.done:
		select {
		case a := <-ch: // answered just before the end
			return a, nil
		default:
		}
		return nil, st.broken(op)
	case <-ctx.Done():
		st.forget(ref)
		return nil, wrapErr(op, status.FromContextError(ctx.Err()).Err())
	}
}

// ackOf is the answer to a send of env.
func ackOf(a *hubpb.StreamAck, env *hubpb.Envelope) (Ack, error) {
	if se := a.GetError(); se != nil {
		return Ack{}, wrapErr("send", statusOf(se))
	}
	return Ack{SendResponse: a.GetResponse(), ClientMsgID: env.GetClientMsgId()}, nil
}

func (st *AgentStream) forget(ref uint64) {
	st.mu.Lock()
	delete(st.waiting, ref)
	st.mu.Unlock()
}

// errHalfClosed: the stream's side was closed after the hub's closing
// frame, so a send or open cannot go on it.
var errHalfClosed = errors.New("agentsdk: the stream is closing")

// broken is the error of a send or open (op) the stream could not
// answer: unavailable, so that it is sent again (with its client message
// id or idempotency key).
func (st *AgentStream) broken(op string) error {
	why := "the stream broke"
	st.mu.Lock()
	switch {
	case st.err != nil:
		why = st.err.Error()
	case st.closing != nil:
		why = "the hub is ending the stream: " + st.closing.Error()
	}
	st.mu.Unlock()
	return wrapErr(op, status.Error(codes.Unavailable, "agent stream: "+why))
}

// statusOf is the gRPC status a Send call would have failed with.
func statusOf(e *hubpb.StreamError) error {
	st := status.New(codes.Code(e.GetCode()), e.GetMessage())
	if e.GetReason() != hubpb.Reason_REASON_UNSPECIFIED {
		if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: e.GetReason().String(), Domain: ErrorDomain, Metadata: e.GetMetadata()}); err == nil {
			st = d
		}
	}
	return st.Err()
}

// mainStream returns the Client's own agent stream for its sends,
// opening it if needed (its opening bounded by ctx); nil when the Client
// sends unary (Options.Transport, a cluster, or a hub without the stream).
func (c *Client) mainStream(ctx context.Context) (*AgentStream, error) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.unary {
		return nil, nil
	}
	if st := c.stream; st != nil && st.Err() == nil {
		return st, nil
	}
	st, err := c.connect(ctx, c.life, ConnectOptions{})
	if errors.Is(err, errNoStream) {
		c.unary = true
		c.logf("agentsdk: the hub has no agent stream: sending with unary calls")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.stream = st
	return st, nil
}
