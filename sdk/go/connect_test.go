package sdkgo_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// methods counts the gRPC methods a client called (unary and streams).
type methods struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methods) count(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[method]++
}

func (m *methods) get(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n["/hubd.v1.Hub/"+method]
}

// older is a hub before a feature of the agent stream.
type older int

const (
	current   older = iota
	noConnect       // the hub has no agent stream (it answers Unimplemented)
	noOpens         // its agent stream takes no opens (StreamReady.opens unset)
)

// counted makes a client count its calls in m, against a hub as old as
// hub says: without AgentStream, its agent streams go to a method the hub
// does not have; without opens, the ready frame is read without the flag.
func counted(m *methods, hub older) func(*agentsdk.Options) {
	return func(o *agentsdk.Options) {
		o.DialOptions = append(o.DialOptions,
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				m.count(method)
				return inv(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				m.count(method)
				if hub == noConnect && method == "/hubd.v1.Hub/AgentStream" {
					method = "/hubd.v1.Hub/AgentStreamOfANewerHub"
				}
				cs, err := s(ctx, desc, cc, method, opts...)
				if hub == noOpens && err == nil {
					cs = noOpensStream{cs}
				}
				return cs, err
			}))
	}
}

// noOpensStream reads an agent stream as from a hub whose stream takes
// no opens.
type noOpensStream struct{ grpc.ClientStream }

func (s noOpensStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if f, ok := m.(*hubpb.HubFrame); ok && f.GetReady() != nil {
		f.GetReady().Opens = false
	}
	return err
}

// TestServeTransports runs a pipeline served by three agents over each
// transport: over the stream no Send or Open call and no Subscribe stream
// is made; with unary (chosen, or against a hub without AgentStream) the
// replies are Send calls and the open an Open call; against a hub whose
// stream takes no opens, the open is an Open call and the rest goes on
// the stream. The outcome is the same.
func TestServeTransports(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		hub       older
		stream    bool
	}{
		{"stream", "", current, true},
		{"unary", agentsdk.TransportUnary, current, false},
		{"older hub", "", noConnect, false},
		{"hub without stream opens", "", noOpens, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hubtest.New(t)
			ctx := testCtx(t)
			names := []string{"researcher", "writer", "editor"}
			var m methods
			var clients []*agentsdk.Client
			for _, n := range names {
				clients = append(clients, dial(t, h.Addr(), n, counted(&m, tc.hub), func(o *agentsdk.Options) { o.Transport = tc.transport }))
			}
			var got calls
			serve(t, ctx, clients, func(c *agentsdk.Client) agentsdk.Handler {
				return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
					got.add("%s seeing %d", c.Name(), len(turn.View.GetItems()))
					return agentsdk.ReplyText("notes from " + c.Name()), nil
				}
			})
			s, err := clients[0].OpenWorkflow(ctx, agentsdk.Sequence(names...), "writer", "editor")
			if err != nil {
				t.Fatal(err)
			}
			turns, reason := transcript(t, ctx, clients[0], s.ID())
			if want := []string{"researcher: notes from researcher", "writer: notes from writer", "editor: notes from editor"}; !slices.Equal(turns, want) || reason != "sequence_complete" {
				t.Errorf("turns %q reason %q", turns, reason)
			}
			if want := []string{"researcher seeing 0", "writer seeing 1", "editor seeing 2"}; !slices.Equal(got.get(), want) {
				t.Errorf("calls %q, want %q", got.get(), want)
			}
			// Sends outside Serve go the same way.
			ack, err := clients[0].SendText(ctx, s.ID(), "after the end")
			if !errors.Is(err, agentsdk.ErrSessionClosed) || ack.SendResponse != nil {
				t.Errorf("a send after the end: %v %v, want ErrSessionClosed", ack, err)
			}
			sends, subs, conns, opens := m.get("Send"), m.get("Subscribe"), m.get("AgentStream"), m.get("Open")
			if tc.stream && (sends != 0 || subs != 0 || conns < 3) {
				t.Errorf("over the stream: %d Send calls, %d Subscribe streams, %d agent streams", sends, subs, conns)
			}
			if !tc.stream && (sends < 3 || subs < 3) {
				t.Errorf("unary: %d Send calls, %d Subscribe streams", sends, subs)
			}
			if wantCall := !tc.stream || tc.hub == noOpens; (opens == 1) != wantCall || opens > 1 {
				t.Errorf("%d Open calls, want %d", opens, map[bool]int{true: 1}[wantCall])
			}
			if tc.hub == noConnect && conns > 6 {
				t.Errorf("a client without the stream tried it %d times, want once each for Serve and sends", conns)
			}
		})
	}
}

// TestAgentStream: an agent stream sends concurrently, answers each send
// with its own ack, refuses a bad one with its sentinel, is idempotent per
// client message id (and opens per idempotency key), and fails sends and
// opens with ErrUnavailable once closed.
func TestAgentStream(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []*hubpb.Delivery
	bob := dial(t, h.Addr(), "bob")
	bs, err := bob.Connect(ctx, agentsdk.ConnectOptions{Subscribe: &agentsdk.SubscribeOptions{}, OnDelivery: func(d *hubpb.Delivery) {
		mu.Lock()
		told = append(told, d)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	st, err := alice.Connect(ctx, agentsdk.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Agent() != "alice" {
		t.Fatalf("the stream is %q's", st.Agent())
	}
	const n = 20
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, err := st.SendText(ctx, s.ID(), "hi", agentsdk.WithClientMsgID("k"+string(rune('a'+i))))
			if err != nil {
				t.Error(err)
				return
			}
			seqs[i] = ack.GetSeq()
		}()
	}
	wg.Wait()
	slices.Sort(seqs)
	if seqs = slices.Compact(seqs); len(seqs) != n || seqs[0] == 0 {
		t.Fatalf("acked seqs %v: want %d distinct", seqs, n)
	}
	dup, err := st.SendText(ctx, s.ID(), "hi again", agentsdk.WithClientMsgID("kc"))
	if err != nil || !dup.GetDuplicate() {
		t.Fatalf("a retry: %v %v, want a duplicate", dup, err)
	}
	if _, err := st.Send(ctx, s.ID(), &hubpb.Envelope{Type: "text", From: "bob"}); !errors.Is(err, agentsdk.ErrImpersonation) {
		t.Fatalf("impersonating: %v, want ErrImpersonation", err)
	}
	if _, err := st.SendText(ctx, "0194d1a0-0000-7000-8000-0000000000aa", "x"); !errors.Is(err, agentsdk.ErrUnknownSession) {
		t.Fatalf("an unknown session: %v, want ErrUnknownSession", err)
	}
	// Past MaxStreamEnvelope a send goes as a Send call: refused alone
	// (TOO_LARGE, the hub's 1 MiB limit), the stream goes on.
	if _, err := st.SendText(ctx, s.ID(), strings.Repeat("x", 2<<20)); !errors.Is(err, agentsdk.ErrTooLarge) {
		t.Fatalf("2 MiB: %v, want ErrTooLarge", err)
	}
	if _, err := st.SendText(ctx, s.ID(), "after the large one"); err != nil || st.Err() != nil {
		t.Fatalf("after a large send: %v (stream: %v)", err, st.Err())
	}
	// Opens: created by the stream's agent, idempotent per key, refused
	// with their sentinel.
	o := agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("carol"), IdempotencyKey: "o1"}
	opened, err := st.Open(ctx, o)
	if err != nil || opened.GetMeta().GetCreator() != "alice" || opened.Existing {
		t.Fatalf("an open on the stream: %v %v", opened, err)
	}
	if again, err := st.Open(ctx, o); err != nil || !again.Existing || again.ID() != opened.ID() {
		t.Fatalf("the open again: %v %v, want %s existing", again, err, opened.ID())
	}
	if _, err := st.Open(ctx, agentsdk.OpenOptions{Type: "nope@1"}); !errors.Is(err, agentsdk.ErrUnknownSessionType) {
		t.Fatalf("an unknown session type: %v, want ErrUnknownSessionType", err)
	}
	st.Close()
	if _, err := st.SendText(ctx, s.ID(), "closed"); !errors.Is(err, agentsdk.ErrUnavailable) {
		t.Fatalf("after Close: %v, want ErrUnavailable", err)
	}
	if _, err := st.Open(ctx, o); !errors.Is(err, agentsdk.ErrUnavailable) {
		t.Fatalf("an open after Close: %v, want ErrUnavailable", err)
	}
	// bob was told every envelope, each once, in seq order.
	if _, err := alice.CloseSession(ctx, s.ID(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Follow(ctx, s.ID(), 0, nil); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		k := len(told)
		last := uint64(0)
		if k > 0 {
			last = told[k-1].GetEnvelope().GetSeq()
		}
		mu.Unlock()
		if last >= seqs[n-1]+1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("bob was told up to seq %d", last)
		case <-bs.Done():
			t.Fatalf("bob's stream ended: %v", bs.Err())
		default:
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(told); i++ {
		if told[i].GetEnvelope().GetSeq() != told[i-1].GetEnvelope().GetSeq()+1 {
			t.Fatalf("bob was told seq %d after %d", told[i].GetEnvelope().GetSeq(), told[i-1].GetEnvelope().GetSeq())
		}
	}
}

// closingHub is a scripted hub whose agent stream sends ready, then a
// closing frame (DRAINING), reads until the agent closes its side, and
// ends the stream with the frame's status once the test releases it.
type closingHub struct {
	hubsvc.UnimplementedHubServer
	halfClosed chan struct{}
	release    chan struct{}
}

func (h *closingHub) AgentStream(s grpc.BidiStreamingServer[hubpb.AgentFrame, hubpb.HubFrame]) error {
	draining := status.New(codes.Unavailable, "the hub is closing")
	draining, _ = draining.WithDetails(&errdetails.ErrorInfo{Reason: "DRAINING", Domain: agentsdk.ErrorDomain})
	_ = s.Send(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Ready{Ready: &hubpb.StreamReady{Agent: "alice", MaxInFlight: 8, Opens: true}}})
	_ = s.Send(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Closing{Closing: &hubpb.StreamError{Code: int32(codes.Unavailable),
		Message: "the hub is closing", Reason: hubpb.Reason_DRAINING}}})
	for {
		if _, err := s.Recv(); err != nil {
			break // the agent closed its side
		}
	}
	close(h.halfClosed)
	<-h.release
	return draining.Err()
}

// TestStreamClosing: once the hub's closing frame has made the agent
// close its side, a send or open on the stream fails with ErrUnavailable
// at once, naming the hub's reason, and the stream ends with the hub's
// status (DRAINING), not gRPC's INTERNAL "SendMsg called after CloseSend"
// (seen by hubload in rolling restarts). The real hub ends the stream as
// soon as the agent closes its side, so the window is a race there; the
// scripted hub holds it open.
func TestStreamClosing(t *testing.T) {
	h := &closingHub{halfClosed: make(chan struct{}), release: make(chan struct{})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hubsvc.RegisterHubServer(srv, h)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	ctx := testCtx(t)
	alice := dial(t, lis.Addr().String(), "alice")
	st, err := alice.Connect(ctx, agentsdk.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.halfClosed:
	case <-ctx.Done():
		t.Fatal("the agent did not close its side after the closing frame")
	}
	if _, err := st.SendText(ctx, "0194d1a0-0000-7000-8000-0000000000aa", "late"); !errors.Is(err, agentsdk.ErrUnavailable) || !strings.Contains(err.Error(), "the hub is closing") {
		t.Errorf("a send after the closing frame: %v, want ErrUnavailable naming the hub's reason", err)
	}
	if _, err := st.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation}); !errors.Is(err, agentsdk.ErrUnavailable) {
		t.Errorf("an open after the closing frame: %v, want ErrUnavailable", err)
	}
	close(h.release)
	<-st.Done()
	if r, _ := agentsdk.Reason(st.Err()); r != "DRAINING" {
		t.Fatalf("the stream ended with %v (reason %q), want the hub's DRAINING", st.Err(), r)
	}
}
