package agentsdk_test

import (
	"fmt"

	"github.com/hubd/hubd/agentsdk"
)

// A pipeline: each step speaks once, in order, and the session closes
// sequence_complete after the last. Open it with Client.OpenWorkflow; the
// examples that run against a hub are in sdk/go and examples/.
func ExampleSequence() {
	g := agentsdk.Sequence("researcher", "writer", "editor")
	js, err := g.JSON()
	if err != nil {
		panic(err)
	}
	fmt.Println(js)
	// Output:
	// {"version":1,"initial_speaker":"researcher","transitions":[{"when":{"name":"from_speaker","args":{"agent_id":"researcher"}},"then":{"name":"agent","args":{"agent_id":"writer"}},"priority":0},{"when":{"name":"from_speaker","args":{"agent_id":"writer"}},"then":{"name":"agent","args":{"agent_id":"editor"}},"priority":0}],"default_target":{"name":"terminate","args":{"reason":"sequence_complete"}},"max_turns":3}
}

// A feedback loop: the drafter and the reviewer take turns until the
// reviewer sets the context variable approved, or ten turns pass.
func ExampleNewGraph() {
	g := agentsdk.NewGraph("drafter").
		On(agentsdk.AllOf(agentsdk.FromSpeaker("reviewer"), agentsdk.ContextEquals("approved", true)), agentsdk.Terminate("approved")).
		On(agentsdk.FromSpeaker("drafter"), agentsdk.ToAgent("reviewer")).
		On(agentsdk.FromSpeaker("reviewer"), agentsdk.ToAgent("drafter")).
		WithMaxTurns(10)
	fmt.Println(len(g.Transitions), "rules, first speaker", g.InitialSpeaker, "at most", g.MaxTurns, "turns")
	// Output:
	// 3 rules, first speaker drafter at most 10 turns
}
