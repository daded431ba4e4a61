package transition_test

import (
	"reflect"
	"sync"
	"testing"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func to(agent string) transition.Target { return transition.AgentTarget{Agent: agent} }

func from(agent string) transition.Condition { return transition.FromSpeaker{Agent: agent} }

var never = transition.Not{Condition: transition.Always{}}

func TestEvaluate(t *testing.T) {
	always := transition.Always{}
	tests := []struct {
		name       string
		g          *transition.Graph
		in         *transition.Input
		want       transition.Decision
		rule       int
		unresolved []int
	}{
		{
			name: "first that holds",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: from("alice"), Then: to("bob")}, {When: from("bob"), Then: to("carol")}}},
			in:   turn("bob", ""), want: transition.Speak("carol"), rule: 1,
		},
		{
			name: "priority 0 before 1, whatever the list order",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: always, Then: to("carol"), Priority: 1}, {When: always, Then: to("bob"), Priority: 0}}},
			in:   turn("alice", ""), want: transition.Speak("bob"), rule: 1,
		},
		{
			name: "ties keep list order",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: always, Then: to("bob"), Priority: 5}, {When: always, Then: to("carol"), Priority: 5}}},
			in:   turn("alice", ""), want: transition.Speak("bob"), rule: 0,
		},
		{
			name: "negative priorities first",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: always, Then: to("bob")}, {When: always, Then: to("carol"), Priority: -1}}},
			in:   turn("alice", ""), want: transition.Speak("carol"), rule: 1,
		},
		{
			// Order [1 3 2 0]: 1 does not hold, 3 does.
			name: "unsorted priorities",
			g: &transition.Graph{Transitions: []transition.Transition{
				{When: always, Then: to("alice"), Priority: 2},
				{When: from("zed"), Then: to("bob"), Priority: 0},
				{When: always, Then: to("bob"), Priority: 1},
				{When: always, Then: to("carol"), Priority: 0},
			}},
			in: turn("alice", ""), want: transition.Speak("carol"), rule: 3,
		},
		{
			name: "none holds: the default target",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: from("zed"), Then: to("bob")}}, DefaultTarget: transition.TerminateTarget{Reason: session.ReasonSequenceComplete}},
			in:   turn("alice", ""), want: transition.End(session.ReasonSequenceComplete), rule: transition.RuleDefault,
		},
		{
			name: "default target that is an agent",
			g:    &transition.Graph{DefaultTarget: to("carol")},
			in:   turn("alice", ""), want: transition.Speak("carol"), rule: transition.RuleDefault,
		},
		{
			name: "no default target: terminate after_work",
			g:    &transition.Graph{Transitions: []transition.Transition{{When: never, Then: to("bob")}}},
			in:   turn("alice", ""), want: transition.End(session.ReasonAfterWork), rule: transition.RuleDefault,
		},
		{
			name: "empty graph",
			g:    &transition.Graph{},
			in:   turn("alice", ""), want: transition.End(session.ReasonAfterWork), rule: transition.RuleDefault,
		},
		{
			name: "default target that does not resolve: after_work",
			g:    &transition.Graph{DefaultTarget: transition.MentionedTarget{}},
			in:   turn("alice", "no mention"), want: transition.End(session.ReasonAfterWork), rule: transition.RuleDefault,
		},
		{
			name: "a target that does not resolve: evaluation goes on",
			g: &transition.Graph{Transitions: []transition.Transition{
				{When: always, Then: transition.MentionedTarget{}},
				{When: never, Then: transition.SupervisorTarget{}},
				{When: always, Then: to("carol")},
			}},
			in: turn("alice", "no mention"), want: transition.Speak("carol"), rule: 2, unresolved: []int{0},
		},
		{
			name: "mentioned resolves when there is a mention",
			g: &transition.Graph{Transitions: []transition.Transition{
				{When: always, Then: transition.MentionedTarget{}},
				{When: always, Then: to("carol")},
			}},
			in: turn("alice", "@bob, yours"), want: transition.Speak("bob"), rule: 0,
		},
		{
			name: "unresolved in evaluation order, then the default",
			g: &transition.Graph{Transitions: []transition.Transition{
				{When: always, Then: transition.MentionedTarget{}, Priority: 2},
				{When: always, Then: transition.RevertToInitiatorTarget{}, Priority: 1},
			}, DefaultTarget: to("bob")},
			in:   func() *transition.Input { in := turn("alice", ""); in.Initiator = ""; return in }(),
			want: transition.Speak("bob"), rule: transition.RuleDefault, unresolved: []int{1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.g.Evaluate(tt.in)
			want := transition.Result{Decision: tt.want, Rule: tt.rule, Unresolved: tt.unresolved}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("Evaluate = %+v, want %+v", res, want)
			}
		})
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		prios []int
		want  []int
	}{
		{nil, []int{}},
		{[]int{0}, []int{0}},
		{[]int{0, 0, 1}, []int{0, 1, 2}},
		{[]int{2, 0, 1, 0}, []int{1, 3, 2, 0}},
		{[]int{1, 1, 0, 0}, []int{2, 3, 0, 1}},
		{[]int{0, -5, 3, -5}, []int{1, 3, 0, 2}},
	}
	for _, tt := range tests {
		g := &transition.Graph{}
		for _, p := range tt.prios {
			g.Transitions = append(g.Transitions, transition.Transition{When: transition.Always{}, Then: to("bob"), Priority: p})
		}
		if got := g.Order(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("priorities %v: Order() = %v, want %v", tt.prios, got, tt.want)
		}
	}
}

func TestExplain(t *testing.T) {
	g := &transition.Graph{
		Transitions: []transition.Transition{
			{When: from("alice"), Then: to("bob")},
			{When: transition.AllOf{Conditions: []transition.Condition{from("bob"), transition.Not{Condition: transition.ContextEquals{Key: "done", Value: raw(`true`)}}}}, Then: transition.StayTarget{}},
			{When: transition.ContextEquals{Key: "route", Value: raw(`"security"`)}, Then: transition.TerminateTarget{Reason: "escalated"}},
		},
		DefaultTarget: transition.TerminateTarget{Reason: session.ReasonSequenceComplete},
	}
	tests := []struct {
		rule int
		want string
	}{
		{0, "transitions[0] from_speaker(alice) → agent(bob)"},
		{1, "transitions[1] all_of(from_speaker(bob), not(context_equals(key=done, value=true))) → stay()"},
		{2, `transitions[2] context_equals(key=route, value="security") → terminate(escalated)`},
		{transition.RuleDefault, "default_target terminate(sequence_complete)"},
		{3, "default_target terminate(sequence_complete)"},  // out of range
		{-7, "default_target terminate(sequence_complete)"}, // out of range
	}
	for _, tt := range tests {
		if got := g.Explain(transition.Result{Rule: tt.rule}); got != tt.want {
			t.Errorf("Explain(rule %d) = %q, want %q", tt.rule, got, tt.want)
		}
	}
	none := &transition.Graph{}
	if got := none.Explain(none.Evaluate(turn("alice", ""))); got != "default_target (none: terminate after_work)" {
		t.Errorf("Explain without a default = %q", got)
	}
	// Explain of an evaluation names the rule that decided.
	if got := g.Explain(g.Evaluate(turn("alice", ""))); got != "transitions[0] from_speaker(alice) → agent(bob)" {
		t.Errorf("Explain(Evaluate) = %q", got)
	}
}

// A Graph is immutable and safe to share: evaluate it from many goroutines
// (run with -race).
func TestEvaluateConcurrent(t *testing.T) {
	g := &transition.Graph{Transitions: []transition.Transition{
		{When: transition.Always{}, Then: transition.MentionedTarget{}, Priority: 1},
		{When: from("alice"), Then: to("bob"), Priority: 0},
		{When: transition.Always{}, Then: transition.RoundRobinTarget{}, Priority: 2},
	}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				speaker := abc[(i+j)%3]
				res := g.Evaluate(turn(speaker, ""))
				if speaker == "alice" && res.Decision.Next != "bob" || speaker != "alice" && len(res.Unresolved) != 1 {
					t.Errorf("speaker %s: %+v", speaker, res)
					return
				}
			}
		}()
	}
	wg.Wait()
}
