package transition

import "github.com/hubd/hubd/session"

// Sequence is a pipeline: steps[0] speaks first, each step hands to the next
// (a from_speaker rule each), and after the last step the default target
// terminates with "sequence_complete"; max_turns is len(steps). Steps should
// be distinct: an agent listed twice always hands to the step after its
// first appearance.
func Sequence(steps ...string) *Graph {
	g := &Graph{Version: FormatVersion, DefaultTarget: TerminateTarget{Reason: session.ReasonSequenceComplete}, MaxTurns: len(steps)}
	if len(steps) > 0 {
		g.InitialSpeaker = steps[0]
	}
	for i := 0; i+1 < len(steps); i++ {
		g.Transitions = append(g.Transitions, Transition{When: FromSpeaker{steps[i]}, Then: AgentTarget{steps[i+1]}})
	}
	return g
}

// RoundRobin gives every participant a turn in order, wrapping around, until
// maxTurns turns have been taken (0: no cap; the session then ends only by
// an explicit close, a finish packet, a timer or its TTL).
func RoundRobin(participants []string, maxTurns int) *Graph {
	g := &Graph{Version: FormatVersion, MaxTurns: maxTurns,
		Transitions: []Transition{{When: Always{}, Then: RoundRobinTarget{}}}}
	if len(participants) > 0 {
		g.InitialSpeaker = participants[0]
	}
	return g
}

// SupervisorSpec describes a supervisor team (seed 000): a router agent with
// specialists it hands work to, and optionally a person (User) talking to
// the team.
type SupervisorSpec struct {
	Router      string
	Specialists []string
	// User, when set, speaks first; their messages go to the specialist they
	// @mention, else to the active agent (the router until a handoff);
	// every agent's plain reply goes back to them.
	User string
	// MaxTurns caps the session (0: no cap).
	MaxTurns int
	// TransferPrefix names the handoff tools, "transfer_to_" by default:
	// tool "transfer_to_billing" hands to the specialist "billing".
	TransferPrefix string
	// HelpTool is the escalation tool, "request_help" by default; it hands
	// back to the router.
	HelpTool string
}

// Supervisor builds a supervisor graph, rules in this order:
//
//  1. tool_called(transfer_to_<s>) → agent(s), for each specialist s
//  2. tool_called(request_help) → agent(router)
//
// with a User:
//
//  3. from_speaker(user) ∧ mentions(a) → agent(a), for the router and each specialist
//  4. from_speaker(user) → active_agent(fallback: router)
//  5. default: agent(user)
//
// without a User (the router opens and closes the work):
//
//  3. from_speaker(router) → terminate("finished")
//  4. default: agent(router)
//
// The router is the graph's supervisor: a packet with routing kind
// "escalate" goes to it (unless the session's "supervisor" knob names
// another), as request_help does. A packet with routing kind "handoff" and
// a target skips the graph and goes to the target directly.
func Supervisor(spec SupervisorSpec) *Graph {
	prefix, help := spec.TransferPrefix, spec.HelpTool
	if prefix == "" {
		prefix = "transfer_to_"
	}
	if help == "" {
		help = "request_help"
	}
	g := &Graph{Version: FormatVersion, InitialSpeaker: spec.Router, MaxTurns: spec.MaxTurns, Supervisor: spec.Router}
	for _, s := range spec.Specialists {
		g.Transitions = append(g.Transitions, Transition{When: ToolCalled{prefix + s}, Then: AgentTarget{s}})
	}
	g.Transitions = append(g.Transitions, Transition{When: ToolCalled{help}, Then: AgentTarget{spec.Router}})
	if spec.User == "" {
		g.Transitions = append(g.Transitions, Transition{When: FromSpeaker{spec.Router}, Then: TerminateTarget{session.ReasonFinished}})
		g.DefaultTarget = AgentTarget{spec.Router}
		return g
	}
	g.InitialSpeaker = spec.User
	for _, a := range append([]string{spec.Router}, spec.Specialists...) {
		g.Transitions = append(g.Transitions, Transition{
			When: AllOf{[]Condition{FromSpeaker{spec.User}, Mentions{a}}},
			Then: AgentTarget{a},
		})
	}
	g.Transitions = append(g.Transitions, Transition{When: FromSpeaker{spec.User}, Then: ActiveAgentTarget{Fallback: spec.Router}})
	g.DefaultTarget = AgentTarget{spec.User}
	return g
}
