package adapters

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Machine is one session's whole pure state: its metadata, lifecycle, the
// session type's state, what it waits on (Calls) and its last seq. The hub
// keeps one per session and drives it through Admit and Apply; tools and
// tests drive one directly. Folding a session's log, record by record,
// into a new Machine rebuilds exactly the live Machine.
type Machine struct {
	Meta      *hubpb.SessionMeta // immutable
	Lifecycle session.Lifecycle
	// Turns is the session type's state: who speaks, turns, context, usage.
	Turns State
	// Calls is what the session waits on: held turns, pending questions,
	// open children, granted turns, its responder.
	Calls Calls
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
	return &Machine{Meta: meta, Turns: st, Calls: Calls{Responder: meta.GetResponder()}}, nil
}

// Admit reports whether env may be appended now, in the order of the send
// path: the sender is a participant (or a question's named answerer; from
// == "" is the hub, which may write anything), the event is one its sender
// may write, the session's lifecycle allows it, its shape is valid, no
// hold stops it, and the session type accepts it. Admit changes nothing.
func (m *Machine) Admit(env *hubpb.Envelope) error {
	if err := m.admitSender(env); err != nil {
		return err
	}
	t := env.GetType()
	if err := m.Lifecycle.Admit(t, env.GetFrom()); err != nil {
		return err
	}
	if err := session.CheckEnvelope(env); err != nil {
		return err
	}
	if err := m.checkAudience(env); err != nil {
		return err
	}
	switch {
	case session.IsLifecycle(t):
		return nil
	case t == session.EventForked:
		return m.admitFork(env)
	case t == session.EventAnswer:
		insider := env.GetFrom() == "" || session.IsParticipant(m.Meta, env.GetFrom())
		return m.Calls.checkAnswer(env.GetFrom(), m.Meta.GetSessionId(), insider, env.GetAnswer())
	case t == session.EventQuestion:
		return m.admitQuestion(env)
	case t == session.EventOperator:
		return m.admitOperator(env)
	case session.IsTurn(t):
		return m.admitTurn(env)
	}
	return m.Turns.Validate(env)
}

// checkAudience refuses an agent's envelope addressed to someone who is
// not a participant: it would reach nobody, silently.
func (m *Machine) checkAudience(env *hubpb.Envelope) error {
	if env.GetFrom() == "" {
		return nil
	}
	for _, n := range env.GetAudience().GetNames() {
		if !session.IsParticipant(m.Meta, n) {
			return fmt.Errorf("audience names %q, who is not a participant (participants: %s): %w",
				n, strings.Join(session.Names(m.Meta), ", "), session.ErrMalformed)
		}
	}
	return nil
}

// admitSender checks who may write env: participants (not the hub's
// types), the answer of anyone a pending question is for (checkAnswer
// then wants the question's answerer), the hub.
func (m *Machine) admitSender(env *hubpb.Envelope) error {
	from, t := env.GetFrom(), env.GetType()
	if from == "" {
		return nil
	}
	if session.IsHubOnly(t) {
		return fmt.Errorf("%s is written by the hub, not by agents: %w", t, session.ErrHubOnly)
	}
	if session.IsParticipant(m.Meta, from) {
		return nil
	}
	if t == session.EventAnswer {
		// Judged by the question (checkAnswer): its answerer need not take
		// part. Whoever has none to answer is told only that, whatever the
		// session's state.
		if len(m.Calls.pendingFor(from)) == 0 {
			return noQuestionFor(from, env.GetAnswer().GetQuestionId(), m.Meta.GetSessionId(), nil)
		}
		return nil
	}
	return NotParticipant(from, m.Meta.GetSessionId())
}

// NotParticipant is the refusal of an agent that takes no part in a
// session (and answers none of its questions): it says nothing of the
// session but that.
func NotParticipant(agent, id string) error {
	return fmt.Errorf("%q is not a participant of session %s: %w", agent, id, session.ErrNotParticipant)
}

// admitTurn checks a turn: no hold, then a turn the session type expects
// or one a background result granted.
func (m *Machine) admitTurn(env *hubpb.Envelope) error {
	if err := m.Calls.checkHeld(); err != nil {
		return err
	}
	err := m.Turns.Validate(env)
	if errorsIsOutOfTurn(err) && slices.Contains(m.Calls.Granted, env.GetFrom()) {
		return nil // a granted turn, taken out of the session type's order
	}
	return err
}

func errorsIsOutOfTurn(err error) bool {
	r, ok := session.ReasonOf(err)
	return ok && r == hubpb.Reason_OUT_OF_TURN
}

// admitQuestion checks a question: asked on the asker's turn, with an
// answerer, under an id not pending already.
func (m *Machine) admitQuestion(env *hubpb.Envelope) error {
	q := env.GetQuestion()
	if err := m.CheckTurn(env.GetFrom()); err != nil {
		return err
	}
	if q.GetAnswerer() == "" {
		return fmt.Errorf("question %q names no answerer: %w", q.GetQuestionId(), session.ErrMalformed)
	}
	if m.Calls.Pending(q.GetQuestionId()) != nil {
		return fmt.Errorf("question %q is already pending: %w", q.GetQuestionId(), session.ErrMalformed)
	}
	return nil
}

// CheckTurn reports whether name may act on its turn now (delegate, ask):
// the session is open, no turn is held, and the session type would take a
// text from name now (or a result granted it a turn).
func (m *Machine) CheckTurn(name string) error {
	if err := m.Lifecycle.Admit(session.EventText, name); err != nil {
		return err
	}
	if err := m.Calls.checkHeld(); err != nil {
		return err
	}
	if slices.Contains(m.Calls.Granted, name) {
		return nil
	}
	// The session type's own turn rule decides, as for a text: a free-turn
	// type (conversation) lets anyone act, a workflow only its speaker.
	probe := &hubpb.Envelope{Type: session.EventText, From: name, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{}}}
	if err := m.Turns.Validate(probe); errorsIsOutOfTurn(err) {
		return err
	}
	return nil
}

// Fold applies an accepted envelope. Its seq must follow the last one;
// anything else is a bug in the caller and panics.
func (m *Machine) Fold(env *hubpb.Envelope) Outcome {
	if env.GetSeq() != m.Seq+1 {
		panic(fmt.Sprintf("adapters: fold of seq %d after seq %d in session %s", env.GetSeq(), m.Seq, m.Meta.GetSessionId()))
	}
	m.Seq = env.GetSeq()
	if env.GetType() == session.EventForked {
		out := m.foldFork(env)
		m.LastRule = out.Rule
		return out
	}
	held := len(m.Calls.Holds)
	begins := m.Calls.fold(env)
	m.Clocks.fold(m, env, len(m.Calls.Holds) < held)
	t := env.GetType()
	if session.IsLifecycle(t) {
		m.Lifecycle.Fold(env)
		return Outcome{Begins: begins || t == session.EventOpened}
	}
	if !session.IsTurn(t) {
		out := m.Turns.Fold(env)
		if t == session.EventOperator && m.foldOperator(env) {
			begins = true
		}
		out.Begins = begins
		return out
	}
	out := m.foldTurn(env)
	out.Begins = true
	if out.Rule != "" {
		m.LastRule = out.Rule
	}
	return out
}

// foldTurn folds a turn: a granted one aside from the session type's
// order, any other through it.
func (m *Machine) foldTurn(env *hubpb.Envelope) Outcome {
	from := env.GetFrom()
	if m.Meta.GetParentSessionId() != "" {
		m.Calls.noteTurn(env) // what a child will say to its caller
	}
	i := slices.Index(m.Calls.Granted, from)
	if i >= 0 {
		m.Calls.Granted = slices.Delete(m.Calls.Granted, i, i+1)
	}
	if i >= 0 && !slices.Contains(m.Turns.Expected(), from) {
		m.Turns.Aside(env)
		if r := FinishReason(env); r != "" {
			return Outcome{Close: r, Rule: "granted turn; finish(" + r + ")"}
		}
		return Outcome{Rule: "granted turn (a background result)"}
	}
	return m.Turns.Fold(env)
}

// Apply folds env and then the envelopes that fold decides, each stamped
// with the session, the next seq and env's time: the end of the session a
// fold decided (Outcome.Close, after withdrawing its pending questions),
// the open once the last invite is acknowledged (or at once when nobody is
// invited), the close after an invite reject or an auto_close violation.
// It returns them all, env first, with env's outcome (whose Trigger is the
// last of them that began a turn); the caller gives the follow-ups their
// ids.
func (m *Machine) Apply(env *hubpb.Envelope) ([]*hubpb.Envelope, Outcome) {
	out := m.Fold(env)
	if out.Begins {
		out.Trigger = env
	}
	all := []*hubpb.Envelope{env}
	closing := out.Close
	for next := m.follow(env, &closing); next != nil; next = m.follow(next, &closing) {
		next.SessionId, next.Seq, next.AcceptedAt = m.Meta.GetSessionId(), m.Seq+1, session.Stamp(session.Time(env.GetAcceptedAt()))
		if m.Fold(next).Begins {
			out.Trigger = next
		}
		all = append(all, next)
	}
	return all, out
}

// follow returns the envelope that must follow env, or nil; closing
// carries a decided end across the withdrawals that precede it.
func (m *Machine) follow(env *hubpb.Envelope, closing *string) *hubpb.Envelope {
	if m.Lifecycle.State.Ended() {
		return nil
	}
	switch t := env.GetType(); {
	case *closing != "":
	case t == session.EventInviteReject:
		*closing = session.ReasonInviteRejected
	case t == session.EventViolation && env.GetViolation().GetAction() == session.ActionAutoClose:
		*closing = session.ReasonExpectationViolated(env.GetViolation().GetExpectation())
	case (t == session.EventInvite || t == session.EventInviteAck) &&
		m.Lifecycle.State == session.StatePending && len(m.Lifecycle.Awaiting) == 0:
		return &hubpb.Envelope{Type: session.EventOpened}
	}
	if *closing == "" {
		return nil
	}
	return m.Ending(*closing)[0]
}

// Ending returns the unstamped envelopes that end the session with reason
// now: a question_closed for each pending question (its asker is released),
// then the end itself. The hub commits them in order.
func (m *Machine) Ending(reason string) []*hubpb.Envelope {
	var out []*hubpb.Envelope
	for _, id := range m.Calls.PendingIDs() {
		out = append(out, &hubpb.Envelope{Type: session.EventQuestionClosed,
			Payload: &hubpb.Envelope_QuestionClosed{QuestionClosed: &hubpb.QuestionClosed{QuestionId: id, Reason: "session_ended"}}})
	}
	return append(out, EndEnvelope(reason))
}

// EndEnvelope returns the unstamped envelope that ends a session with
// reason: session_expired for the reasons where the clock ran out,
// session_closed for every other.
func EndEnvelope(reason string) *hubpb.Envelope {
	return session.Ended(session.EndType(reason), reason)
}

// Expected returns who may speak next: nobody unless the session is open
// and no turn is held; else who the session type expects, and who a
// background result granted a turn.
func (m *Machine) Expected() []string {
	if m.Lifecycle.State != session.StateOpen || m.Calls.held() != nil {
		return nil
	}
	exp := m.Turns.Expected()
	for _, g := range m.Calls.Granted {
		if !slices.Contains(exp, g) {
			exp = append(slices.Clip(exp), g)
		}
	}
	return exp
}

// Usage returns the usage of the session's tree as far as the session
// knows it: its own, and what its ended children's results reported.
func (m *Machine) Usage() *hubpb.Usage {
	return session.AddUsage(m.Turns.Summary().Usage, m.Calls.ChildUsage)
}

// MarshalJSON returns the machine's state as deterministic JSON.
func (m *Machine) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq      uint64            `json:"seq"`
		Life     session.Lifecycle `json:"lifecycle"`
		State    State             `json:"state"`
		Calls    *Calls            `json:"calls,omitempty"`
		LastRule string            `json:"last_rule,omitempty"`
		Clocks   Clocks            `json:"clocks"`
	}{m.Seq, m.Lifecycle, m.Turns, m.calls(), m.LastRule, m.Clocks})
}

// calls returns the calls for the JSON form, nil when there is nothing
// (so sessions that never delegate or ask look as they always did).
func (m *Machine) calls() *Calls {
	c := m.Calls
	if len(c.Holds) == 0 && len(c.Questions) == 0 && len(c.Children) == 0 && len(c.Granted) == 0 &&
		c.Responder == "" && c.Result == "" && c.ChildUsage == nil {
		return nil
	}
	return &c
}
