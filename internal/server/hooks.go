package server

import (
	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// logHooks returns hooks that say what the hub does, then call next's
// hooks (the caller's, from Config.Hub.Hooks):
//
//   - info: a session opened (session, type, creator, invitees), closed
//     (session, state, reason), or a timer fired (session, seq and the
//     expectation, action and violators, or the type and reason of the end
//     it wrote);
//   - debug: every envelope accepted (session, seq, agent unless the hub
//     wrote it, type) and every send refused (session, agent, type, reason,
//     err).
//
// A failed session is not logged here: the hub logs it at error where it
// handles the failure, and a second line would say the same.
func logHooks(lg zerolog.Logger, next hub.Hooks) hub.Hooks {
	h := next
	h.Opened = func(m *hubpb.SessionMeta) {
		lg.Info().Str("session", m.GetSessionId()).Str("type", m.GetType()).Str("creator", m.GetCreator()).
			Strs("participants", session.Names(m)).Strs("invitees", session.Invitees(m)).Msg("session opened")
		if next.Opened != nil {
			next.Opened(m)
		}
	}
	h.Closed = func(id session.ID, state session.State, reason string) {
		lg.Info().Str("session", id.String()).Str("state", state.String()).Str("reason", reason).Msg("session closed")
		if next.Closed != nil {
			next.Closed(id, state, reason)
		}
	}
	h.TimerFired = func(id session.ID, env *hubpb.Envelope) {
		logTimer(lg, id, env)
		if next.TimerFired != nil {
			next.TimerFired(id, env)
		}
	}
	h.Rejected = func(id session.ID, from, eventType string, err error) {
		logRejected(lg, id, from, eventType, err)
		if next.Rejected != nil {
			next.Rejected(id, from, eventType, err)
		}
	}
	if debugOn(lg) {
		h.Accepted = func(env *hubpb.Envelope) {
			ev := lg.Debug().Str("session", env.GetSessionId()).Uint64("seq", env.GetSeq())
			if from := env.GetFrom(); from != "" {
				ev = ev.Str("agent", from) // none: the hub wrote it
			}
			ev.Str("type", env.GetType()).Msg("envelope accepted")
			if next.Accepted != nil {
				next.Accepted(env)
			}
		}
	}
	return h
}

// logTimer logs an envelope a timer wrote: a violation or an end.
func logTimer(lg zerolog.Logger, id session.ID, env *hubpb.Envelope) {
	ev := lg.Info().Str("session", id.String()).Uint64("seq", env.GetSeq()).Str("type", env.GetType())
	if v := env.GetViolation(); v != nil {
		ev = ev.Str("expectation", v.GetExpectation()).Str("action", v.GetAction()).Strs("violators", v.GetViolators())
	}
	if e := env.GetEnded(); e != nil {
		ev = ev.Str("reason", e.GetReason())
	}
	ev.Msg("timer fired")
}

// logRejected logs a refused send with its stable reason.
func logRejected(lg zerolog.Logger, id session.ID, from, eventType string, err error) {
	reason := hubpb.Reason_INTERNAL
	if r, ok := session.ReasonOf(err); ok {
		reason = r
	}
	lg.Debug().Str("session", id.String()).Str("agent", from).Str("type", eventType).Str("reason", reason.String()).
		Str("err", session.Detail(err)).Msg("send rejected")
}

// debugOn reports whether lg writes debug lines.
func debugOn(lg zerolog.Logger) bool {
	ev := lg.Debug()
	defer ev.Discard()
	return ev.Enabled()
}
