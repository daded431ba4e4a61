package metrics

import (
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Hooks returns hooks that count what the hub does, then call next's
// hooks: envelopes written and agents' sends accepted (Accepted), sends
// refused by reason (Rejected), sessions opened and ended (Opened,
// Closed), timer firings by action (TimerFired), failed sessions
// (SessionFailed) and refusals at a limit (Limited). Labels are bounded: session types, stable reasons,
// states and actions, never ids.
func (m *Metrics) Hooks(next hub.Hooks) hub.Hooks {
	h := next
	h.Accepted = func(env *hubpb.Envelope) {
		m.accepted(env)
		if next.Accepted != nil {
			next.Accepted(env)
		}
	}
	h.Rejected = func(id session.ID, from, eventType string, err error) {
		reason := hubpb.Reason_INTERNAL
		if r, ok := session.ReasonOf(err); ok {
			reason = r
		}
		m.sendsRejected.WithLabelValues(m.typeOf(id), reason.String()).Inc()
		if next.Rejected != nil {
			next.Rejected(id, from, eventType, err)
		}
	}
	h.Opened = func(meta *hubpb.SessionMeta) {
		m.opened.WithLabelValues(meta.GetType()).Inc()
		if id, err := session.ParseID(meta.GetSessionId()); err == nil {
			m.types.add(id, meta.GetType())
			m.flush(id, meta.GetType())
		}
		if next.Opened != nil {
			next.Opened(meta)
		}
	}
	h.Closed = func(id session.ID, state session.State, reason string) {
		m.ended.WithLabelValues(m.typeOf(id), state.String()).Inc()
		if next.Closed != nil {
			next.Closed(id, state, reason)
		}
	}
	h.TimerFired = func(id session.ID, env *hubpb.Envelope) {
		if action := timerAction(env); action != "" {
			m.timers.WithLabelValues(action).Inc()
		}
		if next.TimerFired != nil {
			next.TimerFired(id, env)
		}
	}
	h.Limited = func(limit string) {
		m.Limited(limit)
		if next.Limited != nil {
			next.Limited(limit)
		}
	}
	h.SessionFailed = func(id session.ID, err error) {
		m.failures.Inc()
		if next.SessionFailed != nil {
			next.SessionFailed(id, err)
		}
	}
	return h
}

// accepted counts an envelope written. Without the hub's TypeOf, a new
// session's first envelopes are written before the Opened hook tells the
// index its type: they wait (see typeIndex.defer) and are counted then.
func (m *Metrics) accepted(env *hubpb.Envelope) {
	agent := env.GetFrom() != ""
	id, err := session.ParseID(env.GetSessionId())
	typ := ""
	if err == nil {
		typ = m.types.get(id)
	}
	if typ == "" && err == nil && m.types.wait(id, agent) {
		return
	}
	m.count(orUnknown(typ), 1, agent)
}

// count adds n envelopes written to a type's counters, as agents' sends
// when agent.
func (m *Metrics) count(typ string, n int, agent bool) {
	m.envelopes.WithLabelValues(typ).Add(float64(n))
	if agent {
		m.sendsAccepted.WithLabelValues(typ).Add(float64(n))
	}
}

// flush counts the envelopes of a session that waited for its type.
func (m *Metrics) flush(id session.ID, typ string) {
	all, agents := m.types.release(id)
	if all > agents {
		m.count(typ, all-agents, false)
	}
	if agents > 0 {
		m.count(typ, agents, true)
	}
}

func orUnknown(typ string) string {
	if typ == "" {
		return unknownType
	}
	return typ
}

// timerAction names what a timer's envelope did: a violation's action, or
// the end a deadline wrote (ttl_expired, invite_timeout). The close an
// auto_close violation causes is not counted again ("").
func timerAction(env *hubpb.Envelope) string {
	if v := env.GetViolation(); v != nil {
		return v.GetAction()
	}
	switch r := env.GetEnded().GetReason(); r {
	case session.ReasonTTLExpired, session.ReasonInviteTimeout:
		return r
	}
	return ""
}
