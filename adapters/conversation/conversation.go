package conversation

import (
	"encoding/json"
	"fmt"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Kind and Version name this adapter's session type, "conversation@1".
const (
	Kind    = "conversation"
	Version = 1
)

// Adapter is the conversation session type.
type Adapter struct{}

// Type implements adapters.Adapter.
func (Adapter) Type() session.Type { return session.Type{Kind: Kind, Version: Version} }

// Expectations implements adapters.Adapter: none; conversations are long
// lived.
func (Adapter) Expectations() []*hubpb.Expectation { return nil }

// Start implements adapters.Adapter.
func (Adapter) Start(meta *hubpb.SessionMeta) (adapters.State, error) {
	if len(meta.GetParticipants()) != 2 {
		return nil, fmt.Errorf("conversation needs exactly 2 participants, got %d: %w", len(meta.GetParticipants()), session.ErrMalformed)
	}
	base, err := adapters.NewBase(meta, "conversation")
	if err != nil {
		return nil, err
	}
	return &State{Base: base}, nil
}

// State is a conversation's state.
type State struct {
	adapters.Base
}

// Validate implements adapters.State.
func (s *State) Validate(env *hubpb.Envelope) error {
	if err := s.CheckOpen(); err != nil {
		return err
	}
	return adapters.CheckRouting("conversation", env)
}

// Fold implements adapters.State.
func (s *State) Fold(env *hubpb.Envelope) adapters.Outcome {
	if out, done := s.FoldTurn(env); done {
		return out
	}
	return adapters.Outcome{Rule: "free turn"}
}

// Expected implements adapters.State: the participant who did not speak
// last (the creator before anyone has).
func (s *State) Expected() []string {
	if s.Closing != "" {
		return nil
	}
	if s.LastSpeaker == "" {
		return []string{s.Creator}
	}
	for _, p := range s.Participants {
		if p != s.LastSpeaker {
			return []string{p}
		}
	}
	return nil
}

// MarshalJSON implements adapters.State.
func (s *State) MarshalJSON() ([]byte, error) { return json.Marshal(s.Base) }
