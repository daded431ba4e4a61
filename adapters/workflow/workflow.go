package workflow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// Kind and Version name this adapter's session type, "workflow@1".
const (
	Kind    = "workflow"
	Version = 1
)

// Knob names.
const (
	KnobGraph       = "graph"
	KnobMaxHandoffs = "max_handoffs"
	KnobSupervisor  = "supervisor"
	// KnobMaxTurns caps the session's turns, over the graph's max_turns.
	KnobMaxTurns = "max_turns"
)

// DefaultMaxTurns is the cap the hub gives a workflow whose graph sets no
// max_turns and whose opener sets neither max_turns nor max_handoffs
// (protocol §5: loops stop loudly). A max_turns knob overrides it.
const DefaultMaxTurns = 1000

// DefaultKnobs implements adapters.KnobDefaulter: max_turns
// DefaultMaxTurns when nothing else bounds the session.
func (a *Adapter) DefaultKnobs(meta *hubpb.SessionMeta) map[string]*structpb.Value {
	k := meta.GetKnobs()
	if _, ok := k[KnobMaxTurns]; ok {
		return nil
	}
	if _, ok := k[KnobMaxHandoffs]; ok {
		return nil
	}
	g, ok, err := a.graph(meta)
	if err != nil || !ok || g.MaxTurns > 0 {
		return nil
	}
	return map[string]*structpb.Value{KnobMaxTurns: structpb.NewNumberValue(DefaultMaxTurns)}
}

// Decoder decodes a graph from its JSON form. A *transition.Registry is
// one; a caller may put a cache in front of it, since a decoded Graph is
// immutable and may be shared by every session with the same graph.
type Decoder interface {
	Decode(data []byte) (*transition.Graph, error)
}

// ValueDecoder is a Decoder that may also keep the graph it decoded for
// a graph knob's value by the value itself, so that the sessions sharing
// one value (the hub shares equal knob values between sessions) decode it
// without writing its JSON again. The adapter gives it only the values of
// a session's metadata, which never change (see adapters.Machine).
type ValueDecoder interface {
	Decoder
	// DecodeValue returns the graph of the graph knob's value v: the one
	// kept for v, else Decode of the JSON that raw returns (raw's error is
	// returned as it is).
	DecodeValue(v *structpb.Value, raw func() (json.RawMessage, error)) (*transition.Graph, error)
}

// graph decodes the session's graph knob, reporting whether it is set.
func (a *Adapter) graph(meta *hubpb.SessionMeta) (*transition.Graph, bool, error) {
	v, ok := meta.GetKnobs()[KnobGraph]
	if !ok {
		return nil, false, nil
	}
	raw := func() (json.RawMessage, error) {
		raw, _, err := session.KnobJSON(meta, KnobGraph)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", err, transition.ErrInvalid)
		}
		return raw, nil
	}
	if vd, ok := a.dec.(ValueDecoder); ok {
		g, err := vd.DecodeValue(v, raw)
		return g, true, err
	}
	data, err := raw()
	if err != nil {
		return nil, true, err
	}
	g, err := a.dec.Decode(data)
	return g, true, err
}

// Adapter is the workflow session type. Its decoder's registry decides
// which conditions and targets sessions may use, custom ones included.
type Adapter struct {
	dec Decoder
}

// New returns the workflow adapter decoding graphs with dec (nil: a
// registry of the built-ins).
func New(dec Decoder) *Adapter {
	if dec == nil {
		dec = transition.NewRegistry()
	}
	return &Adapter{dec: dec}
}

// Type implements adapters.Adapter.
func (a *Adapter) Type() session.Type { return session.Type{Kind: Kind, Version: Version} }

// Expectations implements adapters.Adapter: turn_within(120s, warn) and
// turn_within(600s, auto_close).
func (a *Adapter) Expectations() []*hubpb.Expectation {
	return []*hubpb.Expectation{
		session.Expect(session.TurnWithin, 120e9, session.ActionWarn),
		session.Expect(session.TurnWithin, 600e9, session.ActionAutoClose),
	}
}

// Start implements adapters.Adapter: it decodes and validates the graph
// against the participants, and reads max_handoffs and supervisor.
func (a *Adapter) Start(meta *hubpb.SessionMeta) (adapters.State, error) {
	if len(meta.GetParticipants()) < 2 {
		return nil, fmt.Errorf("workflow needs at least 2 participants, got %d: %w", len(meta.GetParticipants()), session.ErrMalformed)
	}
	g, ok, err := a.graph(meta)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("workflow needs the knob %q (a transition graph): %w", KnobGraph, transition.ErrInvalid)
	}
	base, err := adapters.NewBase(meta, "workflow", KnobGraph, KnobMaxHandoffs, KnobSupervisor, KnobMaxTurns)
	if err != nil {
		return nil, err
	}
	s := &State{Base: base, graph: g, Supervisor: cmp.Or(g.Supervisor, meta.GetCreator())}
	if err := g.Validate(s.Participants); err != nil {
		return nil, err
	}
	if err := s.readKnobs(meta); err != nil {
		return nil, err
	}
	s.Expect = g.InitialSpeaker
	return s, nil
}

func (s *State) readKnobs(meta *hubpb.SessionMeta) error {
	if ok, err := session.Knob(meta, KnobMaxHandoffs, &s.MaxHandoffs); err != nil {
		return err
	} else if ok && s.MaxHandoffs < 1 {
		return fmt.Errorf("knob %q: %d must be at least 1: %w", KnobMaxHandoffs, s.MaxHandoffs, session.ErrMalformed)
	}
	if ok, err := session.Knob(meta, KnobMaxTurns, &s.MaxTurns); err != nil {
		return err
	} else if ok && s.MaxTurns < 1 {
		return fmt.Errorf("knob %q: %d must be at least 1: %w", KnobMaxTurns, s.MaxTurns, session.ErrMalformed)
	}
	if ok, err := session.Knob(meta, KnobSupervisor, &s.Supervisor); err != nil {
		return err
	} else if ok && !slices.Contains(s.Participants, s.Supervisor) {
		return fmt.Errorf("knob %q: %q is not a participant (participants: %s): %w",
			KnobSupervisor, s.Supervisor, strings.Join(s.Participants, ", "), session.ErrMalformed)
	}
	return nil
}

// State is a workflow session's state.
type State struct {
	adapters.Base
	graph *transition.Graph
	rules []string // explanations by rule index + 1, filled as used

	Supervisor  string `json:"supervisor"`
	MaxHandoffs int    `json:"max_handoffs,omitempty"`
	MaxTurns    int    `json:"max_turns,omitempty"` // the max_turns knob: over the graph's
	Expect      string `json:"expected,omitempty"`  // "" once the session is closing
	Active      string `json:"active,omitempty"`    // the active agent; "" until the first handoff
	Handoffs    int    `json:"handoffs"`
	LastRule    string `json:"last_rule,omitempty"`
}

// Graph returns the session's graph.
func (s *State) Graph() *transition.Graph { return s.graph }

// Expected implements adapters.State.
func (s *State) Expected() []string {
	if s.Expect == "" {
		return nil
	}
	return []string{s.Expect}
}

// SetNext implements adapters.Steerable: name speaks next, once; the graph
// decides again after its turn.
func (s *State) SetNext(name string) {
	s.Expect = name
	s.LastRule = "operator → " + name
}

// Routing implements adapters.Router.
func (s *State) Routing() (active string, handoffs int, supervisor string) {
	return s.ActiveAgent(), s.Handoffs, s.Supervisor
}

// ActiveAgent returns the active agent: the participant most recently made
// speaker by a handoff or escalation, or the initial speaker before any.
func (s *State) ActiveAgent() string {
	if s.Active == "" {
		return s.graph.InitialSpeaker
	}
	return s.Active
}

// MarshalJSON implements adapters.State.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Validate implements adapters.State.
func (s *State) Validate(env *hubpb.Envelope) error {
	if err := s.CheckOpen(); err != nil {
		return err
	}
	if !session.IsTurn(env.GetType()) {
		return nil
	}
	if env.GetFrom() != s.Expect {
		return adapters.OutOfTurn("workflow", s.Expected(), env.GetFrom())
	}
	r := env.GetPacket().GetRouting()
	if (r.GetKind() != session.RouteHandoff && r.GetKind() != session.RoutePassCaller) || r.GetTarget() == "" {
		return nil
	}
	if t := r.GetTarget(); t == env.GetFrom() || !slices.Contains(s.Participants, t) {
		valid := slices.DeleteFunc(slices.Clone(s.Participants), func(n string) bool { return n == env.GetFrom() })
		return fmt.Errorf("handoff target %q is not another participant; valid targets: %s: %w",
			t, strings.Join(valid, ", "), adapters.ErrBadHandoffTarget)
	}
	return nil
}

// CheckNext implements adapters.Resumer: any participant may be chosen.
func (s *State) CheckNext(next string) error {
	if next != "" && !slices.Contains(s.Participants, next) {
		return fmt.Errorf("next_speaker %q is not a participant (participants: %s): %w",
			next, strings.Join(s.Participants, ", "), session.ErrMalformed)
	}
	return nil
}

// Resume implements adapters.Resumer: the chosen next speaker is expected;
// without one, the speaker the state expected, or, when the source had
// decided to end there, the active agent.
func (s *State) Resume(next string) {
	s.Base.Resume(next)
	switch {
	case next != "":
		s.Expect = next
	case s.Expect == "":
		s.Expect = s.ActiveAgent()
	}
}
