package transition_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hubd/hubd/transition"
)

// TestMermaidGolden renders graphs and compares them with the golden files
// under testdata/. After a deliberate change, regenerate them with
//
//	go test ./transition -run TestMermaidGolden -rewrite
//
// and read the diff.
func TestMermaidGolden(t *testing.T) {
	pipelineJSON, err := os.ReadFile("testdata/pipeline.json")
	if err != nil {
		t.Fatal(err)
	}
	pipeline := decode(t, transition.NewRegistry(), string(pipelineJSON))
	// The pipeline file is what Sequence builds.
	if seq := transition.Sequence("researcher", "writer", "editor"); !reflect.DeepEqual(pipeline, seq) {
		t.Fatalf("testdata/pipeline.json decodes to %#v, not Sequence(researcher, writer, editor)", pipeline)
	}
	graphs := map[string]*transition.Graph{
		"pipeline": pipeline,
		"supervisor": transition.Supervisor(transition.SupervisorSpec{
			Router: "router", Specialists: []string{"billing", "tech"}, User: "user", MaxTurns: 20}),
		"priorities": {
			InitialSpeaker: "alice",
			Transitions: []transition.Transition{
				{When: transition.ContextEquals{Key: "route", Value: raw(`"a<b"`)}, Then: to("bob"), Priority: 2},
				{When: transition.Always{}, Then: transition.MentionedTarget{}},
				{When: from("bob"), Then: transition.TerminateTarget{Reason: "done"}, Priority: -1},
			},
		},
	}
	for name, g := range graphs {
		t.Run(name, func(t *testing.T) {
			got := g.Mermaid()
			file := "testdata/" + name + ".mmd"
			if *rewrite {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Mermaid() differs from %s (run with -rewrite and read the diff):\n%s", file, got)
			}
		})
	}
}

// Node ids are numbered whatever the agent names (a name such as "end"
// would be a Mermaid keyword), and distinct names get distinct nodes.
func TestMermaidIDs(t *testing.T) {
	g := transition.Sequence("a.b", "a_b", "end", "é")
	out := g.Mermaid()
	for _, box := range []string{`n1["a.b"]`, `n2["a_b"]`, `n3["end"]`, `n4["é"]`} {
		if !strings.Contains(out, box) {
			t.Errorf("no node %s in\n%s", box, out)
		}
	}
	if strings.Contains(out, "end[") || strings.Contains(out, " end ") {
		t.Errorf("an agent name is used as a node id:\n%s", out)
	}
}
