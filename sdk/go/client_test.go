package sdkgo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

const tokens = `
alice alice-token-0123456789
bob   bob-token-0123456789
`

// startSecure starts a hub with tokens or TLS, which hubtest does not
// offer, on a free loopback port.
func startSecure(t *testing.T, cfg server.Config) string {
	t.Helper()
	cfg.Listen, cfg.InMemory = "127.0.0.1:0", true
	if cfg.Hub.Consent == nil { // the tests' agents take sessions from anyone
		cfg.Hub.Consent = hub.Consent{"bob": {"*"}, "carol": {"*"}}
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("stopping the hub: %v", err)
		}
	})
	return srv.Addr()
}

// parseTokens parses the test's tokens file.
func parseTokens(t *testing.T) *hubgrpc.Tokens {
	t.Helper()
	tk, err := hubgrpc.ParseTokens(strings.NewReader(tokens))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestTokens: with a token every call is the token's agent; a wrong
// token, or a name alone on a hub with tokens, is ErrUnauthenticated.
func TestTokens(t *testing.T) {
	addr := startSecure(t, server.Config{Tokens: parseTokens(t)})
	ctx := testCtx(t)
	alice := dial(t, addr, "", func(o *agentsdk.Options) { o.Token = "alice-token-0123456789" })
	if alice.Name() != "" {
		t.Errorf("Name() = %q", alice.Name())
	}
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if s.GetMeta().GetCreator() != "alice" {
		t.Errorf("creator %q", s.GetMeta().GetCreator())
	}
	bob := dial(t, addr, "bob", func(o *agentsdk.Options) { o.Token = "bob-token-0123456789" })
	_, err = bob.SendText(ctx, s.ID(), "me first")
	checkErr(t, err, agentsdk.ErrOutOfTurn, "OUT_OF_TURN", codes.FailedPrecondition, `got "bob"`)

	for name, o := range map[string]agentsdk.Options{
		"wrong token": {Token: "mallory-token-0123456789"},
		"dev name":    {Name: "alice"},
	} {
		c := dial(t, addr, "", func(opts *agentsdk.Options) { *opts = o })
		_, err := c.GetSession(ctx, s.ID())
		if !errors.Is(err, agentsdk.ErrUnauthenticated) {
			t.Errorf("%s: %v", name, err)
		}
		sub, err := c.Subscribe(ctx, agentsdk.SubscribeOptions{})
		if err == nil {
			_, err = sub.Recv()
		}
		if !errors.Is(err, agentsdk.ErrUnauthenticated) {
			t.Errorf("%s: subscribe: %v", name, err)
		}
		// Serve gives up at once: reconnecting does not cure it.
		never := func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
			return agentsdk.Reply{}, errors.New("called")
		}
		if err := c.Serve(ctx, never); !errors.Is(err, agentsdk.ErrUnauthenticated) {
			t.Errorf("%s: serve: %v", name, err)
		}
	}
}

// TestDialRefusals: no identity, or a token in plaintext to a remote
// address, fail before any call; an unreachable hub fails when ctx ends.
func TestDialRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := agentsdk.Dial(ctx, "127.0.0.1:1", agentsdk.Options{}); err == nil {
		t.Error("dial without a name or token")
	}
	if _, err := agentsdk.Dial(ctx, "hub.example.com:7420", agentsdk.Options{Token: "secret-token-0123456789"}); err == nil || !strings.Contains(err.Error(), "plaintext") {
		t.Errorf("token over plaintext: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := agentsdk.Dial(short, "127.0.0.1:1", agentsdk.Options{Name: "alice"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("unreachable hub: %v", err)
	}
}

// TestRaw: the generated client shares the connection and credentials.
func TestRaw(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	s := openPipeline(t, ctx, alice)
	got, err := alice.Raw().GetSession(ctx, &hubpb.GetSessionRequest{SessionId: s.ID()})
	if err != nil || got.GetMeta().GetCreator() != "alice" || got.GetState() != agentsdk.StateOpen {
		t.Fatalf("%v %v", got, err)
	}
}

// TestPeersFailover: a Client given peers connects to its target and,
// once that stops answering, moves to a peer: its calls carry on there
// (nodes of a cluster each serve every call; two hubs stand for them).
func TestPeersFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	second := hubtest.New(t)
	c, err := agentsdk.Dial(ctx, first.Addr(), agentsdk.Options{Name: "alice", Peers: []string{second.Addr()}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	open := func() string {
		t.Helper()
		s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID()
	}
	one := open()
	if _, err := first.Feed().Get(ctx, "alice", false, session.MustParseID(one)); err != nil {
		t.Fatalf("the first open is not on the target: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var two string
	for deadline := time.Now().Add(20 * time.Second); two == ""; {
		s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
		switch {
		case err == nil:
			two = s.ID()
		case !errors.Is(err, agentsdk.ErrUnavailable) || time.Now().After(deadline):
			t.Fatalf("open after the target stopped: %v", err)
		}
	}
	if _, err := second.Feed().Get(ctx, "alice", false, session.MustParseID(two)); err != nil {
		t.Fatalf("the open after the target stopped is not on the peer: %v", err)
	}
}
