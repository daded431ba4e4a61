package sdkgo_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// dial connects to addr as name in development mode.
func dial(t *testing.T, addr, name string, opts ...func(*agentsdk.Options)) *agentsdk.Client {
	t.Helper()
	o := agentsdk.Options{Name: name, Logf: t.Logf}
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := agentsdk.Dial(ctx, addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a context bounded by 20s, cancelled when the test ends.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startAt starts a hub on addr ("" for a free port) with its log in dir,
// for tests that restart the hub under their agents.
func startAt(t *testing.T, ctx context.Context, addr, dir string) *hubtest.Hub {
	t.Helper()
	h, err := hubtest.Start(ctx, hubtest.Options{Addr: addr, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// js is a message's JSON form (hubpb.MarshalJSON), for comparisons and
// failure messages.
func js(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := hubpb.MarshalJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// openPipeline opens alice → bob → carol with bob and carol auto-accepted.
func openPipeline(t *testing.T, ctx context.Context, alice *agentsdk.Client) *agentsdk.Session {
	t.Helper()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob", "carol"),
		Participants: agentsdk.AutoAccepted("bob", "carol")})
	if err != nil {
		t.Fatal(err)
	}
	if s.GetState() != agentsdk.StateOpen {
		t.Fatalf("state %s", s.GetState())
	}
	return s
}
