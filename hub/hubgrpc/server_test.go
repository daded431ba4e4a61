package hubgrpc_test

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/transition"
)

// fixture is a hubd on bufconn with an in-memory log.
type fixture struct {
	t   *testing.T
	srv *server.Server
	lis *bufconn.Listener
}

func start(t *testing.T, tokens string) *fixture {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	cfg := server.Config{InMemory: true}
	cfg.Hub.MaxEnvelopeBytes = 4096
	if tokens != "" {
		tk, err := hubgrpc.ParseTokens(strings.NewReader(tokens))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tokens = tk
	}
	srv, err := server.StartOn(context.Background(), cfg, lis)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: srv, lis: lis}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return f
}

// client dials the fixture; md is sent with every call.
func (f *fixture) client(md ...string) hubpb.HubClient {
	f.t.Helper()
	conn := f.dial(md...)
	f.t.Cleanup(func() { conn.Close() })
	return hubpb.NewHubClient(conn)
}

func (f *fixture) dial(md ...string) *grpc.ClientConn {
	f.t.Helper()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return f.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return inv(metadata.AppendToOutgoingContext(ctx, md...), method, req, reply, cc, opts...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return s(metadata.AppendToOutgoingContext(ctx, md...), desc, cc, method, opts...)
		}))
	if err != nil {
		f.t.Fatal(err)
	}
	return conn
}

func (f *fixture) agent(name string) hubpb.HubClient { return f.client(hubgrpc.AgentHeader, name) }

// reasonOf returns a status error's code and ErrorInfo reason.
func reasonOf(err error) (codes.Code, string) {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Code(), info.GetReason()
		}
	}
	return st.Code(), ""
}

func pipeline(t *testing.T, c hubpb.HubClient) string {
	t.Helper()
	graph, _ := json.Marshal(transition.Sequence("alice", "bob", "carol"))
	resp, err := c.Open(context.Background(), &hubpb.OpenRequest{Type: "workflow@1", GraphJson: string(graph),
		Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}, {Name: "carol", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSession().GetState() != "OPEN" {
		t.Fatalf("state %s", resp.GetSession().GetState())
	}
	return resp.GetSession().GetSessionId()
}

func text(s string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
}

// TestBadInput sends each kind of bad input over the wire: each gets its
// code and stable reason, and nothing is written.
func TestBadInput(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice, bob, carol, mallory := f.agent("alice"), f.agent("bob"), f.agent("carol"), f.agent("mallory")
	id := pipeline(t, alice)
	graph, _ := json.Marshal(transition.Sequence("alice", "zed"))
	big := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name   string
		call   func() error
		code   codes.Code
		reason string
		msg    string
	}{
		{"malformed type", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "has space"}})
			return err
		}, codes.InvalidArgument, "MALFORMED", "space"},
		{"payload not matching type", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text",
				Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x"}}}})
			return err
		}, codes.InvalidArgument, "MALFORMED", "text needs"},
		{"bad context JSON", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "context_set",
				Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]string{"k": "{nope"}}}}})
			return err
		}, codes.InvalidArgument, "MALFORMED", `context_set.set["k"]`},
		{"no envelope", func() error { _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id}); return err },
			codes.InvalidArgument, "MALFORMED", "envelope is required"},
		{"bad session id", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: "nope", Envelope: text("x")})
			return err
		},
			codes.InvalidArgument, "MALFORMED", "session_id"},
		{"unknown session", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: "0194d1a0-0000-7000-8000-000000000000", Envelope: text("x")})
			return err
		}, codes.NotFound, "UNKNOWN_SESSION", "no session"},
		{"out of turn", func() error {
			_, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text("x")})
			return err
		},
			codes.FailedPrecondition, "OUT_OF_TURN", `workflow expects "alice" to speak, got "bob"`},
		{"not a participant", func() error {
			_, err := mallory.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text("x")})
			return err
		},
			codes.PermissionDenied, "NOT_PARTICIPANT", `"mallory" is not a participant`},
		{"impersonation", func() error {
			e := text("I am alice")
			e.From = "alice"
			_, err := carol.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
			return err
		}, codes.PermissionDenied, "IMPERSONATION", `says it is from "alice" but the caller is "carol"`},
		{"hub-only event", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "session_closed",
				Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "mine"}}}})
			return err
		}, codes.PermissionDenied, "HUB_ONLY_EVENT", "written by the hub"},
		{"oversized payload", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text(big)})
			return err
		},
			codes.ResourceExhausted, "TOO_LARGE", "the limit is 4096"},
		{"handoff to a non-participant", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "packet",
				Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x", Routing: &hubpb.Routing{Kind: "handoff", Target: "zed"}}}}})
			return err
		}, codes.InvalidArgument, "BAD_HANDOFF_TARGET", "valid targets: bob, carol"},
		{"invalid graph at open", func() error {
			_, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "workflow@1", GraphJson: string(graph),
				Participants: []*hubpb.Participant{{Name: "bob"}}})
			return err
		}, codes.InvalidArgument, "INVALID_GRAPH", `agent "zed" is not a participant`},
		{"unknown session type", func() error {
			_, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "chatroom", Participants: []*hubpb.Participant{{Name: "bob"}}})
			return err
		}, codes.InvalidArgument, "UNKNOWN_SESSION_TYPE", "chatroom@1"},
		{"close by a non-creator", func() error { _, err := bob.Close(ctx, &hubpb.CloseRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", `only the creator "alice"`},
		{"read by a non-participant", func() error { _, err := mallory.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", "may not read it"},
		{"no agent name", func() error {
			_, err := f.client().GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			return err
		},
			codes.Unauthenticated, "UNAUTHENTICATED", "x-hubd-agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call()
			code, reason := reasonOf(err)
			if code != tc.code || reason != tc.reason || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("got %v %s %q; want %v %s with %q", code, reason, status.Convert(err).Message(), tc.code, tc.reason, tc.msg)
			}
			after, _ := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if after.GetSeq() != before.GetSeq() {
				t.Fatalf("a rejected call wrote: seq %d → %d", before.GetSeq(), after.GetSeq())
			}
		})
	}
}

func TestTokens(t *testing.T) {
	f := start(t, "alice alice-token-0123456789\nbob bob-token-0123456789abc\nops ops-token-0123456789abc operator\n")
	ctx := context.Background()
	alice := f.client("authorization", "Bearer alice-token-0123456789")
	id := pipeline(t, alice)
	for _, tc := range []struct {
		name string
		md   []string
	}{
		{"missing token", nil},
		{"wrong token", []string{"authorization", "Bearer not-a-token-at-all"}},
		{"not bearer", []string{"authorization", "Basic YWxpY2U6eA=="}},
		{"dev header without token", []string{hubgrpc.AgentHeader, "alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client(tc.md...).GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if code, reason := reasonOf(err); code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
				t.Fatalf("got %v %s", code, reason)
			}
		})
	}
	// the operator reads and closes what it does not take part in
	ops := f.client("authorization", "Bearer ops-token-0123456789abc")
	if _, err := ops.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if r, err := ops.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "maintenance"}); err != nil || !r.GetClosed() {
		t.Fatalf("operator close: %v %v", r, err)
	}
}

// TestStreamResume subscribes, disconnects, and resumes from the cursor:
// no gap, no duplicate, the close included.
func TestStreamResume(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice, bob, carol := f.agent("alice"), f.agent("bob"), f.agent("carol")
	id := pipeline(t, alice)
	sctx, cancel := context.WithCancel(ctx)
	stream, err := carol.Subscribe(sctx, &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text("1")}); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for len(seen) < 2 { // opened (2), alice's text (3)
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, d.GetEnvelope().GetSeq())
	}
	cancel()
	if _, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text("2")}); err != nil {
		t.Fatal(err)
	}
	if r, err := carol.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text("3")}); err != nil || !r.GetClosed() {
		t.Fatalf("last turn: %v %v", r, err)
	}
	stream, err = carol.Subscribe(ctx, &hubpb.SubscribeRequest{Cursors: map[string]uint64{id: seen[len(seen)-1]}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for len(seen) < 4 { // bob's text (4), the close (6); carol's own (5) is not delivered
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, d.GetEnvelope().GetSeq())
		types = append(types, d.GetEnvelope().GetType())
	}
	if got := seqString(seen); got != "2 3 4 6" || types[1] != "session_closed" {
		t.Fatalf("seqs %s, types %v", got, types)
	}
}

func seqString(s []uint64) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, strconv.FormatUint(x, 10))
	}
	return strings.Join(parts, " ")
}

// TestShutdownLeavesNoGoroutines starts and stops a server with a live
// stream and checks every goroutine it started is gone.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	lis := bufconn.Listen(1 << 20)
	srv, err := server.StartOn(context.Background(), server.Config{InMemory: true}, lis)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: srv, lis: lis}
	conn := f.dial(hubgrpc.AgentHeader, "alice")
	stream, err := hubpb.NewHubClient(conn).Subscribe(context.Background(), &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil {
		t.Fatal("stream outlived the server")
	} else if code, reason := reasonOf(err); code != codes.Unavailable || (reason != "DRAINING" && reason != "") {
		t.Logf("stream ended with %v %s", code, reason)
	}
	conn.Close()
	// Goroutines exit asynchronously after Close returns; allow them a
	// bounded moment.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after shutdown:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
