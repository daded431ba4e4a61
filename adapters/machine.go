package adapters

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Machine is one session's whole pure state: its metadata, lifecycle, the
// session type's state and last seq. The hub keeps one per session and
// drives it through Admit and Apply; tools and tests drive one directly.
// Folding a session's log, record by record, into a new Machine rebuilds
// exactly the live Machine.
type Machine struct {
	Meta      *hubpb.SessionMeta // immutable
	Lifecycle session.Lifecycle
	// Turns is the session type's state: who speaks, turns, context, usage.
	Turns State
	Seq   uint64 // the seq of the last folded envelope
	// Clocks are the timestamps the session's timers derive from.
	Clocks Clocks
	// LastRule explains the last turn (see Outcome.Rule).
	LastRule string
}

// NewMachine starts a session of the adapter's type: it checks the metadata
// and the adapter's knobs. The lifecycle starts empty; the first envelope
// folded must be the invite.
func NewMachine(a Adapter, meta *hubpb.SessionMeta) (*Machine, error) {
	if err := session.CheckMeta(meta); err != nil {
		return nil, err
	}
	if t, _ := session.ParseType(meta.GetType()); t != a.Type() {
		return nil, fmt.Errorf("session type %v given to the %v adapter: %w", t, a.Type(), ErrUnknownType)
	}
	st, err := a.Start(meta)
	if err != nil {
		return nil, err
	}
	return &Machine{Meta: meta, Turns: st}, nil
}

// Admit reports whether env may be appended now, in the order of the send
// path: the sender is a participant (from == "" is the hub, which may write
// anything), the event is one its sender may write, the session's lifecycle
// allows it, its shape is valid, and the session type accepts it. Admit
// changes nothing.
func (m *Machine) Admit(env *hubpb.Envelope) error {
	from, t := env.GetFrom(), env.GetType()
	if from != "" {
		if !session.IsParticipant(m.Meta, from) {
			return fmt.Errorf("%q is not a participant of session %s (participants: %s): %w",
				from, m.Meta.GetSessionId(), strings.Join(session.Names(m.Meta), ", "), session.ErrNotParticipant)
		}
		if session.IsHubOnly(t) {
			return fmt.Errorf("%s is written by the hub, not by agents: %w", t, session.ErrHubOnly)
		}
	}
	if err := m.Lifecycle.Admit(t, from); err != nil {
		return err
	}
	if err := session.CheckEnvelope(env); err != nil {
		return err
	}
	if session.IsLifecycle(t) {
		return nil
	}
	return m.Turns.Validate(env)
}

// Fold applies an accepted envelope. Its seq must follow the last one;
// anything else is a bug in the caller and panics.
func (m *Machine) Fold(env *hubpb.Envelope) Outcome {
	if env.GetSeq() != m.Seq+1 {
		panic(fmt.Sprintf("adapters: fold of seq %d after seq %d in session %s", env.GetSeq(), m.Seq, m.Meta.GetSessionId()))
	}
	m.Seq = env.GetSeq()
	m.Clocks.fold(m, env)
	if session.IsLifecycle(env.GetType()) {
		m.Lifecycle.Fold(env)
		return Outcome{}
	}
	out := m.Turns.Fold(env)
	if out.Rule != "" {
		m.LastRule = out.Rule
	}
	return out
}

// Apply folds env and then the envelopes that fold decides, each stamped
// with the session, the next seq and env's time: the end of the session a
// fold decided (Outcome.Close), the open once the last invite is
// acknowledged (or at once when nobody is invited), the close after an
// invite reject or an auto_close violation. It returns them all, env first,
// with env's outcome; the caller gives the follow-ups their ids.
func (m *Machine) Apply(env *hubpb.Envelope) ([]*hubpb.Envelope, Outcome) {
	out := m.Fold(env)
	all := []*hubpb.Envelope{env}
	for next := m.follow(all[len(all)-1], out); next != nil; next = m.follow(next, Outcome{}) {
		next.SessionId, next.Seq, next.AcceptedAt = m.Meta.GetSessionId(), m.Seq+1, session.Stamp(session.Time(env.GetAcceptedAt()))
		m.Fold(next)
		all = append(all, next)
	}
	return all, out
}

// follow returns the envelope that must follow env, or nil.
func (m *Machine) follow(env *hubpb.Envelope, out Outcome) *hubpb.Envelope {
	ended := m.Lifecycle.State.Ended()
	switch t := env.GetType(); {
	case out.Close != "" && !ended:
		return EndEnvelope(out.Close)
	case (t == session.EventInvite || t == session.EventInviteAck) &&
		m.Lifecycle.State == session.StatePending && len(m.Lifecycle.Awaiting) == 0:
		return &hubpb.Envelope{Type: session.EventOpened}
	case t == session.EventInviteReject && !ended:
		return EndEnvelope(session.ReasonInviteRejected)
	case t == session.EventViolation && !ended:
		if v := env.GetViolation(); v.GetAction() == session.ActionAutoClose {
			return EndEnvelope(session.ReasonExpectationViolated(v.GetExpectation()))
		}
	}
	return nil
}

// EndEnvelope returns the unstamped envelope that ends a session with
// reason: session_expired for the reasons where the clock ran out,
// session_closed for every other.
func EndEnvelope(reason string) *hubpb.Envelope {
	return session.Ended(session.EndType(reason), reason)
}

// Expected returns who is expected to speak next: nobody unless the session
// is open.
func (m *Machine) Expected() []string {
	if m.Lifecycle.State != session.StateOpen {
		return nil
	}
	return m.Turns.Expected()
}

// MarshalJSON returns the machine's state as deterministic JSON.
func (m *Machine) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq      uint64            `json:"seq"`
		Life     session.Lifecycle `json:"lifecycle"`
		State    State             `json:"state"`
		LastRule string            `json:"last_rule,omitempty"`
		Clocks   Clocks            `json:"clocks"`
	}{m.Seq, m.Lifecycle, m.Turns, m.LastRule, m.Clocks})
}
