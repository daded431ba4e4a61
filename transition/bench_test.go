package transition_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// benchGraph is a realistic support-desk graph of 10 transitions.
const benchGraph = `{
  "version": 1,
  "initial_speaker": "user",
  "transitions": [
    {"when": {"name": "tool_called", "args": {"tool_name": "transfer_to_billing"}}, "then": {"name": "agent", "args": {"agent_id": "billing"}}, "priority": 0},
    {"when": {"name": "tool_called", "args": {"tool_name": "transfer_to_tech"}}, "then": {"name": "agent", "args": {"agent_id": "tech"}}, "priority": 0},
    {"when": {"name": "tool_called", "args": {"tool_name": "request_help"}}, "then": {"name": "agent", "args": {"agent_id": "router"}}, "priority": 0},
    {"when": {"name": "context_equals", "args": {"key": "route", "value": "security"}}, "then": {"name": "agent", "args": {"agent_id": "security"}}, "priority": 1},
    {"when": {"name": "all_of", "args": {"conditions": [
        {"name": "from_speaker", "args": {"agent_id": "user"}},
        {"name": "mentions", "args": {"agent_id": "tech"}}]}},
     "then": {"name": "agent", "args": {"agent_id": "tech"}}, "priority": 1},
    {"when": {"name": "all_of", "args": {"conditions": [
        {"name": "from_speaker", "args": {"agent_id": "user"}},
        {"name": "not", "args": {"condition": {"name": "context_in", "args": {"key": "tier", "values": ["gold", "platinum"]}}}}]}},
     "then": {"name": "active_agent", "args": {"fallback": "router"}}, "priority": 2},
    {"when": {"name": "context_compare", "args": {"key": "score", "op": "lt", "value": 0.3}}, "then": {"name": "supervisor", "args": {}}, "priority": 2},
    {"when": {"name": "any_of", "args": {"conditions": [
        {"name": "from_speaker", "args": {"agent_id": "billing"}},
        {"name": "from_speaker", "args": {"agent_id": "tech"}}]}},
     "then": {"name": "agent", "args": {"agent_id": "user"}}, "priority": 3},
    {"when": {"name": "turn_count_at_least", "args": {"n": 40}}, "then": {"name": "terminate", "args": {"reason": "too_long"}}, "priority": 4},
    {"when": {"name": "event_type", "args": {"type": "EV_PACKET"}}, "then": {"name": "mentioned", "args": {}}, "priority": 5}
  ],
  "default_target": {"name": "agent", "args": {"agent_id": "user"}},
  "max_turns": 60
}`

func BenchmarkDecode(b *testing.B) {
	r := transition.NewRegistry()
	data := []byte(benchGraph)
	g, err := r.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	if len(g.Transitions) != 10 {
		b.Fatalf("%d transitions", len(g.Transitions))
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := r.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// graph50 has 50 transitions mixing from_speaker, context_equals and all_of
// conditions; for the benchmark input only the last holds. With priorities,
// they are listed in reverse priority order, so evaluation sorts them first.
func graph50(priorities bool) *transition.Graph {
	g := &transition.Graph{InitialSpeaker: "a0", DefaultTarget: transition.TerminateTarget{Reason: "none"}}
	for i := range 50 {
		var c transition.Condition
		switch i % 3 {
		case 0:
			c = transition.FromSpeaker{Agent: fmt.Sprintf("a%d", i)}
		case 1:
			c = transition.ContextEquals{Key: fmt.Sprintf("k%d", i%7), Value: session.MustJSON(fmt.Sprintf("v%d", i))}
		case 2:
			c = transition.AllOf{Conditions: []transition.Condition{
				transition.FromSpeaker{Agent: "speaker"},
				transition.ContextEquals{Key: "stage", Value: session.MustJSON(i)},
				transition.Not{Condition: transition.ContextEquals{Key: "done", Value: session.MustJSON(true)}},
			}}
		}
		if i == 49 {
			c = transition.AllOf{Conditions: []transition.Condition{
				transition.FromSpeaker{Agent: "speaker"},
				transition.ContextEquals{Key: "stage", Value: session.MustJSON("final")},
			}}
		}
		t := transition.Transition{When: c, Then: transition.AgentTarget{Agent: fmt.Sprintf("a%d", i)}}
		if priorities {
			t.Priority = 50 - i
		}
		g.Transitions = append(g.Transitions, t)
	}
	return g
}

func BenchmarkEvaluate50(b *testing.B) {
	ctx := map[string]json.RawMessage{"stage": session.MustJSON("final"), "done": session.MustJSON(false)}
	for i := range 7 {
		ctx[fmt.Sprintf("k%d", i)] = session.MustJSON("other")
	}
	in := &transition.Input{Participants: []string{"speaker", "a49"}, Speaker: "speaker", Event: session.EventText, Turn: 7, Context: ctx}
	for _, bc := range []struct {
		name       string
		priorities bool
		want       int
	}{{"list_order", false, 49}, {"priorities", true, 49}} {
		b.Run(bc.name, func(b *testing.B) {
			g := graph50(bc.priorities)
			if res := g.Evaluate(in); res.Rule != bc.want || res.Decision.Next != "a49" {
				b.Fatalf("Evaluate = %+v", res)
			}
			b.ReportAllocs()
			for b.Loop() {
				g.Evaluate(in)
			}
		})
	}
}
