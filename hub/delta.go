package hub

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Defaults of the limits on deltas (see Config).
const (
	DefaultMaxDeltasPerSecond   = 200
	DefaultMaxDeltaBytesPerTurn = 1 << 20
)

// deltaMeter counts the deltas of a session's current turn against the
// limits; guarded by the tree's lock.
type deltaMeter struct {
	trigger uint64    // seq of the envelope that began the turn metered
	bytes   int       // text forwarded on that turn
	window  time.Time // start of the current second
	count   int       // deltas forwarded in it
}

// SendDelta forwards d, a piece of the reply the authenticated agent from is
// writing on its turn in session id, to the hub's consumer, and writes
// nothing. It is refused as a text send from from would be (UNKNOWN_SESSION,
// NOT_PARTICIPANT, SESSION_CLOSED, SESSION_NOT_OPEN, OUT_OF_TURN,
// TURN_HELD, ...), when it names another sender (IMPERSONATION) or has no
// stream_id (MALFORMED), and past the limits on deltas (LIMIT_REACHED).
// The hub stamps d's session, sender and time; it takes ownership of d.
func (h *Hub) SendDelta(ctx context.Context, from string, id session.ID, d *hubpb.Delta) (*hubpb.DeltaResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	if err := checkDelta(from, id, d); err != nil {
		return nil, err
	}
	s, err := h.lookupFor(ctx, id, from, false)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	// The same turn check as a text turn's, on a probe that is never
	// written: Admit changes nothing.
	probe := &hubpb.Envelope{SessionId: s.meta.GetSessionId(), From: from, Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "delta"}}}
	if err := s.m.Admit(probe); err != nil {
		return nil, err
	}
	now := h.cfg.Clock.Now()
	if err := h.meter(s, d, now); err != nil {
		return nil, err
	}
	d.SessionId, d.From, d.AcceptedAt = s.meta.GetSessionId(), from, timestamppb.New(now)
	h.feed.Delta(s, d)
	return &hubpb.DeltaResponse{Index: d.GetIndex(), AcceptedAt: d.GetAcceptedAt()}, nil
}

// checkDelta refuses a delta that names another sender or session, or no
// stream.
func checkDelta(from string, id session.ID, d *hubpb.Delta) error {
	if err := session.CheckName(from); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	if d == nil {
		return fmt.Errorf("delta is required: %w", session.ErrMalformed)
	}
	if f := d.GetFrom(); f != "" && f != from {
		return fmt.Errorf("the delta says it is from %q but the caller is %q: %w", f, from, ErrImpersonation)
	}
	if sid := d.GetSessionId(); sid != "" {
		if got, err := session.ParseID(sid); err != nil || got != id {
			return fmt.Errorf("delta.session_id %q differs from the session %v sent to: %w", sid, id, session.ErrMalformed)
		}
	}
	if d.GetStreamId() == "" {
		return fmt.Errorf("delta.stream_id is required: the client_msg_id the reply's final envelope will carry: %w", session.ErrMalformed)
	}
	return nil
}

// meter counts d against the limits on deltas of s's current turn, or
// refuses it; the tree's lock is held.
func (h *Hub) meter(s *Session, d *hubpb.Delta, now time.Time) error {
	m := &s.deltas
	if t := s.trigger.GetSeq(); m.trigger != t || m.window.IsZero() {
		*m = deltaMeter{trigger: t, window: now}
	}
	if now.Sub(m.window) >= time.Second {
		m.window, m.count = now, 0
	}
	if max := h.cfg.MaxDeltasPerSecond; max > 0 && m.count >= max {
		return h.limitErr("--max-deltas-per-second", max, ErrLimit,
			"session %v had %d deltas in the last second", s.id, m.count)
	}
	n := len(d.GetText())
	if max := h.cfg.MaxDeltaBytesPerTurn; max > 0 && m.bytes+n > max {
		return h.limitErr("--max-delta-bytes-per-turn", max, ErrLimit,
			"the deltas of this turn of session %v hold %d bytes of text, %d more would pass the limit", s.id, m.bytes, n)
	}
	m.count++
	m.bytes += n
	return nil
}
