package adapters

import (
	"fmt"
	"slices"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Clocks are the logged timestamps a session's deadlines derive from. They
// are folded from the log like the rest of the state, so a deadline is a
// pure function of the log and the time now.
type Clocks struct {
	LastTurnAt     time.Time `json:"last_turn_at,omitzero"`     // the last turn's acceptance
	LastActivityAt time.Time `json:"last_activity_at,omitzero"` // the last envelope from a participant
	// ResumedAt is when the last held turn was released (the answer, the
	// last awaited result), until a participant takes a turn: the turn's
	// timers, paused while it was held, count from it.
	ResumedAt time.Time   `json:"resumed_at,omitzero"`
	Fired     []time.Time `json:"fired,omitempty"` // per expectation: the period it last fired (or was cancelled) for
	// Extended, per expectation: an operator's extension of a period.
	Extended []Extension `json:"extended,omitempty"`
}

// fold records env's timestamps; released says whether env released a
// held turn.
func (c *Clocks) fold(m *Machine, env *hubpb.Envelope, released bool) {
	at := session.Time(env.GetAcceptedAt())
	if env.GetFrom() != "" {
		c.LastActivityAt = at
	}
	if session.IsTurn(env.GetType()) {
		c.LastTurnAt = at
		if env.GetFrom() != "" {
			c.ResumedAt = time.Time{} // both clocks above are at or past it
		}
	}
	if released {
		c.ResumedAt = at
	}
	if v := env.GetViolation(); v != nil && env.GetType() == session.EventViolation {
		c.growFired(len(m.Meta.GetExpectations()))
		if i := int(v.GetIndex()); i >= 0 && i < len(c.Fired) {
			c.Fired[i] = session.Time(v.GetSince())
		}
	}
}

// Deadline is one timer of a session: when it falls due and what it does
// then.
type Deadline struct {
	At time.Time
	// Index is the expectation's index in Meta.Expectations, or -1 for the
	// TTL and the invite timeout.
	Index int
	// Since is the start of the period the deadline measures.
	Since     time.Time
	Violators []string
	// End, for the TTL and the invite timeout, is the reason the session
	// ends with.
	End string
	// Question, for a question's deadline, is the question.
	Question *Pending
}

// AnswerWithin names the expectation a question's deadline reports.
const AnswerWithin = "answer_within"

// Deadlines returns the session's pending timers, earliest first (ties by
// expectation order). A timer whose period already fired is not pending.
// inviteTimeout applies when the metadata sets none.
func (m *Machine) Deadlines() []Deadline {
	life := &m.Lifecycle
	if life.State == 0 || life.State.Ended() {
		return nil
	}
	var out []Deadline
	if ttl := session.Duration(m.Meta.GetTtl()); ttl > 0 {
		out = append(out, Deadline{At: life.Created.Add(ttl), Index: -1, Since: life.Created, End: session.ReasonTTLExpired})
	}
	if it := session.Duration(m.Meta.GetInviteTimeout()); life.State == session.StatePending && it > 0 {
		out = append(out, Deadline{At: life.Created.Add(it), Index: -1, Since: life.Created,
			Violators: life.Awaiting, End: session.ReasonInviteTimeout})
	}
	for i, e := range m.Meta.GetExpectations() {
		since, violators, ok := m.period(e)
		if !ok || (i < len(m.Clocks.Fired) && m.Clocks.Fired[i].Equal(since)) {
			continue
		}
		at := since.Add(session.Duration(e.GetWithin()) + m.Clocks.extension(i, since))
		out = append(out, Deadline{At: at, Index: i, Since: since, Violators: violators})
	}
	for _, p := range m.Calls.Questions {
		if w := session.Duration(p.Question.GetWithin()); w > 0 && !p.Fired && life.State == session.StateOpen {
			out = append(out, Deadline{At: p.Asked.Add(w), Index: -1, Since: p.Asked,
				Violators: []string{p.Question.GetAnswerer()}, Question: p})
		}
	}
	slices.SortStableFunc(out, func(a, b Deadline) int { return a.At.Compare(b.At) })
	return out
}

// period returns when the period an expectation measures began and who
// would violate it, or false when it does not apply now.
//
// A held turn is not a stalled turn: while a turn is held (a question, a
// blocking delegation) nobody may speak, so turn_within, reply_within and
// max_silence do not apply, and from the release they measure a whole
// period again (Clocks.ResumedAt). The wait itself is the question's
// answer_within's, or the child session's own timers'.
func (m *Machine) period(e *hubpb.Expectation) (time.Time, []string, bool) {
	life := &m.Lifecycle
	c := &m.Clocks
	live := life.State == session.StateOpen && m.Calls.held() == nil
	switch e.GetName() {
	case session.AcksWithin:
		return life.Created, life.Awaiting, life.State == session.StatePending && len(life.Awaiting) > 0
	case session.TurnWithin:
		exp := m.Expected()
		return latest(life.Opened, c.LastTurnAt, c.ResumedAt), exp, live && len(exp) > 0
	case session.ReplyWithin:
		last := m.Turns.Summary().LastSpeaker
		others := slices.DeleteFunc(session.Names(m.Meta), func(n string) bool { return n == last })
		return latest(c.LastTurnAt, c.ResumedAt), others, live && !c.LastTurnAt.IsZero()
	case session.MaxSilence:
		return latest(life.Opened, c.LastActivityAt, c.ResumedAt), session.Names(m.Meta), live
	}
	return time.Time{}, nil, false
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// Next returns when the earliest pending timer falls due.
func (m *Machine) Next() (time.Time, bool) {
	ds := m.Deadlines()
	if len(ds) == 0 {
		return time.Time{}, false
	}
	return ds[0].At, true
}

// Due returns the envelopes the timers due at now write, unstamped (no seq,
// id or time): a violation per due expectation (to the violators for warn,
// to everyone for notify and auto_close), or the end of the session for the
// TTL or the invite timeout. Nothing follows an auto_close violation or an
// end: folding an auto_close violation with Apply writes the close. A
// deadline falls due when now is at or past it.
func (m *Machine) Due(now time.Time) []*hubpb.Envelope {
	var out []*hubpb.Envelope
	for _, d := range m.Deadlines() {
		if now.Before(d.At) {
			break
		}
		if d.Question != nil {
			q := questionDue(d)
			out = append(out, q)
			if q.GetType() == session.EventViolation && q.GetViolation().GetAction() == session.ActionAutoClose {
				return out
			}
			continue
		}
		if d.Index < 0 {
			return append(out, m.Ending(d.End)...)
		}
		e := m.Meta.GetExpectations()[d.Index]
		v := &hubpb.Envelope{Type: session.EventViolation, Payload: &hubpb.Envelope_Violation{Violation: &hubpb.Violation{
			Expectation: e.GetName(), Index: int32(d.Index), Action: e.GetAction(), Since: session.Stamp(d.Since),
			Violators: d.Violators, Detail: session.ExpectationString(e) + " not met"}}}
		if e.GetAction() == session.ActionWarn {
			v.Audience = session.Only(d.Violators...)
		}
		out = append(out, v)
		if e.GetAction() == session.ActionAutoClose {
			return out
		}
	}
	return out
}

// questionDue returns what a question's deadline writes: the default
// option as the hub's answer, or a violation (to the answerer for warn, to
// everyone for notify and auto_close; folding an auto_close one with Apply
// closes the session).
func questionDue(d Deadline) *hubpb.Envelope {
	q := d.Question.Question
	if q.GetOnDeadline() == "default" {
		return &hubpb.Envelope{Type: session.EventAnswer, Payload: &hubpb.Envelope_Answer{Answer: &hubpb.Answer{
			QuestionId: q.GetQuestionId(), OptionIds: []string{q.GetDefaultOption()}, Defaulted: true}}}
	}
	v := &hubpb.Envelope{Type: session.EventViolation, Payload: &hubpb.Envelope_Violation{Violation: &hubpb.Violation{
		Expectation: AnswerWithin, Index: -1, Action: q.GetOnDeadline(), Since: session.Stamp(d.Since), Violators: d.Violators,
		QuestionId: q.GetQuestionId(),
		Detail:     fmt.Sprintf("question %q not answered by %q within %v", q.GetQuestionId(), q.GetAnswerer(), session.Duration(q.GetWithin()))}}}
	if q.GetOnDeadline() == session.ActionWarn {
		v.Audience = session.Only(d.Violators...)
	}
	return v
}
