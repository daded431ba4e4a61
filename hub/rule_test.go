package hub_test

import (
	"context"
	"testing"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// TestRuleLoggedWithEachTurn: every turn is stored with the rule that
// decided where it led, a refold of the log decides the same rule, and a
// rule a client puts on its envelope is not kept.
func TestRuleLoggedWithEachTurn(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	g := transition.NewRegistry()
	graph, err := g.Decode([]byte(`{"initial_speaker":"router","transitions":[
		{"when":{"name":"tool_called","args":{"tool_name":"transfer_to_billing"}},"then":{"name":"agent","args":{"agent_id":"billing"}}},
		{"when":{"name":"from_speaker","args":{"agent_id":"billing"}},"then":{"name":"revert_to_initiator"}}],
		"default_target":{"name":"terminate","args":{"reason":"done"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := graph.MarshalJSON()
	gv, _ := session.JSONValue(raw)
	o, err := e.hub.Open(ctx, "router", &hubpb.OpenRequest{Type: "workflow@1", Graph: gv.GetStructValue(),
		Participants: []*hubpb.Participant{{Name: "billing", AutoAccept: true}}, Expectations: &hubpb.Expectations{}})
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	sends := []struct {
		from string
		env  *hubpb.Envelope
	}{
		{"router", &hubpb.Envelope{Type: session.EventPacket, Rule: "forged", Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{
			Body: "refund?", Routing: &hubpb.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_billing"}}}}},
		{"billing", textEnv("refunded")},
		{"router", textEnv("thanks")},
	}
	for _, s := range sends {
		if _, err := e.hub.Send(ctx, s.from, id, s.env); err != nil {
			t.Fatal(err)
		}
	}
	log, _, err := e.hub.ReadLog(ctx, "", true, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{
		3: "transitions[0] tool_called(transfer_to_billing) → agent(billing)",
		4: "transitions[1] from_speaker(billing) → revert_to_initiator()",
		5: "default_target terminate(done)",
	}
	a, _ := server.Adapters(nil).Lookup(session.Type{Kind: "workflow", Version: 1})
	m, err := adapters.NewMachine(a, o.GetSession().GetMeta())
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range log {
		if got := env.GetRule(); got != want[env.GetSeq()] {
			t.Errorf("seq %d (%s) is stored with rule %q, want %q", env.GetSeq(), env.GetType(), got, want[env.GetSeq()])
		}
		if out := m.Fold(env); out.Rule != env.GetRule() {
			t.Errorf("seq %d: a refold decides %q, the log says %q", env.GetSeq(), out.Rule, env.GetRule())
		}
	}
}
