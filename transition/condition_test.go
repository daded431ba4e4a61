package transition_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func TestConditionHolds(t *testing.T) {
	ctx := func(kv ...string) *transition.Input { return withContext(turn("bob", ""), kv...) }
	mention := func(m string) *transition.Input { in := turn("bob", ""); in.Mention = m; return in }
	at := func(n int) *transition.Input { in := turn("bob", ""); in.Turn = n; return in }
	textPacket := func(tool string) *transition.Input { in := turn("bob", ""); in.Tool = tool; return in }
	yes, no := transition.Always{}, transition.Not{Condition: transition.Always{}}
	tests := []struct {
		name string
		c    transition.Condition
		in   *transition.Input
		want bool
	}{
		{"always", transition.Always{}, turn("bob", ""), true},

		{"from_speaker, the speaker", transition.FromSpeaker{Agent: "bob"}, turn("bob", ""), true},
		{"from_speaker, another", transition.FromSpeaker{Agent: "alice"}, turn("bob", ""), false},
		{"from_speaker, case matters", transition.FromSpeaker{Agent: "Bob"}, turn("bob", ""), false},

		{"tool_called, that tool", transition.ToolCalled{Tool: "transfer_to_carol"}, packet("bob", "transfer_to_carol"), true},
		{"tool_called, another tool", transition.ToolCalled{Tool: "transfer_to_carol"}, packet("bob", "transfer_to_alice"), false},
		{"tool_called, no tool", transition.ToolCalled{Tool: "transfer_to_carol"}, packet("bob", ""), false},
		{"tool_called, empty name never", transition.ToolCalled{Tool: ""}, packet("bob", ""), false},
		{"tool_called, packets only", transition.ToolCalled{Tool: "t"}, textPacket("t"), false},

		{"context_equals, equal", transition.ContextEquals{Key: "route", Value: raw(`"billing"`)}, ctx("route", `"billing"`), true},
		{"context_equals, other value", transition.ContextEquals{Key: "route", Value: raw(`"billing"`)}, ctx("route", `"tech"`), false},
		{"context_equals, number", transition.ContextEquals{Key: "n", Value: raw(`1`)}, ctx("n", `1`), true},
		{"context_equals, number vs string", transition.ContextEquals{Key: "n", Value: raw(`1`)}, ctx("n", `"1"`), false},
		{"context_equals, object", transition.ContextEquals{Key: "o", Value: raw(`{"a":1,"b":[true]}`)}, ctx("o", `{"a":1,"b":[true]}`), true},
		{"context_equals, missing key equals null", transition.ContextEquals{Key: "x", Value: session.Null()}, ctx(), true},
		{"context_equals, missing key, nil context", transition.ContextEquals{Key: "x", Value: session.Null()}, turn("bob", ""), true},
		{"context_equals, explicit null", transition.ContextEquals{Key: "x", Value: session.Null()}, ctx("x", `null`), true},
		{"context_equals, missing key is not false", transition.ContextEquals{Key: "x", Value: raw(`false`)}, ctx(), false},
		{"context_equals, present is not null", transition.ContextEquals{Key: "x", Value: session.Null()}, ctx("x", `0`), false},

		{"context_in, first", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`"b"`)}}, ctx("r", `"a"`), true},
		{"context_in, second", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`"b"`)}}, ctx("r", `"b"`), true},
		{"context_in, none", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`"b"`)}}, ctx("r", `"c"`), false},
		{"context_in, missing key", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`)}}, ctx(), false},
		{"context_in, missing key with null", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`"a"`), raw(`null`)}}, ctx(), true},
		{"context_in, mixed types", transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`1`), raw(`true`)}}, ctx("r", `true`), true},

		{"mentions, mentioned", transition.Mentions{Agent: "carol"}, mention("carol"), true},
		{"mentions, case-insensitive", transition.Mentions{Agent: "CAROL"}, mention("carol"), true},
		{"mentions, another", transition.Mentions{Agent: "alice"}, mention("carol"), false},
		{"mentions, nobody", transition.Mentions{Agent: "carol"}, mention(""), false},
		{"mentions, empty agent, nobody", transition.Mentions{Agent: ""}, mention(""), false},
		{"mentions, from the text", transition.Mentions{Agent: "carol"}, turn("bob", "  @Carol: over to you"), true},

		{"turn_count_at_least, below", transition.TurnCountAtLeast{N: 3}, at(2), false},
		{"turn_count_at_least, at", transition.TurnCountAtLeast{N: 3}, at(3), true},
		{"turn_count_at_least, above", transition.TurnCountAtLeast{N: 3}, at(4), true},

		{"event_type, text", transition.EventTypeIs{Type: session.EventText}, turn("bob", ""), true},
		{"event_type, not packet", transition.EventTypeIs{Type: session.EventPacket}, turn("bob", ""), false},
		{"event_type, packet", transition.EventTypeIs{Type: session.EventPacket}, packet("bob", ""), true},

		{"all_of, all", transition.AllOf{Conditions: []transition.Condition{yes, transition.FromSpeaker{Agent: "bob"}}}, turn("bob", ""), true},
		{"all_of, one fails", transition.AllOf{Conditions: []transition.Condition{yes, no}}, turn("bob", ""), false},
		{"all_of, empty holds", transition.AllOf{}, turn("bob", ""), true},
		{"any_of, one", transition.AnyOf{Conditions: []transition.Condition{no, yes}}, turn("bob", ""), true},
		{"any_of, none", transition.AnyOf{Conditions: []transition.Condition{no, no}}, turn("bob", ""), false},
		{"any_of, empty never", transition.AnyOf{}, turn("bob", ""), false},
		{"not, true", transition.Not{Condition: no}, turn("bob", ""), true},
		{"not, false", no, turn("bob", ""), false},
		{"nested", transition.AllOf{Conditions: []transition.Condition{
			transition.AnyOf{Conditions: []transition.Condition{transition.FromSpeaker{Agent: "alice"}, transition.FromSpeaker{Agent: "bob"}}},
			transition.Not{Condition: transition.ContextEquals{Key: "done", Value: raw(`true`)}},
		}}, withContext(turn("bob", ""), "done", `false`), true},
	}
	for _, tt := range tests {
		if got := tt.c.Holds(tt.in); got != tt.want {
			t.Errorf("%s: %s.Holds = %v, want %v", tt.name, transition.Describe(tt.c), got, tt.want)
		}
	}
}

func TestContextCompare(t *testing.T) {
	type row struct {
		op    string
		value float64
		want  bool
	}
	// x = 5
	rows := []row{
		{"lt", 6, true}, {"lt", 5, false}, {"lt", 4, false},
		{"le", 6, true}, {"le", 5, true}, {"le", 4, false},
		{"gt", 4, true}, {"gt", 5, false}, {"gt", 6, false},
		{"ge", 4, true}, {"ge", 5, true}, {"ge", 6, false},
		{"eq", 5, true}, {"eq", 5.0001, false},
		{"ne", 5, false}, {"ne", 4, true},
		{"approx", 5, false}, {"", 5, false}, // unknown op: never
	}
	for _, r := range rows {
		c := transition.ContextCompare{Key: "x", Op: r.op, Value: r.value}
		if got := c.Holds(withContext(turn("bob", ""), "x", `5`)); got != r.want {
			t.Errorf("5 %s %v = %v, want %v", r.op, r.value, got, r.want)
		}
	}
	// Other numeric forms of the variable.
	for _, x := range []struct {
		raw  string
		op   string
		v    float64
		want bool
	}{
		{`2.5`, "gt", 2, true},
		{`-3`, "lt", 0, true},
		{`1e+20`, "gt", 1e19, true},
		{`12345678901234567890123`, "gt", 1e22, true},
		{`0`, "eq", 0, true},
	} {
		c := transition.ContextCompare{Key: "x", Op: x.op, Value: x.v}
		if got := c.Holds(withContext(turn("bob", ""), "x", x.raw)); got != x.want {
			t.Errorf("%s %s %v = %v, want %v", x.raw, x.op, x.v, got, x.want)
		}
	}
	// A missing or non-numeric variable never holds, whatever the operator.
	for _, ctx := range [][]string{nil, {"x", `"5"`}, {"x", `true`}, {"x", `null`}, {"x", `[5]`}, {"x", `{"v":5}`}, {"y", `5`}} {
		for _, op := range []string{"lt", "le", "gt", "ge", "eq", "ne"} {
			c := transition.ContextCompare{Key: "x", Op: op, Value: 5}
			if c.Holds(withContext(turn("bob", ""), ctx...)) {
				t.Errorf("context %v: x %s 5 holds", ctx, op)
			}
		}
	}
}

func TestMention(t *testing.T) {
	ps := []string{"alice", "bob", "bobby", "Carol", "dr.who"}
	tests := []struct{ text, want string }{
		{"@bob hi", "bob"},
		{"@bob", "bob"},
		{"   @bob hi", "bob"},
		{"\n\t @bob", "bob"},
		{"\u00a0@bob", "bob"}, // any Unicode space
		{"@bob\u00a0hi", "bob"},
		{"@bob\nhi", "bob"},
		{"@bob, can you", "bob"},
		{"@bob. Next", "bob"},
		{"@bob: please", "bob"},
		{"@bob; then", "bob"},
		{"@bob!", "bob"},
		{"@bob?", "bob"},
		{"(@bob) hi", ""},
		{"@bob) hi", "bob"},
		{"@bob's turn", ""},
		{"@bob-x", ""},
		{"@bob_x", ""},
		{"@bob@alice", ""},
		{"@bobby hi", "bobby"}, // a name that extends another: the longest
		{"@bobby, hi", "bobby"},
		{"@bobb hi", ""},
		{"@BOB hi", "bob"}, // case-insensitive, the participant's spelling
		{"@carol", "Carol"},
		{"@CAROL!", "Carol"},
		{"@dr.who? yes", "dr.who"},
		{"@dr hi", ""},
		{"hi @bob", ""}, // not leading
		{"bob hi", ""},  // no '@'
		{"@ bob", ""},
		{"@@bob", ""},
		{"@zed hi", ""}, // not a participant
		{"", ""},
		{"@", ""},
		{"   ", ""},
	}
	for _, tt := range tests {
		if got := transition.Mention(tt.text, ps); got != tt.want {
			t.Errorf("Mention(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	// Participant order does not matter for the longest match.
	if got := transition.Mention("@bobby", []string{"bobby", "bob"}); got != "bobby" {
		t.Errorf("Mention with reversed participants = %q", got)
	}
	if got := transition.Mention("@bob", nil); got != "" {
		t.Errorf("Mention without participants = %q", got)
	}
	if got := transition.Mention("@", []string{""}); got != "" {
		t.Errorf("Mention of an empty participant = %q", got)
	}
}

func TestInputVar(t *testing.T) {
	in := withContext(turn("bob", ""), "a", `1`)
	if string(in.Var("a")) != `1` || string(in.Var("b")) != `null` {
		t.Errorf("Var = %s, %s", in.Var("a"), in.Var("b"))
	}
	var empty transition.Input
	if string(empty.Var("a")) != `null` {
		t.Errorf("Var on a nil context = %s", empty.Var("a"))
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		n interface {
			Name() string
			Args() map[string]any
		}
		want string
	}{
		{transition.Always{}, "always()"},
		{transition.FromSpeaker{Agent: "alice"}, "from_speaker(alice)"},
		{transition.ToolCalled{Tool: "t"}, "tool_called(t)"},
		{transition.ContextEquals{Key: "route", Value: raw(`"security"`)}, `context_equals(key=route, value="security")`},
		{transition.ContextIn{Key: "r", Values: []json.RawMessage{raw(`1`), raw(`"a"`)}}, `context_in(key=r, values=[1, "a"])`},
		{transition.ContextCompare{Key: "n", Op: "ge", Value: 2.5}, "context_compare(key=n, op=ge, value=2.5)"},
		{transition.Mentions{Agent: "bob"}, "mentions(bob)"},
		{transition.TurnCountAtLeast{N: 3}, "turn_count_at_least(3)"},
		{transition.EventTypeIs{Type: session.EventPacket}, "event_type(packet)"},
		{transition.AllOf{Conditions: []transition.Condition{transition.FromSpeaker{Agent: "alice"}, transition.Not{Condition: transition.ContextEquals{Key: "done", Value: raw(`true`)}}}},
			"all_of(from_speaker(alice), not(context_equals(key=done, value=true)))"},
		{transition.AnyOf{Conditions: []transition.Condition{transition.Always{}}}, "any_of(always())"},
		{transition.AgentTarget{Agent: "bob"}, "agent(bob)"},
		{transition.RoundRobinTarget{}, "round_robin()"},
		{transition.StayTarget{}, "stay()"},
		{transition.RevertToInitiatorTarget{}, "revert_to_initiator()"},
		{transition.TerminateTarget{Reason: "done"}, "terminate(done)"},
		{transition.TerminateTarget{}, "terminate(terminated)"},
		{transition.SupervisorTarget{}, "supervisor()"},
		{transition.MentionedTarget{}, "mentioned()"},
		{transition.ActiveAgentTarget{}, "active_agent()"},
		{transition.ActiveAgentTarget{Fallback: "router"}, "active_agent(fallback=router)"},
	}
	for _, tt := range tests {
		if got := transition.Describe(tt.n); got != tt.want {
			t.Errorf("Describe(%#v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// Every built-in condition and target has a distinct registry name that
// the registry knows.
func TestBuiltinNames(t *testing.T) {
	r := transition.NewRegistry()
	conds := []transition.Condition{transition.Always{}, transition.FromSpeaker{}, transition.ToolCalled{}, transition.ContextEquals{},
		transition.AllOf{}, transition.AnyOf{}, transition.Not{}, transition.ContextIn{}, transition.ContextCompare{},
		transition.Mentions{}, transition.TurnCountAtLeast{}, transition.EventTypeIs{}}
	targets := []transition.Target{transition.AgentTarget{}, transition.RoundRobinTarget{}, transition.StayTarget{},
		transition.RevertToInitiatorTarget{}, transition.TerminateTarget{}, transition.SupervisorTarget{},
		transition.MentionedTarget{}, transition.ActiveAgentTarget{}}
	var names []string
	for _, c := range conds {
		names = append(names, c.Name())
	}
	if got := fmt.Sprint(r.ConditionNames()); got != fmt.Sprint(sorted(names)) {
		t.Errorf("ConditionNames() = %s, want %s", got, sorted(names))
	}
	names = nil
	for _, tg := range targets {
		names = append(names, tg.Name())
	}
	if got := fmt.Sprint(r.TargetNames()); got != fmt.Sprint(sorted(names)) {
		t.Errorf("TargetNames() = %s, want %s", got, sorted(names))
	}
}
