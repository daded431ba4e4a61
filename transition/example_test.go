package transition_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// Decode a graph, validate it against the session's participants, and
// evaluate turns: who speaks next, and why.
func ExampleRegistry_Decode() {
	const graph = `{"initial_speaker": "router",
	  "transitions": [
	    {"when": {"name": "tool_called", "args": {"tool_name": "transfer_to_billing"}},
	     "then": {"name": "agent", "args": {"agent_id": "billing"}}, "priority": 0},
	    {"when": {"name": "context_equals", "args": {"key": "resolved", "value": true}},
	     "then": {"name": "terminate", "args": {"reason": "resolved"}}, "priority": 0}],
	  "default_target": {"name": "agent", "args": {"agent_id": "router"}},
	  "max_turns": 10}`
	participants := []string{"router", "billing"}
	g, err := transition.NewRegistry().Decode([]byte(graph))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := g.Validate(participants); err != nil {
		fmt.Println(err)
		return
	}
	turns := []transition.Input{
		{Speaker: "router", Event: session.EventPacket, Tool: "transfer_to_billing"},
		{Speaker: "billing", Event: session.EventText, Text: "Refund issued."},
		{Speaker: "router", Event: session.EventText, Context: map[string]json.RawMessage{"resolved": session.MustJSON(true)}},
	}
	for i, in := range turns {
		in.Participants, in.Turn = participants, i+1
		res := g.Evaluate(&in)
		fmt.Printf("%s → %+v by %s\n", in.Speaker, res.Decision, g.Explain(res))
	}
	// Output:
	// router → {Next:billing Terminate:false Reason:} by transitions[0] tool_called(transfer_to_billing) → agent(billing)
	// billing → {Next:router Terminate:false Reason:} by default_target agent(router)
	// router → {Next: Terminate:true Reason:resolved} by transitions[1] context_equals(key=resolved, value=true) → terminate(resolved)
}

// A pipeline built by a factory, in the JSON form a session is opened with.
func ExampleSequence() {
	g := transition.Sequence("researcher", "writer", "editor")
	b, _ := json.Marshal(g)
	var out bytes.Buffer
	_ = json.Indent(&out, b, "", "  ")
	fmt.Println(out.String())
	// Output:
	// {
	//   "version": 1,
	//   "initial_speaker": "researcher",
	//   "transitions": [
	//     {
	//       "when": {
	//         "name": "from_speaker",
	//         "args": {
	//           "agent_id": "researcher"
	//         }
	//       },
	//       "then": {
	//         "name": "agent",
	//         "args": {
	//           "agent_id": "writer"
	//         }
	//       },
	//       "priority": 0
	//     },
	//     {
	//       "when": {
	//         "name": "from_speaker",
	//         "args": {
	//           "agent_id": "writer"
	//         }
	//       },
	//       "then": {
	//         "name": "agent",
	//         "args": {
	//           "agent_id": "editor"
	//         }
	//       },
	//       "priority": 0
	//     }
	//   ],
	//   "default_target": {
	//     "name": "terminate",
	//     "args": {
	//       "reason": "sequence_complete"
	//     }
	//   },
	//   "max_turns": 3
	// }
}

// Explain says which rule decided a turn, for audits and `hubd graph
// simulate`. Priority 0 runs before 1, whatever the list order.
func ExampleGraph_Explain() {
	g := &transition.Graph{
		InitialSpeaker: "alice",
		Transitions: []transition.Transition{
			{When: transition.Always{}, Then: transition.RoundRobinTarget{}, Priority: 1},
			{When: transition.Mentions{Agent: "carol"}, Then: transition.MentionedTarget{}, Priority: 0},
		},
	}
	ps := []string{"alice", "bob", "carol"}
	for _, text := range []string{"@carol, your turn", "next, please"} {
		in := &transition.Input{Participants: ps, Speaker: "alice", Event: session.EventText, Text: text, Mention: transition.Mention(text, ps)}
		res := g.Evaluate(in)
		fmt.Printf("%q: %s speaks, by %s\n", text, res.Decision.Next, g.Explain(res))
	}
	fmt.Println(g.Explain(transition.Result{Rule: transition.RuleDefault}))
	// Output:
	// "@carol, your turn": carol speaks, by transitions[1] mentions(carol) → mentioned()
	// "next, please": bob speaks, by transitions[0] always() → round_robin()
	// default_target (none: terminate after_work)
}
