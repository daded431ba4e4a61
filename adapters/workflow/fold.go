package workflow

import (
	"slices"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// Fold implements adapters.State, in the order of the package doc.
func (s *State) Fold(env *hubpb.Envelope) adapters.Outcome {
	if s.FoldOther(env) {
		return adapters.Outcome{}
	}
	s.CountTurn(env)
	routing := env.GetPacket().GetRouting()
	d, rule := s.decide(env, routing)
	handoff := routing.GetKind() == session.RouteHandoff || routing.GetKind() == session.RouteEscalate ||
		routing.GetKind() == session.RoutePassCaller
	if handoff {
		s.Handoffs++
	}
	switch {
	case d.Terminate:
		return s.close(d.Reason, rule)
	case !slices.Contains(s.Participants, d.Next):
		// Only a custom target can get here; validation keeps built-ins
		// inside the participants.
		return s.close("invalid_target", rule+" (next speaker "+d.Next+" is not a participant)")
	case handoff && s.MaxHandoffs > 0 && s.Handoffs > s.MaxHandoffs:
		return s.close(session.ReasonMaxHandoffs, rule+"; max_handoffs exceeded")
	case s.maxTurns() > 0 && s.Turn >= s.maxTurns():
		return s.close(session.ReasonMaxTurns, rule+"; max_turns reached")
	}
	if handoff {
		s.Active = d.Next
	}
	s.Expect = d.Next
	s.LastRule = rule
	return adapters.Outcome{Rule: rule}
}

func (s *State) close(reason, rule string) adapters.Outcome {
	s.Expect, s.LastRule = "", rule
	return s.Close(reason, rule)
}

// decide returns where the turn leads and the rule that said so.
func (s *State) decide(env *hubpb.Envelope, routing *hubpb.Routing) (transition.Decision, string) {
	switch routing.GetKind() {
	case session.RouteFinish:
		r := adapters.FinishReason(env)
		return transition.End(r), "finish(" + r + ")"
	case session.RouteHandoff:
		if t := routing.GetTarget(); t != "" {
			return transition.Speak(t), "handoff → " + t
		}
	case session.RouteEscalate:
		return transition.Speak(s.Supervisor), "escalate → " + s.Supervisor
	case session.RoutePassCaller:
		return transition.Speak(routing.GetTarget()), "pass_caller → " + routing.GetTarget()
	}
	in := s.input(env)
	res := s.graph.Evaluate(&in)
	return res.Decision, s.explain(res)
}

// explain returns the graph's explanation of a result, computed once per
// rule and session.
func (s *State) explain(res transition.Result) string {
	i := res.Rule + 1 // the default target is index 0
	if s.rules == nil {
		s.rules = make([]string, len(s.graph.Transitions)+1)
	}
	if s.rules[i] == "" {
		s.rules[i] = s.graph.Explain(res)
	}
	return s.rules[i]
}

// Input returns what the graph sees for env after its bookkeeping.
func (s *State) input(env *hubpb.Envelope) transition.Input {
	text := session.TextOf(env)
	return transition.Input{
		Participants:   s.Participants,
		Initiator:      s.Creator,
		Supervisor:     s.Supervisor,
		InitialSpeaker: s.graph.InitialSpeaker,
		Speaker:        env.GetFrom(),
		Event:          env.GetType(),
		Text:           text,
		Tool:           session.ToolOf(env),
		Mention:        transition.Mention(text, s.Participants),
		Turn:           s.Turn,
		Active:         s.Active,
		Context:        s.Context,
	}
}

// maxTurns is the session's turn cap: its max_turns knob, else its
// graph's (0: none).
func (s *State) maxTurns() int {
	if s.MaxTurns > 0 {
		return s.MaxTurns
	}
	return s.graph.MaxTurns
}
