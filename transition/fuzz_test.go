package transition_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// FuzzDecodeGraph: Decode never panics, and a decoded graph's encoding is a
// fixed point: it decodes to an equal graph that encodes to the same bytes.
// Whatever decodes can also be validated, evaluated, explained and rendered
// without panicking.
func FuzzDecodeGraph(f *testing.F) {
	seeds := []string{
		protocolGraph,
		customGraph, // unknown names for a plain registry
		`{"initial_speaker":"alice","transitions":[{"when":{"name":"always","args":{}},"then":{"name":"round_robin","args":{}},"priority":0}],"default_target":null,"max_turns":null}`,
		`{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"stay"}}]}`,
		`{"initial_speaker":"a","default_target":{"name":"active_agent","args":{"fallback":"b"}}}`,
		`{"initial_speaker":"a","transitions":[{"when":{"name":"event_type","args":{"type":"EV_PACKET"}},"then":{"name":"supervisor"}}]}`,
		`{"version":2}`,
		`{"initial_speaker":"a","max_turns":0}`,
		when(`{"name":"all_of","args":{"conditions":[]}}`),
		when(`{"name":"context_compare","args":{"key":"k","op":"~","value":1}}`),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, g := range []*transition.Graph{
		allNodesGraph(),
		transition.Sequence("researcher", "writer", "editor"),
		transition.RoundRobin(abc, 4),
		transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}}),
		transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing"}, User: "user", MaxTurns: 9}),
	} {
		b, _ := json.Marshal(g)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := transition.NewRegistry()
		g, err := r.Decode(data)
		if err != nil {
			return
		}
		b1, err := json.Marshal(g)
		if err != nil {
			t.Fatalf("Marshal of a decoded graph: %v", err)
		}
		g2, err := r.Decode(b1)
		if err != nil {
			t.Fatalf("Decode of an encoding: %v\n%s", err, b1)
		}
		b2, _ := json.Marshal(g2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%s\n%s", b1, b2)
		}
		if g3, _ := r.Decode(b2); !reflect.DeepEqual(g2, g3) {
			t.Fatalf("decoding the fixed point twice gives different graphs: %#v vs %#v", g2, g3)
		}
		exercise(g)
	})
}

// exercise runs everything a hub or a tool does with a graph.
func exercise(g *transition.Graph) {
	ps := g.Agents()
	_ = g.Validate(ps)
	_ = g.Validate(nil)
	_ = g.Mermaid()
	for _, speaker := range append(ps, "", "someone") {
		for _, in := range []*transition.Input{
			{Participants: ps, Speaker: speaker, Event: session.EventText, Text: "@" + speaker, Turn: 3},
			{Participants: ps, Speaker: speaker, Event: session.EventPacket, Tool: "transfer_to_" + speaker, Turn: 1,
				Context: map[string]json.RawMessage{"k": session.MustJSON(1)}},
		} {
			in.Mention = transition.Mention(in.Text, ps)
			_ = g.Explain(g.Evaluate(in))
		}
	}
}
