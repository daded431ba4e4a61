package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ready makes sure a locked session's state matches its log, reloading it
// after a failed write. A failed append may have landed all the same (a
// replicated log that timed out after the write): what the log took beyond
// what was delivered is then delivered now, as if just committed, so that
// the next speaker is told its turn and watchers see every seq. Every
// failed session of the tree is reloaded with it: one write may span
// several of them.
func (h *Hub) ready(ctx context.Context, s *Session) error {
	if s.dropped {
		return notWritten(s)
	}
	if s.failed == nil {
		return nil
	}
	var failed []*Session
	for _, x := range treeOf(s) {
		if x.failed != nil {
			failed = append(failed, x)
		}
	}
	for _, x := range failed {
		if err := h.reload(ctx, x); err != nil {
			return err
		}
	}
	if s.dropped {
		return notWritten(s)
	}
	return nil
}

// errNotWritten is why a new session whose append failed is not served:
// its reload found nothing of it in the log (see forget).
var errNotWritten = errors.New("its open was not written")

// notWritten is the error of a call that reaches a forgotten session.
func notWritten(s *Session) error {
	return fmt.Errorf("no session %v: %w: %w", s.id, errNotWritten, ErrUnknownSession)
}

// reload rebuilds a failed session from its log and delivers what the log
// took beyond the last seq delivered; the caller holds the tree's lock.
func (h *Hub) reload(ctx context.Context, s *Session) error {
	fresh, err := h.load(ctx, s.id, s.meta)
	if err != nil {
		return fmt.Errorf("session %v failed (%v) and could not be reloaded: %v: %w", s.id, s.failed, err, ErrSessionFailed)
	}
	delivered, before := s.lastSeq.Load(), session.State(s.state.Load())
	if delivered == 0 && fresh.m.Seq == 0 {
		h.forget(s)
		return nil
	}
	var landed []*hubpb.Envelope
	if fresh.m.Seq > delivered {
		if landed, err = h.readFrom(ctx, s, delivered+1, 0); err != nil {
			return fmt.Errorf("session %v failed (%v) and its log could not be read: %v: %w", s.id, s.failed, err, ErrSessionFailed)
		}
	}
	storageFailed := errors.Is(s.failed, ErrStorageFailed)
	if !errors.Is(s.failed, errPlanAbandoned) && !storageFailed {
		h.cfg.Logger.Info().Str("session", s.id.String()).Uint64("seq", fresh.m.Seq).Int("landed", len(landed)).
			Msg("session reloaded from the write-ahead log")
	}
	s.m, s.dedup, s.trigger, s.turnKids, s.lastAt, s.failed = fresh.m, fresh.dedup, fresh.trigger, fresh.turnKids, fresh.lastAt, nil
	if t := fresh.Tail(); t != nil {
		s.tail.Store(t)
	}
	if len(landed) == 0 || s.gone.Load() || storageFailed {
		// Unloaded (its partition moved): what landed is its new owner's
		// to tell, from the log it reads. Or the storage failed: what
		// landed was never made durable, and is not told.
		s.publish()
		return nil
	}
	if f := h.cfg.Hooks.Opened; f != nil && delivered == 0 {
		f(s.meta) // a new session whose open landed although its append failed
	}
	newTurn := s.trigger.GetSeq() > delivered
	for _, e := range landed {
		if newTurn && e.GetSeq() == s.trigger.GetSeq() {
			s.trigger = e // the envelope delivered is the one told as the turn's
		}
	}
	x := h.took(s, landed, before, newTurn)
	h.feed.Committed(&Commit{Parts: []Part{x.Part}})
	if x.ended {
		h.retire(s)
	}
	return nil
}

// forget drops a new session whose first write failed and did not land
// (its reload found nothing in the log): it leaves the hub's indexes and
// its parent; the caller holds its tree's lock.
func (h *Hub) forget(s *Session) {
	h.unreserve(s, s.meta.GetOpenKey())
	s.failed, s.dropped = nil, true
	s.gone.Store(true)
	if p := s.parent; p != nil {
		p.kids = slices.DeleteFunc(p.kids, func(k *Session) bool { return k == s })
	}
}

// readFrom reads session s's envelopes from seq on, at most n of them (0:
// all).
func (h *Hub) readFrom(ctx context.Context, s *Session, seq uint64, n int) ([]*hubpb.Envelope, error) {
	var out []*hubpb.Envelope
	err := h.cfg.Log.Scan(ctx, s.id, seq, func(_ uint64, data []byte) error {
		if n > 0 && len(out) == n {
			return errStop
		}
		e, err := s.decode(data)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

// fail marks s failed after a write the log did not take: its in-memory
// state may be ahead of the log, so it is rebuilt from the log before the
// next change (see ready).
func (h *Hub) fail(s *Session, err error) {
	s.failed = err
	h.cfg.Logger.Error().Err(err).Str("session", s.id.String()).Uint64("seq", s.m.Seq).Msg("write-ahead log append failed; session fails until reloaded")
	if f := h.cfg.Hooks.SessionFailed; f != nil {
		f(s.id, err)
	}
}
