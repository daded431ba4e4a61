package hub

import (
	"context"
	"errors"

	"github.com/hubd/hubd/session"
)

// runTimers writes what a session's due timers decide, through the commit
// path, and reschedules it.
func (h *Hub) runTimers(s *Session) {
	if h.gate.enter() != nil {
		return
	}
	defer h.gate.leave()
	ctx := context.Background()
	s.hold()
	defer s.release()
	if s.gone.Load() {
		return // unloaded while due: its new owner runs its timers
	}
	if err := h.ready(ctx, s); errors.Is(err, errNotWritten) {
		return // a new session whose first write did not land: forgotten
	} else if err != nil {
		h.cfg.Logger.Error().Err(err).Str("session", s.id.String()).Msg("session not reloaded; retrying")
		h.sched.retry(s, h.cfg.Clock.Now().Add(timerRetry))
		return
	}
	// A timer's envelopes belong to the trace of the turn they time.
	ctx, span := h.spans.start(continueTrace(ctx, s.trigger), spanTimers, s.id)
	defer span.End()
	for {
		envs := s.m.Due(h.stamp(s))
		if len(envs) == 0 {
			h.sched.update(s)
			return
		}
		// Many firings at once (a session with many expectations or
		// question deadlines) are written a bounded number per write, so
		// that each write fits the log's; the rest are due again at once.
		more := len(envs) > maxTimerWrite
		envs = envs[:min(len(envs), maxTimerWrite)]
		all, err := h.commit(ctx, s, envs, nil)
		if errors.Is(err, ErrStorageFailed) {
			return // nothing is written until a restart, which fires them
		}
		if err != nil {
			// Nothing was written: the deadlines are still due; try again.
			h.cfg.Logger.Error().Err(err).Str("session", s.id.String()).Msg("timer envelopes not written; retrying")
			h.sched.retry(s, h.cfg.Clock.Now().Add(timerRetry))
			return
		}
		if f := h.cfg.Hooks.TimerFired; f != nil {
			for _, e := range all {
				if e.GetFrom() == "" && (e.GetType() == session.EventViolation || session.Ends(e.GetType())) {
					f(s.id, e)
				}
			}
		}
		if !more {
			return
		}
	}
}

// maxTimerWrite bounds the timer envelopes of one session written at once:
// 256 violations, each well under 1 KiB stored, stay far below the log's
// smallest batch.
const maxTimerWrite = 256
