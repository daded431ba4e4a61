package transition

import "slices"

// AgentTarget hands the turn to a named agent.
type AgentTarget struct{ Agent string }

// RoundRobinTarget hands the turn to the participant after the speaker in
// session order, wrapping around.
type RoundRobinTarget struct{}

// StayTarget lets the speaker continue.
type StayTarget struct{}

// RevertToInitiatorTarget hands the turn back to whoever opened the session.
type RevertToInitiatorTarget struct{}

// TerminateTarget ends the session with Reason.
type TerminateTarget struct{ Reason string }

// SupervisorTarget hands the turn to the session's supervisor (escalation).
type SupervisorTarget struct{}

// MentionedTarget hands the turn to the participant named by a leading
// "@name" in the turn's text; without such a mention it does not resolve and
// evaluation goes on.
type MentionedTarget struct{}

// ActiveAgentTarget hands the turn to the active agent: the participant most
// recently made speaker by a handoff (or an escalation), and before any
// handoff the graph's initial speaker. When the active agent is the speaker
// itself and Fallback is set, the turn goes to Fallback instead (a person
// speaking before any handoff reaches the router, not themselves).
type ActiveAgentTarget struct{ Fallback string }

// DefaultTerminateReason is the reason of a terminate target without one.
const DefaultTerminateReason = "terminated"

// Resolve implements Target.
func (t AgentTarget) Resolve(*Input) (Decision, bool) { return Speak(t.Agent), true }

// Resolve implements Target.
func (RoundRobinTarget) Resolve(in *Input) (Decision, bool) {
	if len(in.Participants) == 0 {
		return Decision{}, false
	}
	i := slices.Index(in.Participants, in.Speaker)
	return Speak(in.Participants[(i+1)%len(in.Participants)]), true
}

// Resolve implements Target.
func (StayTarget) Resolve(in *Input) (Decision, bool) { return Speak(in.Speaker), true }

// Resolve implements Target.
func (RevertToInitiatorTarget) Resolve(in *Input) (Decision, bool) {
	return Speak(in.Initiator), in.Initiator != ""
}

// Resolve implements Target.
func (t TerminateTarget) Resolve(*Input) (Decision, bool) {
	if t.Reason == "" {
		return End(DefaultTerminateReason), true
	}
	return End(t.Reason), true
}

// Resolve implements Target.
func (SupervisorTarget) Resolve(in *Input) (Decision, bool) {
	return Speak(in.Supervisor), in.Supervisor != ""
}

// Resolve implements Target.
func (MentionedTarget) Resolve(in *Input) (Decision, bool) {
	return Speak(in.Mention), in.Mention != ""
}

// Resolve implements Target.
func (t ActiveAgentTarget) Resolve(in *Input) (Decision, bool) {
	a := in.Active
	if a == "" {
		a = in.InitialSpeaker
	}
	if a == in.Speaker && t.Fallback != "" {
		a = t.Fallback
	}
	return Speak(a), a != ""
}

// Name implements Target.
func (AgentTarget) Name() string { return "agent" }

// Name implements Target.
func (RoundRobinTarget) Name() string { return "round_robin" }

// Name implements Target.
func (StayTarget) Name() string { return "stay" }

// Name implements Target.
func (RevertToInitiatorTarget) Name() string { return "revert_to_initiator" }

// Name implements Target.
func (TerminateTarget) Name() string { return "terminate" }

// Name implements Target.
func (SupervisorTarget) Name() string { return "supervisor" }

// Name implements Target.
func (MentionedTarget) Name() string { return "mentioned" }

// Name implements Target.
func (ActiveAgentTarget) Name() string { return "active_agent" }

// Args implements Target.
func (t AgentTarget) Args() map[string]any { return map[string]any{"agent_id": t.Agent} }

// Args implements Target.
func (RoundRobinTarget) Args() map[string]any { return nil }

// Args implements Target.
func (StayTarget) Args() map[string]any { return nil }

// Args implements Target.
func (RevertToInitiatorTarget) Args() map[string]any { return nil }

// Args implements Target.
func (t TerminateTarget) Args() map[string]any {
	r := t.Reason
	if r == "" {
		r = DefaultTerminateReason
	}
	return map[string]any{"reason": r}
}

// Args implements Target.
func (SupervisorTarget) Args() map[string]any { return nil }

// Args implements Target.
func (MentionedTarget) Args() map[string]any { return nil }

// Args implements Target.
func (t ActiveAgentTarget) Args() map[string]any {
	if t.Fallback == "" {
		return nil
	}
	return map[string]any{"fallback": t.Fallback}
}

// AgentNames implements AgentNamer.
func (t AgentTarget) AgentNames() []string { return []string{t.Agent} }

// AgentNames implements AgentNamer.
func (t ActiveAgentTarget) AgentNames() []string {
	if t.Fallback == "" {
		return nil
	}
	return []string{t.Fallback}
}
