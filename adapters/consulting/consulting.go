package consulting

import (
	"encoding/json"
	"fmt"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Kind and Version name this adapter's session type, "consulting@1".
const (
	Kind    = "consulting"
	Version = 1
)

// Adapter is the consulting session type.
type Adapter struct{}

// Type implements adapters.Adapter.
func (Adapter) Type() session.Type { return session.Type{Kind: Kind, Version: Version} }

// Expectations implements adapters.Adapter: the answer within 600s or the
// session closes.
func (Adapter) Expectations() []*hubpb.Expectation {
	return []*hubpb.Expectation{session.Expect(session.TurnWithin, 600e9, session.ActionAutoClose)}
}

// Start implements adapters.Adapter.
func (Adapter) Start(meta *hubpb.SessionMeta) (adapters.State, error) {
	if len(meta.GetParticipants()) != 2 {
		return nil, fmt.Errorf("consulting needs exactly 2 participants (asker and consultant), got %d: %w", len(meta.GetParticipants()), session.ErrMalformed)
	}
	base, err := adapters.NewBase(meta, "consulting")
	if err != nil {
		return nil, err
	}
	s := &State{Base: base}
	for _, p := range s.Participants {
		if p != s.Creator {
			s.Consultant = p
		}
	}
	return s, nil
}

// State is a consulting session's state.
type State struct {
	adapters.Base
	Consultant string `json:"consultant"`
}

func (s *State) next() string {
	if s.Turn == 0 {
		return s.Creator
	}
	return s.Consultant
}

// Validate implements adapters.State.
func (s *State) Validate(env *hubpb.Envelope) error {
	if err := s.CheckOpen(); err != nil {
		return err
	}
	if !session.IsTurn(env.GetType()) {
		return nil
	}
	if want := s.next(); env.GetFrom() != want {
		role := "the question from"
		if s.Turn > 0 {
			role = "the answer from"
		}
		return fmt.Errorf("consulting expects %s %q, got %q: %w", role, want, env.GetFrom(), adapters.ErrOutOfTurn)
	}
	return adapters.CheckRouting("consulting", env)
}

// Fold implements adapters.State.
func (s *State) Fold(env *hubpb.Envelope) adapters.Outcome {
	if out, done := s.FoldTurn(env); done {
		return out
	}
	if s.Turn >= 2 {
		return s.Close(session.ReasonConsultingComplete, "answer given")
	}
	return adapters.Outcome{Rule: "question asked → " + s.Consultant}
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
