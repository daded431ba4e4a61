package transition_test

import (
	"testing"

	"github.com/hubd/hubd/transition"
)

func TestTargetResolve(t *testing.T) {
	with := func(f func(in *transition.Input)) *transition.Input {
		in := turn("bob", "")
		f(in)
		return in
	}
	speak, end := transition.Speak, transition.End
	none := transition.Decision{}
	tests := []struct {
		name string
		t    transition.Target
		in   *transition.Input
		want transition.Decision
		ok   bool
	}{
		{"agent", transition.AgentTarget{Agent: "carol"}, turn("bob", ""), speak("carol"), true},
		{"agent, the speaker", transition.AgentTarget{Agent: "bob"}, turn("bob", ""), speak("bob"), true},

		{"round_robin, next", transition.RoundRobinTarget{}, turn("alice", ""), speak("bob"), true},
		{"round_robin, middle", transition.RoundRobinTarget{}, turn("bob", ""), speak("carol"), true},
		{"round_robin, wraps", transition.RoundRobinTarget{}, turn("carol", ""), speak("alice"), true},
		{"round_robin, speaker not a participant: the first", transition.RoundRobinTarget{}, turn("zed", ""), speak("alice"), true},
		{"round_robin, the hub speaking: the first", transition.RoundRobinTarget{}, turn("", ""), speak("alice"), true},
		{"round_robin, alone", transition.RoundRobinTarget{}, with(func(in *transition.Input) { in.Participants = []string{"bob"} }), speak("bob"), true},
		{"round_robin, nobody", transition.RoundRobinTarget{}, with(func(in *transition.Input) { in.Participants = nil }), none, false},

		{"stay", transition.StayTarget{}, turn("carol", ""), speak("carol"), true},

		{"revert_to_initiator", transition.RevertToInitiatorTarget{}, turn("carol", ""), speak("alice"), true},
		{"revert_to_initiator, none", transition.RevertToInitiatorTarget{}, with(func(in *transition.Input) { in.Initiator = "" }), speak(""), false},

		{"terminate", transition.TerminateTarget{Reason: "done"}, turn("bob", ""), end("done"), true},
		{"terminate, default reason", transition.TerminateTarget{}, turn("bob", ""), end(transition.DefaultTerminateReason), true},

		{"supervisor", transition.SupervisorTarget{}, with(func(in *transition.Input) { in.Supervisor = "carol" }), speak("carol"), true},
		{"supervisor, none", transition.SupervisorTarget{}, with(func(in *transition.Input) { in.Supervisor = "" }), speak(""), false},

		{"mentioned", transition.MentionedTarget{}, turn("bob", "@carol look"), speak("carol"), true},
		{"mentioned, none", transition.MentionedTarget{}, turn("bob", "look"), speak(""), false},
		{"mentioned, non-participant", transition.MentionedTarget{}, turn("bob", "@zed look"), speak(""), false},

		{"active_agent, the active one", transition.ActiveAgentTarget{}, with(func(in *transition.Input) { in.Active = "carol" }), speak("carol"), true},
		{"active_agent, before a handoff: the initial speaker", transition.ActiveAgentTarget{}, turn("bob", ""), speak("alice"), true},
		{"active_agent, the speaker itself, no fallback", transition.ActiveAgentTarget{}, with(func(in *transition.Input) { in.Active = "bob" }), speak("bob"), true},
		{"active_agent, the speaker itself, fallback", transition.ActiveAgentTarget{Fallback: "carol"}, with(func(in *transition.Input) { in.Active = "bob" }), speak("carol"), true},
		{"active_agent, another, fallback unused", transition.ActiveAgentTarget{Fallback: "carol"}, with(func(in *transition.Input) { in.Active = "alice" }), speak("alice"), true},
		{"active_agent, initial speaker is the speaker, fallback", transition.ActiveAgentTarget{Fallback: "carol"}, turn("alice", ""), speak("carol"), true},
		{"active_agent, initial speaker is the speaker, no fallback", transition.ActiveAgentTarget{}, turn("alice", ""), speak("alice"), true},
		{"active_agent, nobody", transition.ActiveAgentTarget{}, with(func(in *transition.Input) { in.InitialSpeaker = "" }), speak(""), false},
	}
	for _, tt := range tests {
		got, ok := tt.t.Resolve(tt.in)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s: %s.Resolve = %+v, %v; want %+v, %v", tt.name, transition.Describe(tt.t), got, ok, tt.want, tt.ok)
		}
	}
}

func TestDecisionHelpers(t *testing.T) {
	if d := transition.Speak("bob"); d != (transition.Decision{Next: "bob"}) {
		t.Errorf("Speak = %+v", d)
	}
	if d := transition.End("done"); d != (transition.Decision{Terminate: true, Reason: "done"}) {
		t.Errorf("End = %+v", d)
	}
}
