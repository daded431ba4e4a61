package hubgrpc_test

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/wiretest"
)

// fixture is a hubd on bufconn with an in-memory log and a 4096-byte
// envelope limit.
type fixture struct {
	t   testing.TB
	srv *server.Server
	lis *bufconn.Listener
}

// start starts a fixture; with tokens (a tokens file), callers need them.
func start(t testing.TB, tokens string) *fixture {
	t.Helper()
	cfg := server.Config{}
	if tokens != "" {
		tk, err := hubgrpc.ParseTokens(strings.NewReader(tokens))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tokens = tk
		cfg.Hub.Consent = hub.Consent{"bob": {"*"}, "carol": {"*"}} // the tests' agents take sessions from anyone
	}
	return startWith(t, cfg)
}

// startWith starts a fixture with cfg (in memory, 4096-byte envelopes).
func startWith(t testing.TB, cfg server.Config) *fixture {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	cfg.InMemory = true
	cfg.Hub.MaxEnvelopeBytes = 4096
	srv, err := server.StartOn(context.Background(), cfg, lis)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: srv, lis: lis}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return f
}

// client dials the fixture; md is sent with every call.
func (f *fixture) client(md ...string) hubsvc.HubClient {
	f.t.Helper()
	conn := f.dial(md...)
	f.t.Cleanup(func() { conn.Close() })
	return hubsvc.NewHubClient(conn)
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

// agent is a client in development mode named name ("operator" has
// operator rights).
func (f *fixture) agent(name string) hubsvc.HubClient { return f.client(hubgrpc.AgentHeader, name) }

func TestBadInput(t *testing.T) {
	f := start(t, "")
	wiretest.BadInput(t, f.agent, f.client())
}

func TestTokens(t *testing.T) {
	f := start(t, "alice alice-token-0123456789\nbob bob-token-0123456789abc\nops ops-token-0123456789abc operator\n")
	ctx := context.Background()
	alice := f.client("authorization", "Bearer alice-token-0123456789")
	id := wiretest.Pipeline(t, alice)
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
			if code, reason := wiretest.ReasonOf(err); code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
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
	id := wiretest.Pipeline(t, alice)
	sctx, cancel := context.WithCancel(ctx)
	stream, err := carol.Subscribe(sctx, &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("1")}); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for len(seen) < 3 { // invite (1), opened (2), alice's text (3)
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, d.GetEnvelope().GetSeq())
	}
	cancel()
	if _, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("2")}); err != nil {
		t.Fatal(err)
	}
	if r, err := carol.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("3")}); err != nil || !r.GetClosed() {
		t.Fatalf("last turn: %v %v", r, err)
	}
	stream, err = carol.Subscribe(ctx, &hubpb.SubscribeRequest{Cursors: map[string]uint64{id: seen[len(seen)-1]}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for len(seen) < 5 { // bob's text (4), the close (6); carol's own (5) is not delivered
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, d.GetEnvelope().GetSeq())
		types = append(types, d.GetEnvelope().GetType())
	}
	if got := seqString(seen); got != "1 2 3 4 6" || types[1] != "session_closed" {
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
	stream, err := hubsvc.NewHubClient(conn).Subscribe(context.Background(), &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil {
		t.Fatal("stream outlived the server")
	} else if code, reason := wiretest.ReasonOf(err); code != codes.Unavailable || (reason != "DRAINING" && reason != "") {
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

// TestBadIDs: every id field of every call is refused MALFORMED, naming
// the field, when it is not a UUID as the hub writes one.
func TestBadIDs(t *testing.T) {
	f := start(t, "")
	wiretest.BadIDs(t, f.agent)
}

// TestAccess: context audiences and refusals to outsiders, over gRPC.
func TestAccess(t *testing.T) {
	f := start(t, "")
	wiretest.Access(t, f.agent)
}
