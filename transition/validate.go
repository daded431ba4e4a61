package transition

import (
	"fmt"
	"slices"
	"strings"
)

// NodeValidator is implemented by custom conditions and targets that check
// more than their agent names at open.
type NodeValidator interface {
	ValidateNode(participants []string) error
}

// childConditions is implemented by composite conditions.
type childConditions interface {
	Children() []Condition
}

// Validate checks the graph against a session's participants: the initial
// speaker and every agent a node names are participants, every transition
// has a condition and a target, max_turns is not negative. The error wraps
// ErrInvalid and names the offending node, e.g.
// `transitions[2].then (agent): agent_id "zed" is not a participant
// (participants: alice, bob)`.
func (g *Graph) Validate(participants []string) error {
	if g.Version != 0 && g.Version != FormatVersion {
		return fmt.Errorf("version: %d is not supported (this hub reads version %d): %w", g.Version, FormatVersion, ErrInvalid)
	}
	if g.InitialSpeaker == "" {
		return fmt.Errorf("initial_speaker: missing: %w", ErrInvalid)
	}
	if !slices.Contains(participants, g.InitialSpeaker) {
		return fmt.Errorf("initial_speaker: %q is not a participant (participants: %s): %w",
			g.InitialSpeaker, strings.Join(participants, ", "), ErrInvalid)
	}
	if g.MaxTurns < 0 {
		return fmt.Errorf("max_turns: %d must be at least 1: %w", g.MaxTurns, ErrInvalid)
	}
	if g.Supervisor != "" && !slices.Contains(participants, g.Supervisor) {
		return fmt.Errorf("supervisor: %q is not a participant (participants: %s): %w",
			g.Supervisor, strings.Join(participants, ", "), ErrInvalid)
	}
	for i, t := range g.Transitions {
		path := fmt.Sprintf("transitions[%d]", i)
		if t.When == nil || t.Then == nil {
			return fmt.Errorf("%s: needs both a condition and a target: %w", path, ErrInvalid)
		}
		if err := validateCondition(path+".when", t.When, participants); err != nil {
			return err
		}
		if err := validateNode(path+".then", t.Then, participants); err != nil {
			return err
		}
	}
	if g.DefaultTarget != nil {
		return validateNode("default_target", g.DefaultTarget, participants)
	}
	return nil
}

func validateCondition(path string, c Condition, participants []string) error {
	if err := validateNode(path, c, participants); err != nil {
		return err
	}
	comp, ok := c.(childConditions)
	if !ok {
		return nil
	}
	kids := comp.Children()
	if len(kids) == 0 {
		return fmt.Errorf("%s (%s): needs at least one condition: %w", path, c.Name(), ErrInvalid)
	}
	for i, k := range kids {
		sub := fmt.Sprintf("%s.args.conditions[%d]", path, i)
		if _, isNot := c.(Not); isNot {
			sub = path + ".args.condition"
		}
		if k == nil {
			return fmt.Errorf("%s: missing condition: %w", sub, ErrInvalid)
		}
		if err := validateCondition(sub, k, participants); err != nil {
			return err
		}
	}
	return nil
}

func validateNode(path string, n named, participants []string) error {
	if an, ok := n.(AgentNamer); ok {
		for _, a := range an.AgentNames() {
			if !slices.Contains(participants, a) {
				return fmt.Errorf("%s (%s): agent %q is not a participant (participants: %s): %w",
					path, n.Name(), a, strings.Join(participants, ", "), ErrInvalid)
			}
		}
	}
	if v, ok := n.(NodeValidator); ok {
		if err := v.ValidateNode(participants); err != nil {
			return fmt.Errorf("%s (%s): %v: %w", path, n.Name(), err, ErrInvalid)
		}
	}
	return nil
}

// Agents returns every agent the graph names (initial speaker first, then in
// order of appearance, without repeats). Tools use it as the participant
// list when none is given.
func (g *Graph) Agents() []string {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	add(g.InitialSpeaker)
	var walk func(n named)
	walk = func(n named) {
		if an, ok := n.(AgentNamer); ok {
			add(an.AgentNames()...)
		}
		if comp, ok := n.(childConditions); ok {
			for _, k := range comp.Children() {
				if k != nil {
					walk(k)
				}
			}
		}
	}
	for _, t := range g.Transitions {
		if t.When != nil {
			walk(t.When)
		}
		if t.Then != nil {
			walk(t.Then)
		}
	}
	if g.DefaultTarget != nil {
		walk(g.DefaultTarget)
	}
	return out
}
