package agentsdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// graphVersion is the version of the graph JSON format this SDK writes.
const graphVersion = 1

// defaultTerminateReason is the hub's reason for a terminate target
// without one.
const defaultTerminateReason = "terminated"

// Graph is a workflow session's transition graph, in the hub's JSON form
// (the source system's to_dict shape):
//
//	{"version": 1, "initial_speaker": "a",
//	 "transitions": [{"when": {...}, "then": {...}, "priority": 0}],
//	 "default_target": {...}, "max_turns": 3}
//
// After each turn the hub evaluates Transitions in Priority order, lowest
// first, ties in list order; the first whose condition holds (and whose
// target resolves) decides, otherwise Default does. Build one with
// [NewGraph] and its methods, with a factory ([Sequence], [RoundRobin],
// [Supervisor]), or from JSON with json.Unmarshal. The hub validates it at
// open (INVALID_GRAPH, see [ErrInvalidGraph]).
type Graph struct {
	// InitialSpeaker speaks first once the session opens.
	InitialSpeaker string
	// Transitions are the rules.
	Transitions []Transition
	// Default decides when no rule does; nil means terminate with
	// "after_work".
	Default *Target
	// MaxTurns closes the session with "max_turns" after that many turns;
	// 0 means no cap.
	MaxTurns int
	// Supervisor is who escalations go to, unless the session's
	// "supervisor" knob names another; "": the session's creator.
	Supervisor string
}

// Transition is one rule: when When holds, Then picks what follows.
type Transition struct {
	When     Condition
	Then     Target
	Priority int
}

// Condition is a named condition with its args, as the hub's registry
// knows it. The constructors below build the hub's built-in conditions;
// [CustomCondition] builds any other.
type Condition struct {
	Name string
	Args map[string]any
}

// Target is a named target with its args. The constructors below build the
// hub's built-in targets; [CustomTarget] builds any other.
type Target struct {
	Name string
	Args map[string]any
}

// NewGraph returns an empty graph whose first speaker is initialSpeaker.
func NewGraph(initialSpeaker string) *Graph {
	return &Graph{InitialSpeaker: initialSpeaker}
}

// On appends the rule "when → then" at priority 0 and returns g.
func (g *Graph) On(when Condition, then Target) *Graph {
	return g.OnPriority(0, when, then)
}

// OnPriority appends the rule "when → then" at priority p (lower runs
// first) and returns g.
func (g *Graph) OnPriority(p int, when Condition, then Target) *Graph {
	g.Transitions = append(g.Transitions, Transition{When: when, Then: then, Priority: p})
	return g
}

// Otherwise sets the default target and returns g.
func (g *Graph) Otherwise(t Target) *Graph {
	g.Default = &t
	return g
}

// WithMaxTurns sets the turn cap (0: none) and returns g.
func (g *Graph) WithMaxTurns(n int) *Graph {
	g.MaxTurns = n
	return g
}

// JSON returns the graph's JSON form, as the hub and `hubd graph validate`
// read it.
func (g *Graph) JSON() (string, error) {
	b, err := json.Marshal(g)
	return string(b), err
}

// Struct returns the graph as sent to the hub (OpenRequest.graph): its
// JSON form as a Struct, built directly (args of types other than JSON's
// own, Conditions and Targets go through their JSON encoding).
func (g *Graph) Struct() (*structpb.Struct, error) {
	w := g.wire()
	ts := make([]*structpb.Value, 0, len(w.Transitions))
	for _, t := range w.Transitions {
		when, err := nodeValue(t.When.Name, t.When.Args)
		if err != nil {
			return nil, err
		}
		then, err := nodeValue(t.Then.Name, t.Then.Args)
		if err != nil {
			return nil, err
		}
		ts = append(ts, structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"when": when, "then": then, "priority": structpb.NewNumberValue(float64(t.Priority))}}))
	}
	dt, err := nodeValue(w.DefaultTarget.Name, w.DefaultTarget.Args)
	if err != nil {
		return nil, err
	}
	maxTurns := structpb.NewNullValue()
	if w.MaxTurns != nil {
		maxTurns = structpb.NewNumberValue(float64(*w.MaxTurns))
	}
	f := map[string]*structpb.Value{"version": structpb.NewNumberValue(float64(w.Version)), "initial_speaker": structpb.NewStringValue(w.InitialSpeaker),
		"transitions": structpb.NewListValue(&structpb.ListValue{Values: ts}), "default_target": dt, "max_turns": maxTurns}
	if w.Supervisor != "" { // omitempty
		f["supervisor"] = structpb.NewStringValue(w.Supervisor)
	}
	return &structpb.Struct{Fields: f}, nil
}

// nodeValue is a condition's or target's {"name", "args"} as a Value.
func nodeValue(name string, args map[string]any) (*structpb.Value, error) {
	a, err := mapValue(args)
	if err != nil {
		return nil, err
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue(name), "args": a}}), nil
}

// mapValue is an args map as a Struct Value (nil: empty).
func mapValue(m map[string]any) (*structpb.Value, error) {
	f := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		x, err := anyValue(v)
		if err != nil {
			return nil, fmt.Errorf("arg %q: %w", k, err)
		}
		f[k] = x
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: f}), nil
}

// anyValue is v as its JSON encoding decodes into a Value: JSON's own
// types, numbers and nested conditions directly, anything else through
// its JSON encoding.
func anyValue(v any) (*structpb.Value, error) {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case string:
		if utf8.ValidString(x) {
			return structpb.NewStringValue(x), nil
		}
	case bool:
		return structpb.NewBoolValue(x), nil
	case int:
		return structpb.NewNumberValue(float64(x)), nil
	case int64:
		return structpb.NewNumberValue(float64(x)), nil
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return structpb.NewNumberValue(x), nil
		}
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return structpb.NewNumberValue(f), nil
		}
	case Condition:
		return nodeValue(x.Name, x.Args)
	case Target:
		return nodeValue(x.Name, x.Args)
	case []Condition:
		l := make([]*structpb.Value, len(x))
		for i, c := range x {
			n, err := nodeValue(c.Name, c.Args)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return structpb.NewListValue(&structpb.ListValue{Values: l}), nil
	case []any:
		l := make([]*structpb.Value, len(x))
		for i, e := range x {
			n, err := anyValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return structpb.NewListValue(&structpb.ListValue{Values: l}), nil
	case map[string]any:
		if x == nil {
			break // JSON null
		}
		return mapValue(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// The wire shapes; field order is the hub's.
type graphJSON struct {
	Version        int              `json:"version"`
	InitialSpeaker string           `json:"initial_speaker"`
	Transitions    []transitionJSON `json:"transitions"`
	DefaultTarget  nodeJSON         `json:"default_target"`
	MaxTurns       *int             `json:"max_turns"`
	Supervisor     string           `json:"supervisor,omitempty"`
}

type transitionJSON struct {
	When     nodeJSON `json:"when"`
	Then     nodeJSON `json:"then"`
	Priority int      `json:"priority"`
}

type nodeJSON struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func node(name string, args map[string]any) nodeJSON {
	if args == nil {
		args = map[string]any{}
	}
	return nodeJSON{Name: name, Args: args}
}

// MarshalJSON implements json.Marshaler with the hub's canonical shape.
func (g Graph) MarshalJSON() ([]byte, error) { return json.Marshal(g.wire()) }

// wire is the graph in the hub's shape, its defaults filled in: what
// MarshalJSON encodes and Struct builds.
func (g Graph) wire() graphJSON {
	out := graphJSON{Version: graphVersion, InitialSpeaker: g.InitialSpeaker, Transitions: []transitionJSON{}, Supervisor: g.Supervisor}
	for _, t := range g.Transitions {
		out.Transitions = append(out.Transitions, transitionJSON{When: node(t.When.Name, t.When.Args), Then: node(t.Then.Name, t.Then.Args), Priority: t.Priority})
	}
	if g.Default == nil {
		out.DefaultTarget = node("terminate", map[string]any{"reason": "after_work"})
	} else {
		out.DefaultTarget = node(g.Default.Name, g.Default.Args)
	}
	if g.MaxTurns > 0 {
		m := g.MaxTurns
		out.MaxTurns = &m
	}
	return out
}

// UnmarshalJSON implements json.Unmarshaler. Args are kept as decoded JSON
// values (numbers as json.Number; the nested conditions of not, all_of and
// any_of as Conditions), which encode back to the same JSON; the hub checks
// names and args at open.
func (g *Graph) UnmarshalJSON(data []byte) error {
	var in struct {
		Version        *int   `json:"version"`
		InitialSpeaker string `json:"initial_speaker"`
		Transitions    []struct {
			When     *Condition `json:"when"`
			Then     *Target    `json:"then"`
			Priority int        `json:"priority"`
		} `json:"transitions"`
		DefaultTarget *Target `json:"default_target"`
		MaxTurns      *int    `json:"max_turns"`
		Supervisor    string  `json:"supervisor"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("agentsdk: graph: %w", err)
	}
	if in.Version != nil && *in.Version != graphVersion && *in.Version != 0 {
		return fmt.Errorf("agentsdk: graph: version %d is not supported", *in.Version)
	}
	*g = Graph{InitialSpeaker: in.InitialSpeaker, Supervisor: in.Supervisor}
	for i, t := range in.Transitions {
		if t.When == nil || t.Then == nil {
			return fmt.Errorf("agentsdk: graph: transitions[%d]: missing \"when\" or \"then\"", i)
		}
		g.Transitions = append(g.Transitions, Transition{When: *t.When, Then: *t.Then, Priority: t.Priority})
	}
	g.Default = in.DefaultTarget
	if in.MaxTurns != nil {
		g.MaxTurns = *in.MaxTurns
	}
	return nil
}

// MarshalJSON implements json.Marshaler: {"name": ..., "args": {...}}.
func (c Condition) MarshalJSON() ([]byte, error) { return json.Marshal(node(c.Name, c.Args)) }

// MarshalJSON implements json.Marshaler: {"name": ..., "args": {...}}.
func (t Target) MarshalJSON() ([]byte, error) { return json.Marshal(node(t.Name, t.Args)) }

// UnmarshalJSON implements json.Unmarshaler.
func (c *Condition) UnmarshalJSON(data []byte) error {
	n, err := decodeNode(data)
	*c = Condition(n)
	return err
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Target) UnmarshalJSON(data []byte) error {
	n, err := decodeNode(data)
	*t = Target(n)
	return err
}

// decodeNode decodes {"name", "args"}. The args "condition" and
// "conditions" (of not, all_of, any_of) are decoded as conditions, so they
// encode back in the hub's field order; other args are plain JSON values
// with numbers as json.Number.
func decodeNode(data []byte) (nodeJSON, error) {
	var in struct {
		Name string                     `json:"name"`
		Args map[string]json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nodeJSON{}, err
	}
	n := nodeJSON{Name: in.Name}
	if in.Args != nil {
		n.Args = make(map[string]any, len(in.Args))
	}
	for k, raw := range in.Args {
		if k == "condition" {
			var c Condition
			if json.Unmarshal(raw, &c) == nil {
				n.Args[k] = c
				continue
			}
		}
		if k == "conditions" {
			var cs []Condition
			if json.Unmarshal(raw, &cs) == nil {
				n.Args[k] = cs
				continue
			}
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nodeJSON{}, err
		}
		n.Args[k] = v
	}
	return n, nil
}

// Conditions built into the hub.

// Always holds on every turn.
func Always() Condition { return Condition{Name: "always"} }

// FromSpeaker holds when agent took the turn.
func FromSpeaker(agent string) Condition {
	return Condition{Name: "from_speaker", Args: map[string]any{"agent_id": agent}}
}

// ToolCalled holds when the turn is a handoff packet naming tool.
func ToolCalled(tool string) Condition {
	return Condition{Name: "tool_called", Args: map[string]any{"tool_name": tool}}
}

// ContextEquals holds when context variable key equals value (any Go value
// encoded as JSON; a missing key equals nil).
func ContextEquals(key string, value any) Condition {
	return Condition{Name: "context_equals", Args: map[string]any{"key": key, "value": value}}
}

// ContextIn holds when context variable key equals one of values.
func ContextIn(key string, values ...any) Condition {
	return Condition{Name: "context_in", Args: map[string]any{"key": key, "values": values}}
}

// ContextCompare holds when the numeric context variable key compares to
// value with op: "lt", "le", "gt", "ge", "eq" or "ne".
func ContextCompare(key, op string, value float64) Condition {
	return Condition{Name: "context_compare", Args: map[string]any{"key": key, "op": op, "value": value}}
}

// AllOf holds when every condition holds.
func AllOf(conditions ...Condition) Condition {
	return Condition{Name: "all_of", Args: map[string]any{"conditions": conditions}}
}

// AnyOf holds when at least one condition holds.
func AnyOf(conditions ...Condition) Condition {
	return Condition{Name: "any_of", Args: map[string]any{"conditions": conditions}}
}

// Not holds when c does not.
func Not(c Condition) Condition {
	return Condition{Name: "not", Args: map[string]any{"condition": c}}
}

// Mentions holds when the turn's text starts with "@agent".
func Mentions(agent string) Condition {
	return Condition{Name: "mentions", Args: map[string]any{"agent_id": agent}}
}

// TurnCountAtLeast holds once n turns have been taken (this one included).
func TurnCountAtLeast(n int) Condition {
	return Condition{Name: "turn_count_at_least", Args: map[string]any{"n": n}}
}

// EventTypeIs holds when the turn's event type is t ([EventText] or
// [EventPacket]).
func EventTypeIs(t string) Condition {
	return Condition{Name: "event_type", Args: map[string]any{"type": t}}
}

// CustomCondition names a condition registered in the hub by its operator.
func CustomCondition(name string, args map[string]any) Condition {
	return Condition{Name: name, Args: args}
}

// Targets built into the hub.

// ToAgent hands the turn to agent.
func ToAgent(agent string) Target {
	return Target{Name: "agent", Args: map[string]any{"agent_id": agent}}
}

// ToNextInOrder hands the turn to the participant after the last speaker,
// in participant order, wrapping around (the hub's "round_robin").
func ToNextInOrder() Target { return Target{Name: "round_robin"} }

// Stay gives the last speaker another turn.
func Stay() Target { return Target{Name: "stay"} }

// RevertToInitiator hands the turn back to whoever opened the session.
func RevertToInitiator() Target { return Target{Name: "revert_to_initiator"} }

// Terminate ends the session with reason ("" is the hub's "terminated").
func Terminate(reason string) Target {
	if reason == "" {
		reason = defaultTerminateReason
	}
	return Target{Name: "terminate", Args: map[string]any{"reason": reason}}
}

// ToSupervisor hands the turn to the session's supervisor (its creator
// unless the "supervisor" knob names another).
func ToSupervisor() Target { return Target{Name: "supervisor"} }

// ToMentioned hands the turn to the participant named by a leading "@name"
// in the turn's text; without one it does not resolve and evaluation goes
// on.
func ToMentioned() Target { return Target{Name: "mentioned"} }

// ToActiveAgent hands the turn to the agent last handed to (sticky), or to
// fallback before any handoff ("" for none).
func ToActiveAgent(fallback string) Target {
	if fallback == "" {
		return Target{Name: "active_agent"}
	}
	return Target{Name: "active_agent", Args: map[string]any{"fallback": fallback}}
}

// CustomTarget names a target registered in the hub by its operator.
func CustomTarget(name string, args map[string]any) Target {
	return Target{Name: name, Args: args}
}

// Factories: the same graphs as the hub's own (package transition), so a
// graph built here and one built there encode to the same bytes.

// Sequence is a pipeline: steps[0] speaks first, each step hands to the
// next, and after the last step the session closes with
// "sequence_complete"; MaxTurns is len(steps).
func Sequence(steps ...string) *Graph {
	g := &Graph{MaxTurns: len(steps)}
	g.Otherwise(Terminate("sequence_complete"))
	if len(steps) > 0 {
		g.InitialSpeaker = steps[0]
	}
	for i := 0; i+1 < len(steps); i++ {
		g.On(FromSpeaker(steps[i]), ToAgent(steps[i+1]))
	}
	return g
}

// RoundRobin gives every participant a turn in participant order, wrapping
// around, until maxTurns turns have been taken (0: no cap). The
// participants of the session must be in this order (its creator first).
func RoundRobin(participants []string, maxTurns int) *Graph {
	g := &Graph{MaxTurns: maxTurns}
	if len(participants) > 0 {
		g.InitialSpeaker = participants[0]
	}
	return g.On(Always(), ToNextInOrder())
}

// SupervisorSpec describes a supervisor team: a router agent with
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
// The router is the graph's Supervisor: an escalation (Packet.Escalate)
// goes to it, as request_help does, not to whoever opened the session.
func Supervisor(spec SupervisorSpec) *Graph {
	prefix, help := spec.TransferPrefix, spec.HelpTool
	if prefix == "" {
		prefix = "transfer_to_"
	}
	if help == "" {
		help = "request_help"
	}
	g := &Graph{InitialSpeaker: spec.Router, MaxTurns: spec.MaxTurns, Supervisor: spec.Router}
	for _, s := range spec.Specialists {
		g.On(ToolCalled(prefix+s), ToAgent(s))
	}
	g.On(ToolCalled(help), ToAgent(spec.Router))
	if spec.User == "" {
		g.On(FromSpeaker(spec.Router), Terminate("finished"))
		return g.Otherwise(ToAgent(spec.Router))
	}
	g.InitialSpeaker = spec.User
	for _, a := range append([]string{spec.Router}, spec.Specialists...) {
		g.On(AllOf(FromSpeaker(spec.User), Mentions(a)), ToAgent(a))
	}
	g.On(FromSpeaker(spec.User), ToActiveAgent(spec.Router))
	return g.Otherwise(ToAgent(spec.User))
}
