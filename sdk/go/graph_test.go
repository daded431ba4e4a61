package sdkgo_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/transition"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFactoriesMatchTransition checks that the SDK's graph factories write
// exactly the bytes of the hub's own.
func TestFactoriesMatchTransition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sdk, hub any
	}{
		{"sequence", agentsdk.Sequence("researcher", "writer", "editor"), transition.Sequence("researcher", "writer", "editor")},
		{"sequence of one", agentsdk.Sequence("solo"), transition.Sequence("solo")},
		{"empty sequence", agentsdk.Sequence(), transition.Sequence()},
		{"round robin", agentsdk.RoundRobin([]string{"a", "b", "c"}, 6), transition.RoundRobin([]string{"a", "b", "c"}, 6)},
		{"round robin without cap", agentsdk.RoundRobin([]string{"a", "b"}, 0), transition.RoundRobin([]string{"a", "b"}, 0)},
		{"supervisor", agentsdk.Supervisor(agentsdk.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}, MaxTurns: 12}),
			transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}, MaxTurns: 12})},
		{"supervisor with user", agentsdk.Supervisor(agentsdk.SupervisorSpec{Router: "r", Specialists: []string{"s1", "s2"}, User: "human",
			TransferPrefix: "go_", HelpTool: "help"}),
			transition.Supervisor(transition.SupervisorSpec{Router: "r", Specialists: []string{"s1", "s2"}, User: "human",
				TransferPrefix: "go_", HelpTool: "help"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := mustJSON(t, tc.sdk), mustJSON(t, tc.hub); got != want {
				t.Errorf("sdk:\n%s\nhub:\n%s", got, want)
			}
		})
	}
}

// TestCustomGraphIsCanonical builds a graph with every built-in condition
// and target and checks that the hub decodes it and encodes it back to the
// same bytes.
func TestCustomGraphIsCanonical(t *testing.T) {
	a := agentsdk.NewGraph("router").
		On(agentsdk.ToolCalled("transfer_to_billing"), agentsdk.ToAgent("billing")).
		OnPriority(1, agentsdk.AnyOf(agentsdk.FromSpeaker("billing"), agentsdk.FromSpeaker("tech")), agentsdk.RevertToInitiator()).
		On(agentsdk.AllOf(agentsdk.Mentions("tech"), agentsdk.Not(agentsdk.ContextEquals("blocked", true))), agentsdk.ToMentioned()).
		On(agentsdk.ContextIn("route", "a", 2, map[string]any{"x": []int{1}}), agentsdk.Stay()).
		On(agentsdk.ContextCompare("score", "ge", 0.5), agentsdk.ToSupervisor()).
		On(agentsdk.TurnCountAtLeast(3), agentsdk.ToActiveAgent("router")).
		On(agentsdk.EventTypeIs(agentsdk.EventPacket), agentsdk.ToActiveAgent("")).
		On(agentsdk.Always(), agentsdk.ToNextInOrder()).
		On(agentsdk.ContextEquals("missing", nil), agentsdk.Terminate("")).
		Otherwise(agentsdk.Terminate("triage_done")).
		WithMaxTurns(10)
	got := mustJSON(t, a)
	g, err := transition.NewRegistry().Decode([]byte(got))
	if err != nil {
		t.Fatalf("the hub refuses the graph: %v\n%s", err, got)
	}
	if want := mustJSON(t, g); got != want {
		t.Errorf("sdk:\n%s\nhub:\n%s", got, want)
	}
	// And back through the SDK's decoder.
	var back agentsdk.Graph
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if again := mustJSON(t, back); again != got {
		t.Errorf("round trip:\n%s\nwant:\n%s", again, got)
	}
}

// TestGraphDefaults: no default target means the hub's after_work, no cap
// is null.
func TestGraphDefaults(t *testing.T) {
	got := mustJSON(t, agentsdk.NewGraph("a"))
	want := `{"version":1,"initial_speaker":"a","transitions":[],"default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":null}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := mustJSON(t, agentsdk.NewGraph("a")), mustJSON(t, &transition.Graph{InitialSpeaker: "a"}); got != want {
		t.Errorf("sdk %s, hub %s", got, want)
	}
}

// TestGraphFromFile reads the checked-in triage graph.
func TestGraphFromFile(t *testing.T) {
	raw, err := os.ReadFile("../../examples/graphs/triage.json")
	if err != nil {
		t.Fatal(err)
	}
	var g agentsdk.Graph
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	hub, err := transition.NewRegistry().Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, g), mustJSON(t, hub); got != want {
		t.Errorf("sdk:\n%s\nhub:\n%s", got, want)
	}
	if g.InitialSpeaker != "router" || g.MaxTurns != 10 || len(g.Transitions) != 3 || g.Default == nil || g.Default.Name != "terminate" {
		t.Errorf("decoded %+v", g)
	}
	for _, bad := range []string{`{"version":2}`, `{"transitions":[{"when":{"name":"always"}}]}`, `[`} {
		if err := json.Unmarshal([]byte(bad), &g); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestGraphStruct: the graph sent with an open (OpenRequest.graph, a
// google.protobuf.Struct) is the same graph as its JSON.
func TestGraphStruct(t *testing.T) {
	for name, g := range map[string]*agentsdk.Graph{
		"sequence": agentsdk.Sequence("a", "b"),
		"custom": agentsdk.NewGraph("a").
			OnPriority(2, agentsdk.ContextCompare("score", "ge", 0.5), agentsdk.ToAgent("b")).
			On(agentsdk.ContextIn("k", "x", 3), agentsdk.Stay()).
			WithMaxTurns(7),
		"no cap": agentsdk.NewGraph("a"),
	} {
		s, err := g.Struct()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := protojson.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		hub, err := transition.NewRegistry().Decode(raw)
		if err != nil {
			t.Fatalf("%s: the hub refuses %s: %v", name, raw, err)
		}
		if got, want := mustJSON(t, hub), mustJSON(t, g); got != want {
			t.Errorf("%s: through the Struct:\n%s\nwant:\n%s", name, got, want)
		}
		req, err := agentsdk.OpenOptions{Graph: g}.Proto()
		if err != nil || !proto.Equal(req.GetGraph(), s) {
			t.Errorf("%s: OpenOptions.Proto graph %v %v", name, req.GetGraph(), err)
		}
	}
}

// TestGraphStructIsItsJSON: the Struct an open carries, built directly,
// is exactly the graph's JSON decoded into a Struct, for every golden
// graph and for args of types JSON only reaches through their encoding.
func TestGraphStructIsItsJSON(t *testing.T) {
	type custom struct {
		Level int    `json:"level"`
		Tag   string `json:"tag,omitempty"`
	}
	var nilMap map[string]any
	graphs := goldenGraphs()
	graphs["exotic args"] = agentsdk.NewGraph("a").
		On(agentsdk.CustomCondition("c", map[string]any{"f32": float32(0.1), "u8": uint8(7), "big": int64(1) << 60, "names": []string{"x", "y"},
			"struct": custom{Level: 2}, "num": json.Number("1e3"), "nil map": nilMap, "bad utf8": "a\xffb", "nested": map[string]any{"l": []any{1.5, nil}}}),
			agentsdk.CustomTarget("t", map[string]any{"cond": agentsdk.Always(), "target": agentsdk.Stay()})).
		WithMaxTurns(3)
	graphs["supervisor field"] = &agentsdk.Graph{InitialSpeaker: "a", Supervisor: "boss"}
	for name, g := range graphs {
		got, err := g.Struct()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		js, err := g.JSON()
		if err != nil {
			t.Fatal(err)
		}
		want := &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(js), want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: built\n%v\nits JSON decodes to\n%v", name, got, want)
		}
	}
	bad := agentsdk.NewGraph("a").On(agentsdk.CustomCondition("c", map[string]any{"nan": math.NaN()}), agentsdk.Stay())
	if _, err := bad.Struct(); err == nil {
		t.Error("a NaN arg: no error (JSON has no NaN)")
	}
}
