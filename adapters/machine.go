package adapters

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hubd/hubd/session"
)

// Machine is one session's whole pure state: its metadata, lifecycle,
// adapter state and last seq. The hub keeps one per session and drives it
// through Admit and Fold; tools and tests drive one directly. Folding a
// session's log, record by record, into a new Machine rebuilds exactly the
// live Machine.
type Machine struct {
	Meta  *session.Meta
	Life  session.Lifecycle
	State State
	Seq   uint64 // the seq of the last folded envelope
	// Clocks are the timestamps the session's timers derive from.
	Clocks Clocks
	// LastRule explains the last turn (see Outcome.Rule).
	LastRule string
}

// NewMachine starts a session of the adapter's type: it checks the metadata
// and the adapter's knobs. The lifecycle starts empty; the first envelope
// folded must be the invite.
func NewMachine(a Adapter, meta *session.Meta) (*Machine, error) {
	if meta.Type != a.Type() {
		return nil, fmt.Errorf("session type %v given to the %v adapter: %w", meta.Type, a.Type(), ErrUnknownType)
	}
	if err := meta.Check(); err != nil {
		return nil, err
	}
	st, err := a.Start(meta)
	if err != nil {
		return nil, err
	}
	return &Machine{Meta: meta, State: st}, nil
}

// Admit reports whether env may be appended now, in the order of the send
// path: the sender is a participant (from == "" is the hub, which may write
// anything), the event is one its sender may write, the session's lifecycle
// allows it, its shape is valid, and the adapter accepts it. Admit changes
// nothing.
func (m *Machine) Admit(env *session.Envelope) error {
	if env.From != "" {
		if !m.Meta.IsParticipant(env.From) {
			return fmt.Errorf("%q is not a participant of session %v (participants: %s): %w",
				env.From, m.Meta.ID, strings.Join(m.Meta.Names(), ", "), session.ErrNotParticipant)
		}
		if env.Type.HubOnly() {
			return fmt.Errorf("%s is written by the hub, not by agents: %w", env.Type, session.ErrHubOnly)
		}
	}
	if err := m.Life.Admit(env.Type, env.From); err != nil {
		return err
	}
	if err := env.Check(); err != nil {
		return err
	}
	if env.Type.Lifecycle() {
		return nil
	}
	return m.State.Validate(env)
}

// Fold applies an accepted envelope. Its seq must follow the last one;
// anything else is a bug in the caller and panics.
func (m *Machine) Fold(env *session.Envelope) Outcome {
	if env.Seq != m.Seq+1 {
		panic(fmt.Sprintf("adapters: fold of seq %d after seq %d in session %v", env.Seq, m.Seq, m.Meta.ID))
	}
	m.Seq = env.Seq
	m.Clocks.fold(m, env)
	if env.Type.Lifecycle() {
		m.Life.Fold(env)
		return Outcome{}
	}
	out := m.State.Fold(env)
	if out.Rule != "" {
		m.LastRule = out.Rule
	}
	return out
}

// Apply folds env and then the envelopes that fold decides, each stamped
// with the next seq and env's time: the end of the session a fold decided
// (Outcome.Close), the open once the last invite is acknowledged (or at once
// when nobody is invited), the close after an invite reject or an
// auto_close violation. It returns them all, env first, with env's outcome;
// the caller gives the follow-ups their ids.
func (m *Machine) Apply(env *session.Envelope) ([]*session.Envelope, Outcome) {
	out := m.Fold(env)
	all := []*session.Envelope{env}
	for next := m.follow(all[len(all)-1], out); next != nil; next = m.follow(next, Outcome{}) {
		next.Session, next.Seq, next.AcceptedAt = m.Meta.ID, m.Seq+1, env.AcceptedAt
		m.Fold(next)
		all = append(all, next)
	}
	return all, out
}

// follow returns the envelope that must follow env, or nil.
func (m *Machine) follow(env *session.Envelope, out Outcome) *session.Envelope {
	switch {
	case out.Close != "" && !m.Life.State.Ended():
		return endEnvelope(m.Meta.ID, out.Close)
	case (env.Type == session.EventInvite || env.Type == session.EventInviteAck) &&
		m.Life.State == session.StatePending && len(m.Life.Awaiting) == 0:
		return &session.Envelope{Type: session.EventOpened}
	case env.Type == session.EventInviteReject && !m.Life.State.Ended():
		return endEnvelope(m.Meta.ID, session.ReasonInviteRejected)
	case env.Type == session.EventViolation && !m.Life.State.Ended():
		if v, ok := env.Payload.(session.Violation); ok && v.Action == session.ActionAutoClose {
			return endEnvelope(m.Meta.ID, session.ReasonExpectationViolated(v.Expectation))
		}
	}
	return nil
}

// Expected returns who is expected to speak next: nobody unless the session
// is open.
func (m *Machine) Expected() []string {
	if m.Life.State != session.StateOpen {
		return nil
	}
	return m.State.Expected()
}

// MarshalJSON returns the machine's state as deterministic JSON.
func (m *Machine) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq      uint64            `json:"seq"`
		Life     session.Lifecycle `json:"lifecycle"`
		State    State             `json:"state"`
		LastRule string            `json:"last_rule,omitempty"`
		Clocks   Clocks            `json:"clocks"`
	}{m.Seq, m.Life, m.State, m.LastRule, m.Clocks})
}
