package hubtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// TestRestart: a hub started on the address and data directory of a
// stopped one serves its sessions to the same clients.
func TestRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	first, err := hubtest.Start(ctx, hubtest.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := agentsdk.Dial(ctx, first.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := hubtest.New(t, hubtest.Options{Addr: first.Addr(), DataDir: dir})
	if second.Addr() != first.Addr() {
		t.Errorf("restarted on %s, not %s", second.Addr(), first.Addr())
	}
	got, err := c.GetSession(ctx, s.ID())
	if err != nil || got.GetState() != agentsdk.StateOpen {
		t.Fatalf("after the restart: %v %v", got, err)
	}
	if second.Hub() == nil {
		t.Error("no hub")
	}
}
