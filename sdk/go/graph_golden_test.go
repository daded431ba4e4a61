package sdkgo_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/session"
)

var rewrite = flag.Bool("rewrite", false, "rewrite sdk/testdata/graphs from the Go builders")

// goldenGraphs are the builders' graphs whose JSON every SDK must write
// in meaning (the same JSON value, however spelled: the hub keeps a graph
// in its canonical form): sdk/testdata/graphs/<name>.json is the contract
// the Python and TypeScript SDKs' tests check their own builders against.
func goldenGraphs() map[string]*agentsdk.Graph {
	return map[string]*agentsdk.Graph{
		"sequence":    agentsdk.Sequence("researcher", "writer", "editor"),
		"round_robin": agentsdk.RoundRobin([]string{"a", "b", "c"}, 6),
		"supervisor":  agentsdk.Supervisor(agentsdk.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}}),
		"supervisor_user": agentsdk.Supervisor(agentsdk.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"},
			User: "user", MaxTurns: 20, TransferPrefix: "to_", HelpTool: "help"}),
		"every_node": agentsdk.NewGraph("a").
			On(agentsdk.Always(), agentsdk.Stay()).
			OnPriority(1, agentsdk.FromSpeaker("a"), agentsdk.ToAgent("b")).
			OnPriority(2, agentsdk.ToolCalled("t"), agentsdk.ToNextInOrder()).
			OnPriority(3, agentsdk.ContextEquals("k", map[string]any{"x": []any{1, "y", true, nil}}), agentsdk.RevertToInitiator()).
			OnPriority(4, agentsdk.ContextIn("k", "a", 2.5), agentsdk.Terminate("done")).
			OnPriority(5, agentsdk.ContextCompare("n", "ge", 3), agentsdk.ToSupervisor()).
			OnPriority(6, agentsdk.AllOf(agentsdk.Mentions("b"), agentsdk.Not(agentsdk.TurnCountAtLeast(2))), agentsdk.ToMentioned()).
			OnPriority(7, agentsdk.AnyOf(agentsdk.EventTypeIs("packet"), agentsdk.CustomCondition("is_urgent", map[string]any{"level": 2})), agentsdk.ToActiveAgent("a")).
			On(agentsdk.Always(), agentsdk.ToActiveAgent("")).
			On(agentsdk.Always(), agentsdk.CustomTarget("escalate_to_human", nil)).
			Otherwise(agentsdk.Terminate("")).
			WithMaxTurns(9),
	}
}

// TestGoldenGraphs keeps sdk/testdata/graphs equal in meaning to what the
// Go builders write: the same canonical JSON, the form the hub stores
// (-rewrite writes them).
func TestGoldenGraphs(t *testing.T) {
	for name, g := range goldenGraphs() {
		got, err := g.JSON()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join("..", "testdata", "graphs", name+".json")
		if *rewrite {
			if err := os.WriteFile(file, []byte(got+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run with -rewrite)", err)
		}
		have, err := session.CanonicalJSON([]byte(got))
		if err != nil {
			t.Fatal(err)
		}
		if c, err := session.CanonicalJSON(want); err != nil || !bytes.Equal(have, c) {
			t.Errorf("%s: the Go builder writes\n%s\nthe contract says (%v)\n%s", name, have, err, c)
		}
	}
}
