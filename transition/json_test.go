package transition_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// protocolGraph is the graph of protocol.md §5, verbatim.
const protocolGraph = `{"version": 1,
 "initial_speaker": "alice",
 "transitions": [{"when": {"name": "from_speaker", "args": {"agent_id": "alice"}},
                  "then": {"name": "agent", "args": {"agent_id": "bob"}}, "priority": 0}],
 "default_target": {"name": "terminate", "args": {"reason": "sequence_complete"}},
 "max_turns": 3}`

func TestDecodeProtocolGraph(t *testing.T) {
	g := decode(t, transition.NewRegistry(), protocolGraph)
	want := &transition.Graph{
		Version:        1,
		InitialSpeaker: "alice",
		Transitions:    []transition.Transition{{When: from("alice"), Then: to("bob")}},
		DefaultTarget:  transition.TerminateTarget{Reason: session.ReasonSequenceComplete},
		MaxTurns:       3,
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("Decode = %#v\nwant %#v", g, want)
	}
	if err := g.Validate([]string{"alice", "bob"}); err != nil {
		t.Fatal(err)
	}
	// The encoding is the same graph, compact.
	if got, want := string(marshal(t, g)), compact(t, protocolGraph); got != want {
		t.Errorf("Marshal = %s\nwant      %s", got, want)
	}
}

func compact(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The source system's to_dict() writes no version, "max_turns": null for no
// cap, "args": {} for arg-less nodes, and may leave args or priority out.
func TestDecodeSourceSystemForms(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *transition.Graph
	}{
		{
			name: "no version, max_turns null, args {}",
			in: `{"initial_speaker": "alice",
			      "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}}, "priority": 0}],
			      "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
			      "max_turns": null}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "alice",
				Transitions:   []transition.Transition{{When: transition.Always{}, Then: transition.RoundRobinTarget{}}},
				DefaultTarget: transition.TerminateTarget{Reason: "after_work"}},
		},
		{
			name: "args omitted, priority omitted, no default target",
			in: `{"initial_speaker": "alice",
			      "transitions": [{"when": {"name": "always"}, "then": {"name": "stay"}}]}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "alice",
				Transitions: []transition.Transition{{When: transition.Always{}, Then: transition.StayTarget{}}}},
		},
		{
			name: "args null, default_target null, transitions null",
			in:   `{"version": null, "initial_speaker": "bob", "transitions": null, "default_target": null}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "bob"},
		},
		{
			name: "args null on a node",
			in:   `{"initial_speaker": "bob", "transitions": [{"when": {"name": "always", "args": null}, "then": {"name": "supervisor", "args": null}, "priority": 3}]}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "bob",
				Transitions: []transition.Transition{{When: transition.Always{}, Then: transition.SupervisorTarget{}, Priority: 3}}},
		},
		{
			name: "an optional arg given null",
			in:   `{"initial_speaker": "bob", "default_target": {"name": "active_agent", "args": {"fallback": null}}}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "bob", DefaultTarget: transition.ActiveAgentTarget{}},
		},
		{
			name: "protocol event type spelling",
			in:   `{"initial_speaker": "bob", "transitions": [{"when": {"name": "event_type", "args": {"type": "EV_PACKET"}}, "then": {"name": "stay"}}]}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "bob",
				Transitions: []transition.Transition{{When: transition.EventTypeIs{Type: session.EventPacket}, Then: transition.StayTarget{}}}},
		},
		{
			name: "context values made canonical, a missing value is null",
			in: `{"initial_speaker": "bob", "transitions": [
			       {"when": {"name": "context_equals", "args": {"key": "o", "value": {"b": 1.0, "a": [1e0]}}}, "then": {"name": "stay"}},
			       {"when": {"name": "context_equals", "args": {"key": "x"}}, "then": {"name": "stay"}},
			       {"when": {"name": "context_in", "args": {"key": "r", "values": ["a", 2.0, null]}}, "then": {"name": "stay"}}]}`,
			want: &transition.Graph{Version: 1, InitialSpeaker: "bob", Transitions: []transition.Transition{
				{When: transition.ContextEquals{Key: "o", Value: raw(`{"a":[1],"b":1}`)}, Then: transition.StayTarget{}},
				{When: transition.ContextEquals{Key: "x", Value: raw(`null`)}, Then: transition.StayTarget{}},
				{When: transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`2`), raw(`null`)}}, Then: transition.StayTarget{}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := decode(t, transition.NewRegistry(), tt.in)
			if !reflect.DeepEqual(g, tt.want) {
				t.Fatalf("Decode = %#v\nwant %#v", g, tt.want)
			}
		})
	}
}

// allNodesGraph uses every built-in condition and target.
func allNodesGraph() *transition.Graph {
	return &transition.Graph{
		Version:        1,
		InitialSpeaker: "alice",
		Transitions: []transition.Transition{
			{When: transition.Always{}, Then: transition.RoundRobinTarget{}, Priority: 9},
			{When: from("alice"), Then: to("bob")},
			{When: transition.ToolCalled{Tool: "transfer_to_carol"}, Then: transition.StayTarget{}, Priority: -1},
			{When: transition.ContextEquals{Key: "route", Value: raw(`{"a":[1,"<"],"b":null}`)}, Then: transition.RevertToInitiatorTarget{}},
			{When: transition.AllOf{Conditions: []transition.Condition{from("bob"), transition.Not{Condition: transition.ContextEquals{Key: "done", Value: raw(`true`)}}}}, Then: transition.TerminateTarget{Reason: "done"}},
			{When: transition.AnyOf{Conditions: []transition.Condition{transition.Mentions{Agent: "carol"}, transition.TurnCountAtLeast{N: 4}}}, Then: transition.SupervisorTarget{}, Priority: 2},
			{When: transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`1.5`), raw(`null`)}}, Then: transition.MentionedTarget{}},
			{When: transition.ContextCompare{Key: "score", Op: "ge", Value: 0.75}, Then: transition.ActiveAgentTarget{Fallback: "carol"}},
			{When: transition.EventTypeIs{Type: session.EventPacket}, Then: transition.ActiveAgentTarget{}},
		},
		DefaultTarget: transition.TerminateTarget{Reason: session.ReasonSequenceComplete},
		MaxTurns:      12,
	}
}

// roundTrip encodes g, decodes it, and checks the result equals want and
// that encoding it again gives the same bytes.
func roundTrip(t *testing.T, r *transition.Registry, g, want *transition.Graph) {
	t.Helper()
	b := marshal(t, g)
	back, err := r.Decode(b)
	if err != nil {
		t.Fatalf("Decode(Marshal(g)): %v\n%s", err, b)
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip of %s:\n got %#v\nwant %#v", b, back, want)
	}
	if again := marshal(t, back); !bytes.Equal(again, b) {
		t.Fatalf("not a fixed point:\n%s\n%s", b, again)
	}
}

func TestRoundTripEveryNode(t *testing.T) {
	g := allNodesGraph()
	if err := g.Validate(abc); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, transition.NewRegistry(), g, g)
}

func TestRoundTripFactories(t *testing.T) {
	withDefault := func(g *transition.Graph) *transition.Graph {
		// Marshal writes the implicit default (terminate after_work).
		c := *g
		if c.DefaultTarget == nil {
			c.DefaultTarget = transition.TerminateTarget{Reason: session.ReasonAfterWork}
		}
		return &c
	}
	for name, g := range map[string]*transition.Graph{
		"sequence":              transition.Sequence("researcher", "writer", "editor"),
		"sequence of one":       transition.Sequence("solo"),
		"round robin":           transition.RoundRobin(abc, 6),
		"round robin, no cap":   transition.RoundRobin(abc, 0),
		"supervisor":            transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}}),
		"supervisor with user":  transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}, User: "user", MaxTurns: 20}),
		"supervisor, own tools": transition.Supervisor(transition.SupervisorSpec{Router: "r", Specialists: []string{"s"}, TransferPrefix: "handoff_", HelpTool: "help"}),
	} {
		t.Run(name, func(t *testing.T) { roundTrip(t, transition.NewRegistry(), g, withDefault(g)) })
	}
}

func TestMarshalForm(t *testing.T) {
	tests := []struct {
		g    *transition.Graph
		want string
	}{
		{&transition.Graph{InitialSpeaker: "a"},
			`{"version":1,"initial_speaker":"a","transitions":[],"default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":null}`},
		{&transition.Graph{Version: 0, InitialSpeaker: "a", DefaultTarget: transition.TerminateTarget{}, MaxTurns: 2,
			Transitions: []transition.Transition{{When: transition.Always{}, Then: transition.ActiveAgentTarget{}, Priority: -2}}},
			`{"version":1,"initial_speaker":"a","transitions":[{"when":{"name":"always","args":{}},"then":{"name":"active_agent","args":{}},"priority":-2}],"default_target":{"name":"terminate","args":{"reason":"terminated"}},"max_turns":2}`},
	}
	for _, tt := range tests {
		if got := string(marshal(t, tt.g)); got != tt.want {
			t.Errorf("Marshal = %s\nwant      %s", got, tt.want)
		}
	}
}

// node builds a one-transition graph whose condition (or target) is the
// given JSON, for the error table.
func when(cond string) string {
	return `{"initial_speaker":"alice","transitions":[{"when":` + cond + `,"then":{"name":"agent","args":{"agent_id":"bob"}}}]}`
}

func then(target string) string {
	return `{"initial_speaker":"alice","transitions":[{"when":{"name":"always"},"then":` + target + `}]}`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		frags []string // the first names the offending node
	}{
		// The document.
		{"not JSON", `{`, []string{"graph:"}},
		{"empty", ``, []string{"graph:"}},
		{"not an object", `[]`, []string{"graph:"}},
		{"trailing value", `{"initial_speaker":"a"} {}`, []string{"trailing data"}},
		{"trailing bracket", `{"initial_speaker":"a"}]`, []string{"trailing data"}},
		{"unknown top-level field", `{"initial_speaker":"a","colour":"blue"}`, []string{`"colour"`}},
		{"unknown field in a transition", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"stay"},"weight":1}]}`, []string{`"weight"`}},
		{"transitions not a list", `{"initial_speaker":"a","transitions":{}}`, []string{"transitions"}},
		{"priority not an integer", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"stay"},"priority":1.5}]}`, []string{"priority"}},
		{"version 2", `{"version":2,"initial_speaker":"a"}`, []string{"version: 2"}},
		{"max_turns 0", `{"initial_speaker":"a","max_turns":0}`, []string{"max_turns: 0"}},
		{"max_turns negative", `{"initial_speaker":"a","max_turns":-3}`, []string{"max_turns: -3"}},
		{"max_turns not an integer", `{"initial_speaker":"a","max_turns":"3"}`, []string{"max_turns"}},

		// Transitions.
		{"missing when", `{"initial_speaker":"a","transitions":[{"then":{"name":"stay"}}]}`, []string{`transitions[0]: missing "when"`}},
		{"when null", `{"initial_speaker":"a","transitions":[{"when":null,"then":{"name":"stay"}}]}`, []string{`transitions[0]: missing "when"`}},
		{"missing then", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"}},{"when":{"name":"always"}}]}`, []string{`transitions[0]: missing "then"`}},
		{"then null, second", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"stay"}},{"when":{"name":"always"},"then":null}]}`, []string{`transitions[1]: missing "then"`}},
		{"node not an object", when(`"always"`), []string{"transitions[0].when:"}},
		{"node with an unknown field", when(`{"name":"always","arg":{}}`), []string{"transitions[0].when:", `"arg"`}},
		{"unknown condition", when(`{"name":"from_speakr","args":{"agent_id":"a"}}`), []string{"transitions[0].when:", `unknown condition "from_speakr"`, "all_of, always, any_of"}},
		{"condition without a name", when(`{"args":{}}`), []string{"transitions[0].when:", `unknown condition ""`}},
		{"unknown target", then(`{"name":"agnet","args":{"agent_id":"b"}}`), []string{"transitions[0].then:", `unknown target "agnet"`, "active_agent, agent"}},
		{"a target as a condition", when(`{"name":"agent","args":{"agent_id":"b"}}`), []string{"transitions[0].when:", `unknown condition "agent"`}},
		{"unknown default target", `{"initial_speaker":"a","default_target":{"name":"nowhere"}}`, []string{"default_target:", `unknown target "nowhere"`}},
		{"default target not an object", `{"initial_speaker":"a","default_target":"terminate"}`, []string{"default_target:"}},

		// Args.
		{"args a list", when(`{"name":"always","args":[]}`), []string{"transitions[0].when (always)", "args must be a JSON object"}},
		{"args a string", then(`{"name":"agent","args":"bob"}`), []string{"transitions[0].then (agent)", "args must be a JSON object"}},
		{"args a number", when(`{"name":"from_speaker","args":1}`), []string{"transitions[0].when (from_speaker)", "args must be a JSON object"}},
		{"unknown arg", when(`{"name":"from_speaker","args":{"agent_id":"a","agent":"b"}}`), []string{"transitions[0].when (from_speaker)", `unknown arg "agent"`}},
		{"unknown args, sorted", when(`{"name":"always","args":{"z":1,"a":2}}`), []string{"transitions[0].when (always)", `unknown arg "a", "z"`}},
		{"unknown arg on a target", then(`{"name":"round_robin","args":{"order":"reverse"}}`), []string{"transitions[0].then (round_robin)", `unknown arg "order"`}},
		{"arg names are case-sensitive", then(`{"name":"agent","args":{"Agent_ID":"bob"}}`), []string{"transitions[0].then (agent)", `missing arg "agent_id"`}},
		{"missing agent_id", when(`{"name":"from_speaker","args":{}}`), []string{"transitions[0].when (from_speaker)", `missing arg "agent_id"`}},
		{"agent_id null", then(`{"name":"agent","args":{"agent_id":null}}`), []string{"transitions[0].then (agent)", `missing arg "agent_id"`}},
		{"agent_id empty", then(`{"name":"agent","args":{"agent_id":""}}`), []string{"transitions[0].then (agent)", `arg "agent_id" must not be empty`}},
		{"agent_id a number", when(`{"name":"from_speaker","args":{"agent_id":1}}`), []string{"transitions[0].when (from_speaker)", `arg "agent_id" must be a string, got 1`}},
		{"missing tool_name", when(`{"name":"tool_called"}`), []string{"transitions[0].when (tool_called)", `missing arg "tool_name"`}},
		{"missing key", when(`{"name":"context_equals","args":{"value":1}}`), []string{"transitions[0].when (context_equals)", `missing arg "key"`}},
		{"context_in without values", when(`{"name":"context_in","args":{"key":"k"}}`), []string{"transitions[0].when (context_in)", `missing arg "values"`}},
		{"context_in, empty values", when(`{"name":"context_in","args":{"key":"k","values":[]}}`), []string{"transitions[0].when (context_in)", `"values" must be a non-empty array`}},
		{"context_in, values not a list", when(`{"name":"context_in","args":{"key":"k","values":"a"}}`), []string{"transitions[0].when (context_in)", `"values" must be a non-empty array`}},
		{"context_compare, bad op", when(`{"name":"context_compare","args":{"key":"k","op":"approx","value":1}}`), []string{"transitions[0].when (context_compare)", `op "approx"`, "lt, le, gt, ge, eq, ne"}},
		{"context_compare, missing op", when(`{"name":"context_compare","args":{"key":"k","value":1}}`), []string{"transitions[0].when (context_compare)", `missing arg "op"`}},
		{"context_compare, value a string", when(`{"name":"context_compare","args":{"key":"k","op":"lt","value":"1"}}`), []string{"transitions[0].when (context_compare)", `arg "value" must be a number`}},
		{"context_compare, missing value", when(`{"name":"context_compare","args":{"key":"k","op":"lt"}}`), []string{"transitions[0].when (context_compare)", `missing arg "value"`}},
		{"mentions without agent", when(`{"name":"mentions","args":{}}`), []string{"transitions[0].when (mentions)", `missing arg "agent_id"`}},
		{"turn_count_at_least 0", when(`{"name":"turn_count_at_least","args":{"n":0}}`), []string{"transitions[0].when (turn_count_at_least)", "n must be at least 1, got 0"}},
		{"turn_count_at_least negative", when(`{"name":"turn_count_at_least","args":{"n":-2}}`), []string{"transitions[0].when (turn_count_at_least)", "got -2"}},
		{"turn_count_at_least, a string", when(`{"name":"turn_count_at_least","args":{"n":"3"}}`), []string{"transitions[0].when (turn_count_at_least)", `arg "n" must be an integer`}},
		{"turn_count_at_least, a fraction", when(`{"name":"turn_count_at_least","args":{"n":2.5}}`), []string{"transitions[0].when (turn_count_at_least)", `arg "n" must be an integer`}},
		{"turn_count_at_least, missing n", when(`{"name":"turn_count_at_least"}`), []string{"transitions[0].when (turn_count_at_least)", `missing arg "n"`}},
		{"event_type with a space", when(`{"name":"event_type","args":{"type":"a b"}}`), []string{"transitions[0].when (event_type)", "type:"}},
		{"event_type empty", when(`{"name":"event_type","args":{"type":""}}`), []string{"transitions[0].when (event_type)", `"type" must not be empty`}},
		{"event_type too long", when(`{"name":"event_type","args":{"type":"` + strings.Repeat("x", 65) + `"}}`), []string{"transitions[0].when (event_type)"}},
		{"terminate reason a number", `{"initial_speaker":"a","default_target":{"name":"terminate","args":{"reason":5}}}`, []string{"default_target (terminate)", `arg "reason" must be a string`}},
		{"active_agent fallback a list", then(`{"name":"active_agent","args":{"fallback":["a"]}}`), []string{"transitions[0].then (active_agent)", `"fallback" must be a string`}},

		// Composites: the path names the nested node.
		{"all_of, empty list", when(`{"name":"all_of","args":{"conditions":[]}}`), []string{"transitions[0].when (all_of)", `"conditions" must be a non-empty array`}},
		{"any_of, empty list", when(`{"name":"any_of","args":{"conditions":[]}}`), []string{"transitions[0].when (any_of)", "non-empty"}},
		{"all_of, not a list", when(`{"name":"all_of","args":{"conditions":{"name":"always"}}}`), []string{"transitions[0].when (all_of)", "non-empty array"}},
		{"all_of, missing conditions", when(`{"name":"all_of"}`), []string{"transitions[0].when (all_of)", `missing arg "conditions"`}},
		{"all_of, unknown nested", when(`{"name":"all_of","args":{"conditions":[{"name":"always"},{"name":"sometimes"}]}}`), []string{"transitions[0].when.args.conditions[1]:", `unknown condition "sometimes"`}},
		{"any_of, bad nested arg", when(`{"name":"any_of","args":{"conditions":[{"name":"from_speaker","args":{"who":"a"}}]}}`), []string{"transitions[0].when.args.conditions[0] (from_speaker)"}},
		{"not, missing condition", when(`{"name":"not","args":{}}`), []string{"transitions[0].when (not)", `missing arg "condition"`}},
		{"not, bad nested", when(`{"name":"not","args":{"condition":{"name":"turn_count_at_least","args":{"n":0}}}}`), []string{"transitions[0].when.args.condition (turn_count_at_least)", "at least 1"}},
		{"deeply nested", when(`{"name":"all_of","args":{"conditions":[{"name":"always"},{"name":"not","args":{"condition":{"name":"any_of","args":{"conditions":[{"name":"always"},{"name":"always"},{"name":"context_compare","args":{"key":"k","op":"~","value":1}}]}}}}]}}`),
			[]string{"transitions[0].when.args.conditions[1].args.condition.args.conditions[2] (context_compare)", `op "~"`}},
		{"nested, unknown arg beside conditions", when(`{"name":"all_of","args":{"conditions":[{"name":"always"}],"mode":"strict"}}`), []string{"transitions[0].when (all_of)", `unknown arg "mode"`}},
		{"second transition", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"stay"}},{"when":{"name":"always"},"then":{"name":"agent"}}]}`, []string{"transitions[1].then (agent)", `missing arg "agent_id"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := transition.NewRegistry().Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode succeeded: %#v", g)
			}
			wantInvalid(t, err, tt.frags...)
			if g != nil {
				t.Errorf("Decode returned a graph with its error")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ps := []string{"alice", "bob", "carol"}
	sub := func(cs ...transition.Condition) []transition.Condition { return cs }
	tests := []struct {
		name  string
		g     *transition.Graph
		frags []string
	}{
		{"no initial speaker", &transition.Graph{}, []string{"initial_speaker: missing"}},
		{"initial speaker not a participant", &transition.Graph{InitialSpeaker: "zed"}, []string{`initial_speaker: "zed" is not a participant (participants: alice, bob, carol)`}},
		{"version 2", &transition.Graph{Version: 2, InitialSpeaker: "alice"}, []string{"version: 2"}},
		{"max_turns negative", &transition.Graph{InitialSpeaker: "alice", MaxTurns: -1}, []string{"max_turns: -1"}},
		{"agent target not a participant", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
			{When: transition.Always{}, Then: to("bob")},
			{When: transition.Always{}, Then: to("zed")},
		}}, []string{`transitions[1].then (agent): agent "zed" is not a participant (participants: alice, bob, carol)`}},
		{"from_speaker not a participant", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
			{When: from("zed"), Then: to("bob")},
		}}, []string{`transitions[0].when (from_speaker): agent "zed"`}},
		{"mentions not a participant", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
			{When: transition.Mentions{Agent: "zed"}, Then: to("bob")},
		}}, []string{`transitions[0].when (mentions): agent "zed"`}},
		{"from_speaker in a nested all_of", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
			{When: transition.Always{}, Then: to("bob")},
			{When: transition.AllOf{Conditions: sub(from("alice"), from("zed"))}, Then: to("bob")},
		}}, []string{`transitions[1].when.args.conditions[1] (from_speaker): agent "zed"`}},
		{"deep in any_of and not", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
			{When: transition.AnyOf{Conditions: sub(transition.Always{}, transition.Not{Condition: transition.AllOf{Conditions: sub(transition.Mentions{Agent: "zed"})}})}, Then: to("bob")},
		}}, []string{`transitions[0].when.args.conditions[1].args.condition.args.conditions[0] (mentions): agent "zed"`}},
		{"default target agent not a participant", &transition.Graph{InitialSpeaker: "alice", DefaultTarget: to("zed")}, []string{`default_target (agent): agent "zed"`}},
		{"active_agent fallback not a participant", &transition.Graph{InitialSpeaker: "alice", DefaultTarget: transition.ActiveAgentTarget{Fallback: "zed"}}, []string{`default_target (active_agent): agent "zed"`}},
		{"agent target with no name", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.Always{}, Then: to("")}}}, []string{`transitions[0].then (agent): agent ""`}},
		{"missing condition", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{Then: to("bob")}}}, []string{"transitions[0]: needs both a condition and a target"}},
		{"missing target", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.Always{}}}}, []string{"transitions[0]: needs both"}},
		{"empty all_of", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.AllOf{}, Then: to("bob")}}}, []string{"transitions[0].when (all_of): needs at least one condition"}},
		{"empty any_of, nested", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.AllOf{Conditions: sub(transition.AnyOf{})}, Then: to("bob")}}}, []string{"transitions[0].when.args.conditions[0] (any_of): needs at least one condition"}},
		{"not without a condition", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.Not{}, Then: to("bob")}}}, []string{"transitions[0].when.args.condition: missing condition"}},
		{"nil in all_of", &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{{When: transition.AllOf{Conditions: sub(transition.Always{}, nil)}, Then: to("bob")}}}, []string{"transitions[0].when.args.conditions[1]: missing condition"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantInvalid(t, tt.g.Validate(ps), tt.frags...) })
	}
	// Decoded graphs are validated the same way.
	g := decode(t, transition.NewRegistry(), when(`{"name":"all_of","args":{"conditions":[{"name":"from_speaker","args":{"agent_id":"alice"}},{"name":"from_speaker","args":{"agent_id":"zed"}}]}}`))
	wantInvalid(t, g.Validate(ps), `transitions[0].when.args.conditions[1] (from_speaker): agent "zed" is not a participant`)

	// Valid graphs: every node, version 0 (= 1), no cap.
	for _, g := range []*transition.Graph{allNodesGraph(), {InitialSpeaker: "bob"}, {Version: 1, InitialSpeaker: "carol", MaxTurns: 0}} {
		if err := g.Validate(ps); err != nil {
			t.Errorf("Validate: %v", err)
		}
	}
}

func TestAgents(t *testing.T) {
	g := allNodesGraph()
	if got, want := g.Agents(), []string{"alice", "bob", "carol"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Agents() = %v, want %v", got, want)
	}
	sup := transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}, User: "user"})
	if got, want := sup.Agents(), []string{"user", "billing", "tech", "router"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Agents() = %v, want %v", got, want)
	}
	if got := (&transition.Graph{}).Agents(); got != nil {
		t.Errorf("Agents() of an empty graph = %v", got)
	}
}

// textLonger is a custom condition: the turn's text is longer than N bytes.
type textLonger struct{ N int }

func (c textLonger) Name() string                    { return "text_longer_than" }
func (c textLonger) Args() map[string]any            { return map[string]any{"n": c.N} }
func (c textLonger) Holds(in *transition.Input) bool { return len(in.Text) > c.N }

// lastParticipant is a custom target: the last participant, or a named one.
type lastParticipant struct{ Unless string }

func (lastParticipant) Name() string { return "last_participant" }
func (t lastParticipant) Args() map[string]any {
	if t.Unless == "" {
		return nil
	}
	return map[string]any{"unless": t.Unless}
}
func (t lastParticipant) Resolve(in *transition.Input) (transition.Decision, bool) {
	if len(in.Participants) == 0 {
		return transition.Decision{}, false
	}
	last := in.Participants[len(in.Participants)-1]
	if last == in.Speaker && t.Unless != "" {
		last = t.Unless
	}
	return transition.Speak(last), true
}
func (t lastParticipant) AgentNames() []string {
	if t.Unless == "" {
		return nil
	}
	return []string{t.Unless}
}

func customRegistry(t testing.TB) *transition.Registry {
	t.Helper()
	r := transition.NewRegistry()
	if err := r.RegisterCondition("text_longer_than", func(a *transition.Args) (transition.Condition, error) {
		n := a.Int("n", true)
		if n < 0 {
			return nil, a.Errorf("n must not be negative, got %d", n)
		}
		return textLonger{N: n}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterTarget("last_participant", func(a *transition.Args) (transition.Target, error) {
		return lastParticipant{Unless: a.String("unless", false)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

const customGraph = `{"initial_speaker": "alice",
 "transitions": [{"when": {"name": "all_of", "args": {"conditions": [{"name": "text_longer_than", "args": {"n": 10}}, {"name": "from_speaker", "args": {"agent_id": "alice"}}]}},
                  "then": {"name": "last_participant", "args": {"unless": "bob"}}},
                 {"when": {"name": "text_longer_than", "args": {"n": 0}}, "then": {"name": "last_participant"}}]}`

func TestCustomNodes(t *testing.T) {
	r := customRegistry(t)
	g := decode(t, r, customGraph)
	want := &transition.Graph{Version: 1, InitialSpeaker: "alice", Transitions: []transition.Transition{
		{When: transition.AllOf{Conditions: []transition.Condition{textLonger{N: 10}, from("alice")}}, Then: lastParticipant{Unless: "bob"}},
		{When: textLonger{N: 0}, Then: lastParticipant{}},
	}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("Decode = %#v", g)
	}
	want.DefaultTarget = transition.TerminateTarget{Reason: session.ReasonAfterWork}
	roundTrip(t, r, g, want)

	if err := g.Validate(abc); err != nil {
		t.Fatal(err)
	}
	// AgentNamer on a custom target is checked like a built-in.
	wantInvalid(t, g.Validate([]string{"alice", "carol"}), `transitions[0].then (last_participant): agent "bob"`)

	if res := g.Evaluate(turn("alice", "a long enough text")); res.Decision != transition.Speak("carol") || res.Rule != 0 {
		t.Errorf("Evaluate = %+v", res)
	}
	if res := g.Evaluate(turn("carol", "short")); res.Decision != transition.Speak("carol") || res.Rule != 1 {
		t.Errorf("Evaluate = %+v", res)
	}
	if res := g.Evaluate(turn("carol", "")); res.Rule != transition.RuleDefault {
		t.Errorf("Evaluate = %+v", res)
	}
	if got := g.Explain(transition.Result{Rule: 0}); got != "transitions[0] all_of(text_longer_than(10), from_speaker(alice)) → last_participant(unless=bob)" {
		t.Errorf("Explain = %q", got)
	}

	// Custom factories get the same strict args.
	_, err := r.Decode([]byte(when(`{"name":"text_longer_than","args":{"n":3,"m":4}}`)))
	wantInvalid(t, err, "transitions[0].when (text_longer_than)", `unknown arg "m"`)
	_, err = r.Decode([]byte(when(`{"name":"text_longer_than"}`)))
	wantInvalid(t, err, "transitions[0].when (text_longer_than)", `missing arg "n"`)
	_, err = r.Decode([]byte(when(`{"name":"text_longer_than","args":{"n":-1}}`)))
	wantInvalid(t, err, "transitions[0].when (text_longer_than)", "n must not be negative")
}

func TestRegisterTwice(t *testing.T) {
	r := customRegistry(t)
	cond := func(*transition.Args) (transition.Condition, error) { return transition.Always{}, nil }
	target := func(*transition.Args) (transition.Target, error) { return transition.StayTarget{}, nil }
	for _, name := range []string{"text_longer_than", "always", "from_speaker", "all_of"} {
		if err := r.RegisterCondition(name, cond); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("RegisterCondition(%q) again = %v", name, err)
		}
	}
	for _, name := range []string{"last_participant", "agent", "terminate"} {
		if err := r.RegisterTarget(name, target); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("RegisterTarget(%q) again = %v", name, err)
		}
	}
	if r.RegisterCondition("", cond) == nil || r.RegisterCondition("x", nil) == nil ||
		r.RegisterTarget("", target) == nil || r.RegisterTarget("x", nil) == nil {
		t.Error("an empty name or a nil factory was registered")
	}
	// A condition name and a target name live apart.
	if err := r.RegisterCondition("stay", cond); err != nil {
		t.Errorf("a condition named like a target: %v", err)
	}
}

func TestRegistriesIndependent(t *testing.T) {
	custom, plain := customRegistry(t), transition.NewRegistry()
	if _, err := plain.Decode([]byte(customGraph)); err == nil {
		t.Fatal("a plain registry decoded a custom graph")
	} else {
		wantInvalid(t, err, "transitions[0].when.args.conditions[0]:", `unknown condition "text_longer_than"`)
	}
	if slicesContain(plain.ConditionNames(), "text_longer_than") || slicesContain(plain.TargetNames(), "last_participant") {
		t.Error("registering on one registry changed another")
	}
	if !slicesContain(custom.ConditionNames(), "text_longer_than") || !slicesContain(custom.TargetNames(), "last_participant") {
		t.Error("custom names are not listed")
	}
	// Another registry gets its own version of a name.
	other := transition.NewRegistry()
	if err := other.RegisterCondition("text_longer_than", func(a *transition.Args) (transition.Condition, error) {
		return transition.Always{}, fmt.Errorf("this registry refuses it")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decode([]byte(customGraph)); err == nil {
		t.Error("the other registry's factory was not used")
	}
	if _, err := custom.Decode([]byte(customGraph)); err != nil {
		t.Errorf("the first registry changed: %v", err)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Whatever a custom factory returns, the error names the node and wraps
// ErrInvalid.
func TestCustomFactoryErrors(t *testing.T) {
	errPlain := errors.New("plain failure")
	tests := []struct {
		name  string
		f     transition.ConditionFactory
		frags []string
	}{
		{"plain error", func(*transition.Args) (transition.Condition, error) { return nil, errPlain },
			[]string{"transitions[0].when (c): plain failure"}},
		{"Args.Errorf", func(a *transition.Args) (transition.Condition, error) { return nil, a.Errorf("bad %s", "thing") },
			[]string{"transitions[0].when (c): bad thing"}},
		{"prefixed with the path, without ErrInvalid", func(a *transition.Args) (transition.Condition, error) {
			return nil, fmt.Errorf("%s: my own words", a.Path())
		}, []string{"transitions[0].when: my own words"}},
		{"wrapping ErrInvalid, without the path", func(*transition.Args) (transition.Condition, error) {
			return nil, fmt.Errorf("nope: %w", transition.ErrInvalid)
		}, []string{"transitions[0].when (c): nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := transition.NewRegistry()
			if err := r.RegisterCondition("c", tt.f); err != nil {
				t.Fatal(err)
			}
			_, err := r.Decode([]byte(when(`{"name":"c"}`)))
			wantInvalid(t, err, tt.frags...)
			if tt.name == "plain error" && !strings.Contains(err.Error(), errPlain.Error()) {
				t.Error("the factory's message was lost")
			}
		})
	}
}

// validated is a custom condition that checks itself at open.
type validated struct{ Min int }

func (validated) Name() string                 { return "needs_participants" }
func (v validated) Args() map[string]any       { return map[string]any{"min": v.Min} }
func (validated) Holds(*transition.Input) bool { return true }
func (v validated) ValidateNode(ps []string) error {
	if len(ps) < v.Min {
		return fmt.Errorf("needs %d participants, has %d", v.Min, len(ps))
	}
	return nil
}

func TestNodeValidator(t *testing.T) {
	g := &transition.Graph{InitialSpeaker: "alice", Transitions: []transition.Transition{
		{When: transition.Not{Condition: validated{Min: 4}}, Then: to("bob")},
	}}
	wantInvalid(t, g.Validate(abc), "transitions[0].when.args.condition (needs_participants): needs 4 participants, has 3")
	if err := g.Validate([]string{"alice", "bob", "carol", "dan"}); err != nil {
		t.Error(err)
	}
}
