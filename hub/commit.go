package hub

import (
	"context"
	"fmt"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// commit stamps, applies and appends envs, in order, to the locked session
// s, with meta when these are its first records. The first envelope is
// checked against the size limit before anything is applied. On success it
// runs the post-commit work (indexes, timers, delivery) and returns every
// envelope written, follow-ups included.
func (h *Hub) commit(ctx context.Context, s *sess, envs []*hubpb.Envelope, meta []byte) ([]*hubpb.Envelope, error) {
	now := session.Stamp(h.stamp(s))
	var all []*hubpb.Envelope
	recs := make([]LogRecord, 0, len(envs)+1)
	for i, e := range envs {
		if s.m.Lifecycle.State.Ended() {
			break
		}
		e.SessionId, e.Seq, e.AcceptedAt = s.meta.GetSessionId(), s.m.Seq+1, now
		if e.GetId() == "" {
			e.Id = h.newID().String()
		}
		data, err := session.MarshalEnvelope(e)
		if err != nil {
			return nil, fmt.Errorf("encoding seq %d: %v: %w", e.GetSeq(), err, session.ErrMalformed)
		}
		if i == 0 && len(data) > h.cfg.MaxEnvelopeBytes {
			return nil, fmt.Errorf("envelope is %d bytes stored, the limit is %d: %w", len(data), h.cfg.MaxEnvelopeBytes, ErrTooLarge)
		}
		applied, out := s.m.Apply(e)
		if out.Rule != "" {
			e.Rule = out.Rule
			if data, err = session.MarshalEnvelope(e); err != nil {
				panic(fmt.Sprintf("hub: encoding seq %d with its rule: %v", e.GetSeq(), err))
			}
		}
		recs = append(recs, LogRecord{Seq: e.GetSeq(), Data: data})
		for _, x := range applied[1:] {
			x.Id = h.newID().String()
			b, err := session.MarshalEnvelope(x)
			if err != nil {
				panic(fmt.Sprintf("hub: encoding a follow-up envelope: %v", err))
			}
			recs = append(recs, LogRecord{Seq: x.GetSeq(), Data: b})
		}
		all = append(all, applied...)
	}
	if len(all) == 0 {
		return nil, nil
	}
	// The fold has run: from here the outcome must not depend on the
	// caller giving up, or memory would run ahead of the log.
	if err := h.wal.Append(context.WithoutCancel(ctx), LogWrite{Session: s.id, Meta: meta, Records: recs}); err != nil {
		h.fail(s, err)
		return nil, fmt.Errorf("session %v: the write-ahead log did not take seq %d: %v: %w", s.id, all[0].GetSeq(), err, ErrSessionFailed)
	}
	h.committed(s, all)
	return all, nil
}

// stamp returns the acceptance time of the next change: the clock, never
// earlier than the session's last acceptance, in UTC without a monotonic
// reading (the log keeps nanoseconds).
func (h *Hub) stamp(s *sess) time.Time {
	now := h.clock.Now().UTC().Round(0)
	if now.Before(s.lastAt) {
		now = s.lastAt
	}
	return now
}

// fail marks s failed after a write the log did not take: its in-memory
// state may be ahead of the log, so it is rebuilt from the log before the
// next change (see ready).
func (h *Hub) fail(s *sess, err error) {
	s.failed = err
	h.logger.Error().Err(err).Str("session", s.id.String()).Uint64("seq", s.m.Seq).Msg("write-ahead log append failed; session fails until reloaded")
	if f := h.cfg.Hooks.SessionFailed; f != nil {
		f(s.id, err)
	}
}

// ready makes sure a locked session's state matches its log, reloading it
// after a failed write.
func (h *Hub) ready(ctx context.Context, s *sess) error {
	if s.failed == nil {
		return nil
	}
	fresh, err := h.load(ctx, s.id, s.meta)
	if err != nil {
		return fmt.Errorf("session %v failed (%v) and could not be reloaded: %v: %w", s.id, s.failed, err, ErrSessionFailed)
	}
	h.logger.Info().Str("session", s.id.String()).Uint64("seq", fresh.m.Seq).Msg("session reloaded from the write-ahead log")
	s.m, s.dedup, s.trigger, s.lastAt, s.failed = fresh.m, fresh.dedup, fresh.trigger, fresh.lastAt, nil
	return nil
}

// observe records what the hub derives from each envelope besides the
// machine: idempotency answers, the current turn's trigger, the last time.
func (s *sess) observe(e *hubpb.Envelope) {
	if k, from := e.GetClientMsgId(), e.GetFrom(); k != "" && from != "" {
		if s.dedup == nil {
			s.dedup = map[string]uint64{}
		}
		s.dedup[dedupKey(from, k)] = e.GetSeq()
	}
	if startsTurn(e) {
		s.trigger = e
	}
	if at := session.Time(e.GetAcceptedAt()); at.After(s.lastAt) {
		s.lastAt = at
	}
}

// startsTurn reports whether e begins a turn: a turn, or the open.
func startsTurn(e *hubpb.Envelope) bool {
	return session.IsTurn(e.GetType()) || e.GetType() == session.EventOpened
}

// committed runs after a successful append: derived state, indexes, hooks,
// timers and delivery.
func (h *Hub) committed(s *sess, all []*hubpb.Envelope) {
	before := session.State(s.state.Load())
	newTurn := false
	for _, e := range all {
		s.observe(e)
		newTurn = newTurn || startsTurn(e)
		if f := h.cfg.Hooks.Accepted; f != nil {
			f(e)
		}
	}
	after := s.m.Lifecycle.State
	s.publish()
	if after.Ended() && !before.Ended() {
		h.mu.Lock()
		h.openCount[s.meta.GetCreator()]--
		h.mu.Unlock()
		if f := h.cfg.Hooks.Closed; f != nil {
			f(s.id, after, s.m.Lifecycle.Reason)
		}
	}
	h.sched.update(s)
	h.deliver(s, all, newTurn)
}
