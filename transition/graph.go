package transition

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hubd/hubd/session"
)

// Condition decides whether a transition fires for the turn just accepted.
type Condition interface {
	// Name is the registry name, e.g. "from_speaker".
	Name() string
	// Args are the JSON args that rebuild the condition through its
	// registry factory (nil for none).
	Args() map[string]any
	// Holds reports whether the condition is true for in.
	Holds(in *Input) bool
}

// Target resolves where a fired transition leads.
type Target interface {
	// Name is the registry name, e.g. "agent".
	Name() string
	// Args are the JSON args that rebuild the target (nil for none).
	Args() map[string]any
	// Resolve returns the decision, or false when the target cannot resolve
	// for this turn (a "mentioned" target on a turn without a mention); the
	// evaluation then goes on with the next transition.
	Resolve(in *Input) (Decision, bool)
}

// AgentNamer is implemented by conditions and targets that name agents;
// validation checks each name is a participant.
type AgentNamer interface {
	AgentNames() []string
}

// Transition pairs a condition with a target.
type Transition struct {
	When     Condition
	Then     Target
	Priority int // lower runs first; ties keep list order
}

// Graph is a workflow session's orchestrator script. Build it with a
// factory ([Sequence], [RoundRobin], [Supervisor]), [Registry.Decode], or a
// literal followed by [Graph.Validate]. A Graph is not modified once built.
type Graph struct {
	Version        int // format version; 0 and 1 both mean 1
	InitialSpeaker string
	Transitions    []Transition
	DefaultTarget  Target // nil terminates with "after_work"
	MaxTurns       int    // 0: no cap
	// Supervisor is who escalations go to, unless the session's
	// "supervisor" knob names another; "": the session's creator.
	Supervisor string
}

// FormatVersion is the graph format version this package writes.
const FormatVersion = 1

// RuleDefault is the Result.Rule of a decision made by the default target.
const RuleDefault = -1

// Result is an evaluation's outcome with what decided it, so an audit can
// explain every turn.
type Result struct {
	Decision Decision
	// Rule is the index in Transitions of the transition that decided, or
	// RuleDefault.
	Rule int
	// Unresolved lists transitions whose condition held but whose target
	// could not resolve, in evaluation order.
	Unresolved []int
}

// Evaluate picks the next speaker for in: transitions in priority order,
// the first whose condition holds and whose target resolves; otherwise the
// default target.
func (g *Graph) Evaluate(in *Input) Result {
	var res Result
	try := func(i int) bool {
		t := g.Transitions[i]
		if !t.When.Holds(in) {
			return false
		}
		d, ok := t.Then.Resolve(in)
		if !ok {
			res.Unresolved = append(res.Unresolved, i)
			return false
		}
		res.Decision, res.Rule = d, i
		return true
	}
	if order := g.order(); order == nil {
		for i := range g.Transitions {
			if try(i) {
				return res
			}
		}
	} else {
		for _, i := range order {
			if try(i) {
				return res
			}
		}
	}
	res.Decision, res.Rule = g.defaultDecision(in), RuleDefault
	return res
}

func (g *Graph) defaultDecision(in *Input) Decision {
	if g.DefaultTarget == nil {
		return End(session.ReasonAfterWork)
	}
	if d, ok := g.DefaultTarget.Resolve(in); ok {
		return d
	}
	return End(session.ReasonAfterWork)
}

// order returns the evaluation order of the transitions, or nil when it is
// the list order (priorities already ascending), which costs nothing.
func (g *Graph) order() []int {
	sorted := true
	for i := 1; i < len(g.Transitions); i++ {
		if g.Transitions[i].Priority < g.Transitions[i-1].Priority {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	idx := make([]int, len(g.Transitions))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(g.Transitions[a].Priority, g.Transitions[b].Priority)
	})
	return idx
}

// Order returns the indexes of the transitions in evaluation order.
func (g *Graph) Order() []int {
	if o := g.order(); o != nil {
		return o
	}
	idx := make([]int, len(g.Transitions))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// Explain says in words which rule decided a result, e.g.
// "transitions[1] from_speaker(alice) → agent(bob)" or
// "default_target terminate(sequence_complete)".
func (g *Graph) Explain(r Result) string {
	if r.Rule == RuleDefault || r.Rule < 0 || r.Rule >= len(g.Transitions) {
		if g.DefaultTarget == nil {
			return "default_target (none: terminate after_work)"
		}
		return "default_target " + Describe(g.DefaultTarget)
	}
	t := g.Transitions[r.Rule]
	return fmt.Sprintf("transitions[%d] %s → %s", r.Rule, Describe(t.When), Describe(t.Then))
}
