package adapters

import (
	"slices"
	"time"

	"github.com/hubd/hubd/session"
)

// Clocks are the logged timestamps a session's deadlines derive from. They
// are folded from the log like the rest of the state, so a deadline is a
// pure function of the log and the time now.
type Clocks struct {
	LastTurnAt     time.Time   `json:"last_turn_at,omitzero"`     // the last turn's acceptance
	LastActivityAt time.Time   `json:"last_activity_at,omitzero"` // the last envelope from a participant
	Fired          []time.Time `json:"fired,omitempty"`           // per expectation: the period it last fired for
}

// fold records env's timestamps.
func (c *Clocks) fold(m *Machine, env *session.Envelope) {
	if env.From != "" {
		c.LastActivityAt = env.AcceptedAt
	}
	if env.Type.Substantive() {
		c.LastTurnAt = env.AcceptedAt
	}
	if v, ok := env.Payload.(session.Violation); ok && env.Type == session.EventViolation {
		if len(c.Fired) < len(m.Meta.Expectations) {
			c.Fired = append(c.Fired, make([]time.Time, len(m.Meta.Expectations)-len(c.Fired))...)
		}
		if v.Index >= 0 && v.Index < len(c.Fired) {
			c.Fired[v.Index] = v.Since
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
}

// Deadlines returns the session's pending timers, earliest first (ties by
// expectation order). A timer whose period already fired is not pending.
// inviteTimeout applies when the metadata sets none.
func (m *Machine) Deadlines() []Deadline {
	if m.Life.State == 0 || m.Life.State.Ended() {
		return nil
	}
	var out []Deadline
	if m.Meta.TTL > 0 {
		out = append(out, Deadline{At: m.Life.Created.Add(m.Meta.TTL), Index: -1, Since: m.Life.Created, End: session.ReasonTTLExpired})
	}
	if m.Life.State == session.StatePending && m.Meta.InviteTimeout > 0 {
		out = append(out, Deadline{At: m.Life.Created.Add(m.Meta.InviteTimeout), Index: -1, Since: m.Life.Created,
			Violators: m.Life.Awaiting, End: session.ReasonInviteTimeout})
	}
	for i, e := range m.Meta.Expectations {
		since, violators, ok := m.period(e)
		if !ok || (i < len(m.Clocks.Fired) && m.Clocks.Fired[i].Equal(since)) {
			continue
		}
		out = append(out, Deadline{At: since.Add(e.Within), Index: i, Since: since, Violators: violators})
	}
	slices.SortStableFunc(out, func(a, b Deadline) int { return a.At.Compare(b.At) })
	return out
}

// period returns when the period an expectation measures began and who
// would violate it, or false when it does not apply now.
func (m *Machine) period(e session.Expectation) (time.Time, []string, bool) {
	open := m.Life.State == session.StateOpen
	switch e.Name {
	case session.AcksWithin:
		return m.Life.Created, m.Life.Awaiting, m.Life.State == session.StatePending && len(m.Life.Awaiting) > 0
	case session.TurnWithin:
		exp := m.Expected()
		return latest(m.Life.Opened, m.Clocks.LastTurnAt), exp, open && len(exp) > 0
	case session.ReplyWithin:
		last := m.State.Summary().LastSpeaker
		others := slices.DeleteFunc(m.Meta.Names(), func(n string) bool { return n == last })
		return m.Clocks.LastTurnAt, others, open && !m.Clocks.LastTurnAt.IsZero()
	case session.MaxSilence:
		return latest(m.Life.Opened, m.Clocks.LastActivityAt), m.Meta.Names(), open
	}
	return time.Time{}, nil, false
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
func (m *Machine) Due(now time.Time) []*session.Envelope {
	var out []*session.Envelope
	for _, d := range m.Deadlines() {
		if now.Before(d.At) {
			break
		}
		if d.Index < 0 {
			return append(out, endEnvelope(m.Meta.ID, d.End))
		}
		e := m.Meta.Expectations[d.Index]
		v := &session.Envelope{Session: m.Meta.ID, Type: session.EventViolation, Payload: session.Violation{
			Expectation: e.Name, Index: d.Index, Action: e.Action, Since: d.Since,
			Violators: d.Violators, Detail: e.String() + " not met"}}
		if e.Action == session.ActionWarn {
			v.Audience = session.Only(d.Violators...)
		}
		out = append(out, v)
		if e.Action == session.ActionAutoClose {
			return out
		}
	}
	return out
}

func endEnvelope(id session.ID, reason string) *session.Envelope {
	return &session.Envelope{Session: id, Type: session.EndType(reason), Payload: session.Ended{Reason: reason}}
}
