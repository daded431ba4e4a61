package hub_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestForkAcrossOperatorActions forks a session an operator steered (a
// context edit, then the next speaker chosen over the graph) at each of
// its seqs: each fork's state is the source's at that seq, its expected
// speaker takes a turn, and a hub hydrated from the log rebuilds the
// forks and the source exactly.
func TestForkAcrossOperatorActions(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	g := &structpb.Struct{}
	if err := hubpb.UnmarshalJSON([]byte(triageGraph), g); err != nil {
		t.Fatal(err)
	}
	o, err := e.hub.Open(ctx, "router", &hubpb.OpenRequest{Type: "workflow@1", Graph: g,
		Participants: []*hubpb.Participant{{Name: "billing", AutoAccept: true}, {Name: "tech", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	src := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	if _, err := e.hub.Send(ctx, "router", src, packetEnv(t, `{"type":"packet","packet":{"body":"charged twice","routing":{"kind":"handoff","tool":"transfer_to_billing"}}}`)); err != nil {
		t.Fatal(err)
	}
	steps := []*hubpb.OperatorAction{
		{Reason: "the refund is known", Action: &hubpb.OperatorAction_Context{Context: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"refund": structpb.NewNumberValue(7)}}}},
		{Reason: "tech has the logs", Action: &hubpb.OperatorAction_NextSpeaker{NextSpeaker: "tech"}},
	}
	for _, a := range steps {
		if _, err := e.hub.Steer(ctx, "ops", true, &hubpb.SteerRequest{SessionId: src.String(), Action: a}); err != nil {
			t.Fatalf("steer %v: %v", a, err)
		}
	}
	last := e.hub.LastSeqOf(t, src)
	var forks []session.ID
	for at := uint64(1); at <= last; at++ {
		want := machineAt(t, e, src, at)
		f := fork(t, e.hub, "billing", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: at})
		forks = append(forks, f)
		if g, w := canonical(t, snapshot(t, e.hub, f)["state"]), resumed(t, want["state"]); g != w {
			t.Errorf("fork at seq %d: state\n got  %s\n want %s", at, g, w)
		}
		info, err := e.hub.Get(ctx, "billing", false, f)
		if err != nil {
			t.Fatal(err)
		}
		next := info.GetExpected()
		if len(next) != 1 {
			t.Fatalf("fork at seq %d expects %v", at, next)
		}
		if at == last && next[0] != "tech" {
			t.Errorf("fork after the operator's choice expects %s, want tech", next[0])
		}
		if _, err := e.hub.Send(ctx, next[0], f, textEnv("from the fork")); err != nil {
			t.Errorf("fork at seq %d: a turn of %s: %v", at, next[0], err)
		}
	}
	assertReplayed(t, e, append(forks, src))
}
