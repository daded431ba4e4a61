package transition

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/hubd/hubd/session"
)

// Always holds for every turn.
type Always struct{}

// FromSpeaker holds when the turn's sender is Agent.
type FromSpeaker struct{ Agent string }

// ToolCalled holds when the turn is a packet whose routing tool is Tool.
type ToolCalled struct{ Tool string }

// ContextEquals holds when context variable Key equals Value (canonical JSON;
// a missing key equals null).
type ContextEquals struct {
	Key   string
	Value json.RawMessage
}

// AllOf holds when every one of its conditions holds.
type AllOf struct{ Conditions []Condition }

// AnyOf holds when at least one of its conditions holds.
type AnyOf struct{ Conditions []Condition }

// Not holds when its condition does not.
type Not struct{ Condition Condition }

// ContextIn holds when context variable Key equals one of Values.
type ContextIn struct {
	Key    string
	Values []json.RawMessage
}

// ContextCompare holds when context variable Key is a number and compares
// to Value with Op (lt, le, gt, ge, eq, ne). A missing or non-numeric
// variable never holds, whatever the operator.
type ContextCompare struct {
	Key   string
	Op    string
	Value float64
}

// Mentions holds when the turn's text starts with "@Agent" (case
// insensitive).
type Mentions struct{ Agent string }

// TurnCountAtLeast holds once N turns have been taken (this one included).
type TurnCountAtLeast struct{ N int }

// EventTypeIs holds when the turn's event type is Type ("text" or "packet";
// the protocol spellings "EV_TEXT" and "EV_PACKET" are accepted when
// decoding).
type EventTypeIs struct{ Type string }

// Holds implements Condition.
func (Always) Holds(*Input) bool { return true }

// Holds implements Condition.
func (c FromSpeaker) Holds(in *Input) bool { return in.Speaker == c.Agent }

// Holds implements Condition.
func (c ToolCalled) Holds(in *Input) bool {
	return in.Event == session.EventPacket && in.Tool != "" && in.Tool == c.Tool
}

// Holds implements Condition.
func (c ContextEquals) Holds(in *Input) bool { return bytes.Equal(in.Var(c.Key), c.Value) }

// Holds implements Condition.
func (c AllOf) Holds(in *Input) bool {
	for _, x := range c.Conditions {
		if !x.Holds(in) {
			return false
		}
	}
	return true
}

// Holds implements Condition.
func (c AnyOf) Holds(in *Input) bool {
	for _, x := range c.Conditions {
		if x.Holds(in) {
			return true
		}
	}
	return false
}

// Holds implements Condition.
func (c Not) Holds(in *Input) bool { return !c.Condition.Holds(in) }

// Holds implements Condition.
func (c ContextIn) Holds(in *Input) bool {
	v := in.Var(c.Key)
	return slices.ContainsFunc(c.Values, func(w json.RawMessage) bool { return bytes.Equal(v, w) })
}

// Holds implements Condition.
func (c ContextCompare) Holds(in *Input) bool {
	x, ok := session.Number(in.Var(c.Key))
	if !ok {
		return false
	}
	switch c.Op {
	case "lt":
		return x < c.Value
	case "le":
		return x <= c.Value
	case "gt":
		return x > c.Value
	case "ge":
		return x >= c.Value
	case "eq":
		return x == c.Value
	case "ne":
		return x != c.Value
	}
	return false
}

// Holds implements Condition.
func (c Mentions) Holds(in *Input) bool {
	return in.Mention != "" && strings.EqualFold(in.Mention, c.Agent)
}

// Holds implements Condition.
func (c TurnCountAtLeast) Holds(in *Input) bool { return in.Turn >= c.N }

// Holds implements Condition.
func (c EventTypeIs) Holds(in *Input) bool { return in.Event == c.Type }

// Name implements Condition.
func (Always) Name() string { return "always" }

// Name implements Condition.
func (FromSpeaker) Name() string { return "from_speaker" }

// Name implements Condition.
func (ToolCalled) Name() string { return "tool_called" }

// Name implements Condition.
func (ContextEquals) Name() string { return "context_equals" }

// Name implements Condition.
func (AllOf) Name() string { return "all_of" }

// Name implements Condition.
func (AnyOf) Name() string { return "any_of" }

// Name implements Condition.
func (Not) Name() string { return "not" }

// Name implements Condition.
func (ContextIn) Name() string { return "context_in" }

// Name implements Condition.
func (ContextCompare) Name() string { return "context_compare" }

// Name implements Condition.
func (Mentions) Name() string { return "mentions" }

// Name implements Condition.
func (TurnCountAtLeast) Name() string { return "turn_count_at_least" }

// Name implements Condition.
func (EventTypeIs) Name() string { return "event_type" }

// Args implements Condition.
func (Always) Args() map[string]any { return nil }

// Args implements Condition.
func (c FromSpeaker) Args() map[string]any { return map[string]any{"agent_id": c.Agent} }

// Args implements Condition.
func (c ToolCalled) Args() map[string]any { return map[string]any{"tool_name": c.Tool} }

// Args implements Condition.
func (c ContextEquals) Args() map[string]any {
	return map[string]any{"key": c.Key, "value": c.Value}
}

// Args implements Condition.
func (c AllOf) Args() map[string]any { return map[string]any{"conditions": nodes(c.Conditions)} }

// Args implements Condition.
func (c AnyOf) Args() map[string]any { return map[string]any{"conditions": nodes(c.Conditions)} }

// Args implements Condition.
func (c Not) Args() map[string]any { return map[string]any{"condition": node(c.Condition)} }

// Args implements Condition.
func (c ContextIn) Args() map[string]any { return map[string]any{"key": c.Key, "values": c.Values} }

// Args implements Condition.
func (c ContextCompare) Args() map[string]any {
	return map[string]any{"key": c.Key, "op": c.Op, "value": c.Value}
}

// Args implements Condition.
func (c Mentions) Args() map[string]any { return map[string]any{"agent_id": c.Agent} }

// Args implements Condition.
func (c TurnCountAtLeast) Args() map[string]any { return map[string]any{"n": c.N} }

// Args implements Condition.
func (c EventTypeIs) Args() map[string]any { return map[string]any{"type": string(c.Type)} }

// AgentNames implements AgentNamer.
func (c FromSpeaker) AgentNames() []string { return []string{c.Agent} }

// AgentNames implements AgentNamer.
func (c Mentions) AgentNames() []string { return []string{c.Agent} }

// Children returns the nested conditions, for validation and rendering.
func (c AllOf) Children() []Condition { return c.Conditions }

// Children returns the nested conditions, for validation and rendering.
func (c AnyOf) Children() []Condition { return c.Conditions }

// Children returns the nested condition, for validation and rendering.
func (c Not) Children() []Condition { return []Condition{c.Condition} }
