package transition_test

import (
	"reflect"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// walk evaluates g turn by turn from its initial speaker, each speaker
// sending what say returns, and returns the speakers and the final decision.
func walk(g *transition.Graph, ps []string, say func(speaker string, turn int) *transition.Input) ([]string, transition.Decision) {
	var spoke []string
	speaker := g.InitialSpeaker
	for n := 1; n <= 20; n++ {
		in := say(speaker, n)
		in.Participants, in.InitialSpeaker, in.Turn, in.Mention = ps, g.InitialSpeaker, n, transition.Mention(in.Text, ps)
		spoke = append(spoke, speaker)
		d := g.Evaluate(in).Decision
		if d.Terminate || g.MaxTurns > 0 && n >= g.MaxTurns {
			return spoke, d
		}
		speaker = d.Next
	}
	return spoke, transition.Decision{}
}

func TestSequence(t *testing.T) {
	g := transition.Sequence("researcher", "writer", "editor")
	want := &transition.Graph{
		Version:        1,
		InitialSpeaker: "researcher",
		Transitions: []transition.Transition{
			{When: from("researcher"), Then: to("writer")},
			{When: from("writer"), Then: to("editor")},
		},
		DefaultTarget: transition.TerminateTarget{Reason: session.ReasonSequenceComplete},
		MaxTurns:      3,
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("Sequence = %#v", g)
	}
	ps := []string{"researcher", "writer", "editor"}
	if err := g.Validate(ps); err != nil {
		t.Fatal(err)
	}
	spoke, end := walk(g, ps, func(s string, _ int) *transition.Input { return turn(s, "") })
	if !reflect.DeepEqual(spoke, ps) || end != transition.End(session.ReasonSequenceComplete) {
		t.Errorf("walk = %v, %+v", spoke, end)
	}
	wantInvalid(t, g.Validate([]string{"researcher", "writer"}), `transitions[1].then (agent): agent "editor"`)

	one := transition.Sequence("solo")
	if one.InitialSpeaker != "solo" || len(one.Transitions) != 0 || one.MaxTurns != 1 {
		t.Errorf("Sequence(solo) = %#v", one)
	}
	if err := one.Validate([]string{"solo"}); err != nil {
		t.Error(err)
	}
	none := transition.Sequence()
	if none.InitialSpeaker != "" || none.MaxTurns != 0 {
		t.Errorf("Sequence() = %#v", none)
	}
	wantInvalid(t, none.Validate(abc), "initial_speaker: missing")
}

func TestRoundRobinFactory(t *testing.T) {
	g := transition.RoundRobin(abc, 5)
	want := &transition.Graph{Version: 1, InitialSpeaker: "alice", MaxTurns: 5,
		Transitions: []transition.Transition{{When: transition.Always{}, Then: transition.RoundRobinTarget{}}}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("RoundRobin = %#v", g)
	}
	if err := g.Validate(abc); err != nil {
		t.Fatal(err)
	}
	spoke, _ := walk(g, abc, func(s string, _ int) *transition.Input { return turn(s, "") })
	if want := []string{"alice", "bob", "carol", "alice", "bob"}; !reflect.DeepEqual(spoke, want) {
		t.Errorf("walk = %v, want %v", spoke, want)
	}
	if g := transition.RoundRobin(nil, 0); g.InitialSpeaker != "" || g.MaxTurns != 0 {
		t.Errorf("RoundRobin(nil, 0) = %#v", g)
	}
}

func TestSupervisorWithoutUser(t *testing.T) {
	g := transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}})
	want := &transition.Graph{
		Version:        1,
		InitialSpeaker: "router",
		Transitions: []transition.Transition{
			{When: transition.ToolCalled{Tool: "transfer_to_billing"}, Then: to("billing")},
			{When: transition.ToolCalled{Tool: "transfer_to_tech"}, Then: to("tech")},
			{When: transition.ToolCalled{Tool: "request_help"}, Then: to("router")},
			{When: from("router"), Then: transition.TerminateTarget{Reason: session.ReasonFinished}},
		},
		DefaultTarget: to("router"),
		Supervisor:    "router",
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("Supervisor = %#v", g)
	}
	ps := []string{"router", "billing", "tech"}
	if err := g.Validate(ps); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		in   *transition.Input
		want transition.Decision
	}{
		{packet("router", "transfer_to_billing"), transition.Speak("billing")},
		{turn("billing", "refund issued"), transition.Speak("router")},
		{packet("billing", "request_help"), transition.Speak("router")},
		{packet("tech", "transfer_to_billing"), transition.Speak("billing")},
		{turn("router", "all done"), transition.End(session.ReasonFinished)},
	}
	for _, s := range steps {
		if got := g.Evaluate(s.in).Decision; got != s.want {
			t.Errorf("%s (%s): %+v, want %+v", s.in.Speaker, s.in.Tool, got, s.want)
		}
	}
}

func TestSupervisorWithUser(t *testing.T) {
	g := transition.Supervisor(transition.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}, User: "user",
		MaxTurns: 20, TransferPrefix: "handoff_", HelpTool: "help"})
	mention := func(a string) transition.Condition {
		return transition.AllOf{Conditions: []transition.Condition{from("user"), transition.Mentions{Agent: a}}}
	}
	want := &transition.Graph{
		Version:        1,
		InitialSpeaker: "user",
		Transitions: []transition.Transition{
			{When: transition.ToolCalled{Tool: "handoff_billing"}, Then: to("billing")},
			{When: transition.ToolCalled{Tool: "handoff_tech"}, Then: to("tech")},
			{When: transition.ToolCalled{Tool: "help"}, Then: to("router")},
			{When: mention("router"), Then: to("router")},
			{When: mention("billing"), Then: to("billing")},
			{When: mention("tech"), Then: to("tech")},
			{When: from("user"), Then: transition.ActiveAgentTarget{Fallback: "router"}},
		},
		DefaultTarget: to("user"),
		MaxTurns:      20,
		Supervisor:    "router",
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("Supervisor = %#v", g)
	}
	ps := []string{"user", "router", "billing", "tech"}
	if err := g.Validate(ps); err != nil {
		t.Fatal(err)
	}
	wantInvalid(t, g.Validate([]string{"router", "billing", "tech"}), `initial_speaker: "user"`)

	in := func(speaker, text, active string) *transition.Input {
		x := &transition.Input{Participants: ps, InitialSpeaker: "user", Speaker: speaker, Event: session.EventText,
			Text: text, Mention: transition.Mention(text, ps), Active: active}
		return x
	}
	steps := []struct {
		name string
		in   *transition.Input
		want transition.Decision
	}{
		{"the user's first message goes to the router", in("user", "my bill is wrong", ""), transition.Speak("router")},
		{"a mention picks the specialist", in("user", "@tech the app crashes", ""), transition.Speak("tech")},
		{"a mention beats the active agent", in("user", "@Billing hello", "tech"), transition.Speak("billing")},
		{"a mention of a non-participant is ignored", in("user", "@sales hi", "tech"), transition.Speak("tech")},
		{"otherwise the active agent (sticky)", in("user", "thanks, one more thing", "billing"), transition.Speak("billing")},
		{"an agent's plain reply goes back to the user", in("billing", "refunded", "billing"), transition.Speak("user")},
		{"the router's plain reply too", in("router", "how can I help?", ""), transition.Speak("user")},
		{"an agent's mention is not routing", in("tech", "@billing over to you", "tech"), transition.Speak("user")},
	}
	for _, s := range steps {
		if got := g.Evaluate(s.in).Decision; got != s.want {
			t.Errorf("%s: %+v, want %+v", s.name, got, s.want)
		}
	}
	handoff := in("router", "", "")
	handoff.Event, handoff.Tool = session.EventPacket, "handoff_billing"
	if got := g.Evaluate(handoff).Decision; got != transition.Speak("billing") {
		t.Errorf("handoff: %+v", got)
	}
	help := in("tech", "", "tech")
	help.Event, help.Tool = session.EventPacket, "help"
	if got := g.Evaluate(help).Decision; got != transition.Speak("router") {
		t.Errorf("help: %+v", got)
	}
}
