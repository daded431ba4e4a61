package sdkgo_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// TestClientFork forks a pipeline with every option and reads the fork
// back; the refusals map to agentsdk's sentinels.
func TestClientFork(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	s := openPipeline(t, ctx, alice)
	if _, err := alice.SendText(ctx, s.ID(), "findings"); err != nil {
		t.Fatal(err)
	}
	draft := &hubpb.Envelope{Type: agentsdk.EventPacket, Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "draft",
		ContextUpdates: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"old": structpb.NewNumberValue(1)}}}}}
	if _, err := bob.Send(ctx, s.ID(), draft); err != nil {
		t.Fatal(err)
	}
	f, err := bob.Fork(ctx, s.ID(), 4, agentsdk.ForkOptions{Set: map[string]any{"tone": "formal", "n": []int{1, 2}},
		Delete: []string{"old"}, NextSpeaker: "alice", Labels: map[string]string{"try": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	var tone string
	if f.Var("tone", &tone); tone != "formal" || f.GetContext()["old"] != nil || f.GetContext()["n"] == nil {
		t.Errorf("the fork's context: %v", f.GetContext())
	}
	if f.ID() == s.ID() || f.GetState() != agentsdk.StateOpen || strings.Join(f.GetExpected(), ",") != "alice" ||
		f.GetMeta().GetLabels()["forked_from"] != s.ID() || f.GetMeta().GetLabels()["try"] != "2" {
		t.Errorf("the fork: %v", f.SessionInfo)
	}
	if _, err := dial(t, h.Addr(), "mallory").Fork(ctx, s.ID(), 3, agentsdk.ForkOptions{}); !errors.Is(err, agentsdk.ErrPermissionDenied) {
		t.Errorf("an outsider's fork: %v", err)
	}
	if _, err := bob.Fork(ctx, s.ID(), 99, agentsdk.ForkOptions{}); !errors.Is(err, agentsdk.ErrMalformed) || !strings.Contains(err.Error(), "from 1 to 4") {
		t.Errorf("a fork past the end: %v", err)
	}
}
