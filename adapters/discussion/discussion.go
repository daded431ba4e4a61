package discussion

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Kind and Version name this adapter's session type, "discussion@1".
const (
	Kind    = "discussion"
	Version = 1
)

// KnobMaxTurns caps the number of turns.
const KnobMaxTurns = "max_turns"

// Adapter is the discussion session type.
type Adapter struct{}

// Type implements adapters.Adapter.
func (Adapter) Type() session.Type { return session.Type{Kind: Kind, Version: Version} }

// Expectations implements adapters.Adapter: turn_within(120s, warn) and
// turn_within(600s, auto_close), like workflow.
func (Adapter) Expectations() []*hubpb.Expectation {
	return []*hubpb.Expectation{
		session.Expect(session.TurnWithin, 120e9, session.ActionWarn),
		session.Expect(session.TurnWithin, 600e9, session.ActionAutoClose),
	}
}

// Start implements adapters.Adapter.
func (Adapter) Start(meta *hubpb.SessionMeta) (adapters.State, error) {
	if len(meta.GetParticipants()) < 2 {
		return nil, fmt.Errorf("discussion needs at least 2 participants, got %d: %w", len(meta.GetParticipants()), session.ErrMalformed)
	}
	base, err := adapters.NewBase(meta, "discussion", KnobMaxTurns)
	if err != nil {
		return nil, err
	}
	s := &State{Base: base}
	if ok, err := session.Knob(meta, KnobMaxTurns, &s.MaxTurns); err != nil {
		return nil, err
	} else if ok && s.MaxTurns < 1 {
		return nil, fmt.Errorf("knob %q: %d must be at least 1: %w", KnobMaxTurns, s.MaxTurns, session.ErrMalformed)
	}
	// The speaking order starts with the creator and follows the
	// participant order from there.
	i := slices.Index(s.Participants, s.Creator)
	s.Order = append(slices.Clone(s.Participants[i:]), s.Participants[:i]...)
	return s, nil
}

// State is a discussion's state.
type State struct {
	adapters.Base
	Order    []string `json:"order"`
	MaxTurns int      `json:"max_turns,omitempty"`
}

func (s *State) next() string { return s.Order[s.Turn%len(s.Order)] }

// Validate implements adapters.State.
func (s *State) Validate(env *hubpb.Envelope) error {
	if err := s.CheckOpen(); err != nil {
		return err
	}
	if !session.IsTurn(env.GetType()) {
		return nil
	}
	if want := s.next(); env.GetFrom() != want {
		return fmt.Errorf("discussion expects %q to speak (order: %s), got %q: %w",
			want, strings.Join(s.Order, " → "), env.GetFrom(), adapters.ErrOutOfTurn)
	}
	return adapters.CheckRouting("discussion", env)
}

// Fold implements adapters.State.
func (s *State) Fold(env *hubpb.Envelope) adapters.Outcome {
	if out, done := s.FoldTurn(env); done {
		return out
	}
	if s.MaxTurns > 0 && s.Turn >= s.MaxTurns {
		return s.Close(session.ReasonMaxTurns, "round robin; max_turns reached")
	}
	return adapters.Outcome{Rule: "round robin → " + s.next()}
}

// Expected implements adapters.State.
func (s *State) Expected() []string {
	if s.Closing != "" {
		return nil
	}
	return []string{s.next()}
}

// MarshalJSON implements adapters.State.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}
