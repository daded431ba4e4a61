package hubgrpc_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/wal"
)

// bareServer serves a hub of its own over bufconn, with StreamTap when
// tap is set, and returns the fixture and the hub (for closing it).
func bareServer(t *testing.T, tap bool, grace time.Duration) (*fixture, *hub.Hub) {
	t.Helper()
	l, err := wal.Open(wal.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	h, fd, err := feed.Open(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)}, feed.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	svc := hubgrpc.New(h, fd, hubgrpc.Config{Auth: hubgrpc.Authenticator{Dev: true}, CloseGrace: grace})
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(svc.UnaryInterceptor), grpc.ChainStreamInterceptor(svc.StreamInterceptor)}
	if tap {
		opts = append(opts, grpc.InTapHandle(hubgrpc.StreamTap))
	}
	g := grpc.NewServer(opts...)
	svc.Register(g)
	lis := bufconn.Listen(1 << 20)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return &fixture{t: t, lis: lis}, h
}

// TestConnectEnds: a stream the hub ends (here because it closes) is told
// why by a closing frame, then ends with the same status once the agent
// closes its side; an agent that ignores the frame has the stream
// cancelled after the grace period (with StreamTap, whose streams hold no
// reader goroutine), or gets the status at once (without it).
func TestConnectEnds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tap, close bool
		want       codes.Code
	}{
		{"tap, the agent closes its side", true, true, codes.Unavailable},
		{"tap, the agent ignores the frame", true, false, codes.Canceled},
		{"no tap", false, false, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, h := bareServer(t, tc.tap, 50*time.Millisecond)
			a := connect(t, f.agent("alice"), "alice", &hubpb.SubscribeRequest{})
			subscribed(a)
			h.Close()
			fr := a.next()
			if e := fr.GetClosing(); e.GetReason() != hubpb.Reason_DRAINING || codes.Code(e.GetCode()) != codes.Unavailable {
				t.Fatalf("want a closing frame (DRAINING), got %v", fr)
			}
			if tc.close {
				if err := a.s.CloseSend(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := a.s.Recv()
			code, reason := wiretest.ReasonOf(err)
			if code != tc.want {
				t.Fatalf("the stream ended with %v %s (%v), want %v", code, reason, err, tc.want)
			}
			if tc.want == codes.Unavailable && reason != "DRAINING" {
				t.Fatalf("reason %s, want DRAINING", reason)
			}
		})
	}
}

// subscribed returns once the hub has read a's subscribe frame: frames are
// read in order, so the answer to a later send proves it.
func subscribed(a *agentStream) {
	a.t.Helper()
	a.send(1, "0190f2c4-0000-7000-8000-000000000000", "probe", nil)
	if a.ack().GetError().GetReason() != hubpb.Reason_UNKNOWN_SESSION {
		a.t.Fatal("the probe send was not refused as UNKNOWN_SESSION")
	}
}

// TestConnectIdleGoroutines: an idle subscribed agent stream holds one
// goroutine of the hub's (its handler, reading), not a reader beside a
// delivery loop.
func TestConnectIdleGoroutines(t *testing.T) {
	f := start(t, "")
	c := f.agent("alice") // one connection for every stream
	subscribed(connect(t, c, "alice", &hubpb.SubscribeRequest{}))
	settle := func() int { // the fewest goroutines seen over a short while
		least := runtime.NumGoroutine()
		for range 20 {
			time.Sleep(5 * time.Millisecond)
			least = min(least, runtime.NumGoroutine())
		}
		return least
	}
	base := settle()
	const n = 40
	for range n {
		subscribed(connect(t, c, "alice", &hubpb.SubscribeRequest{}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		added := settle() - base
		if added <= 2*n+n/4 { // the hub's one, and the client's (gRPC watches each client stream's context)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle streams added %d goroutines, want about two each (one of the hub's, one of the client's)", n, added)
		}
	}
}
