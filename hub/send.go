package hub

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

// Ack is the answer to an accepted change.
type Ack struct {
	Seq        uint64
	ID         uuid.UUID
	AcceptedAt time.Time
	// Duplicate: a retry of an envelope already accepted (same sender and
	// client message id); nothing was written and Seq is the original's.
	Duplicate bool
	// Closed: the change ended the session (with Reason).
	Closed bool
	Reason string
}

// Send appends an envelope from the authenticated agent from to session id,
// through the send path of the package doc. env.From is overwritten with
// from, and the hub's fields (seq, id, time) with the hub's. Rejections
// write nothing and wrap the protocol sentinels of packages session and
// adapters, or ErrUnknownSession / ErrTooLarge / ErrSessionFailed.
func (h *Hub) Send(ctx context.Context, from string, id session.ID, env *session.Envelope) (Ack, error) {
	if err := h.enter(); err != nil {
		return Ack{}, err
	}
	defer h.leave()
	if err := session.CheckName(from); err != nil {
		return Ack{}, fmt.Errorf("sender: %w", err) // "" would be the hub itself
	}
	s, err := h.lookup(id)
	if err != nil {
		return Ack{}, err
	}
	if err := s.acquire(ctx); err != nil {
		return Ack{}, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return Ack{}, err
	}
	e := *env
	e.From, e.Session, e.ID = from, id, uuid.Nil
	if e.ClientMsgID != "" {
		if seq, ok := s.dedup[dedupKey(from, e.ClientMsgID)]; ok {
			return h.duplicate(ctx, s, seq)
		}
	}
	if err := s.m.Admit(&e); err != nil {
		h.rejected(s.id, from, e.Type, err)
		return Ack{}, err
	}
	all, err := h.commit(ctx, s, []*session.Envelope{&e}, nil)
	if err != nil {
		h.rejected(s.id, from, e.Type, err)
		return Ack{}, err
	}
	return ackOf(all), nil
}

func ackOf(all []*session.Envelope) Ack {
	first, last := all[0], all[len(all)-1]
	a := Ack{Seq: first.Seq, ID: first.ID, AcceptedAt: first.AcceptedAt}
	if last.Type.Ends() {
		a.Closed = true
		if p, ok := last.Payload.(session.Ended); ok {
			a.Reason = p.Reason
		}
	}
	return a
}

// duplicate answers a retry with the original envelope's seq, id and time.
func (h *Hub) duplicate(ctx context.Context, s *sess, seq uint64) (Ack, error) {
	a := Ack{Seq: seq, Duplicate: true}
	err := h.log.Scan(ctx, s.id, seq, func(got uint64, data []byte) error {
		e, err := session.DecodeEnvelope(data)
		if err != nil {
			return err
		}
		a.ID, a.AcceptedAt = e.ID, e.AcceptedAt
		return errStop
	})
	if err != nil && err != errStop {
		return Ack{}, fmt.Errorf("reading seq %d of session %v: %w", seq, s.id, err)
	}
	return a, nil
}

func (h *Hub) rejected(id session.ID, from string, t session.EventType, err error) {
	if f := h.cfg.Hooks.Rejected; f != nil {
		f(id, from, t, err)
	}
}

// AckInvite acknowledges agent's invite to session id; the last ack opens
// the session in the same write.
func (h *Hub) AckInvite(ctx context.Context, agent string, id session.ID) (Ack, error) {
	return h.Send(ctx, agent, id, &session.Envelope{Type: session.EventInviteAck})
}

// RejectInvite rejects agent's invite; the session closes with
// "invite_rejected" in the same write.
func (h *Hub) RejectInvite(ctx context.Context, agent string, id session.ID, reason string) (Ack, error) {
	if reason == "" {
		reason = "declined"
	}
	return h.Send(ctx, agent, id, &session.Envelope{Type: session.EventInviteReject, Payload: session.Ended{Reason: reason}})
}

// CloseSession closes session id on behalf of agent, who must be its
// creator unless operator is true. reason defaults to "explicit_close".
func (h *Hub) CloseSession(ctx context.Context, agent string, operator bool, id session.ID, reason string) (Ack, error) {
	if err := h.enter(); err != nil {
		return Ack{}, err
	}
	defer h.leave()
	s, err := h.lookup(id)
	if err != nil {
		return Ack{}, err
	}
	if !operator && agent != s.meta.Creator {
		return Ack{}, fmt.Errorf("only the creator %q (or an operator) closes session %v, not %q: %w", s.meta.Creator, id, agent, ErrPermissionDenied)
	}
	if reason == "" {
		reason = session.ReasonExplicitClose
	}
	if err := s.acquire(ctx); err != nil {
		return Ack{}, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return Ack{}, err
	}
	e := &session.Envelope{Type: session.EventClosed, Payload: session.Ended{Reason: reason}, Audience: session.Everyone()}
	if err := s.m.Admit(e); err != nil {
		return Ack{}, err
	}
	all, err := h.commit(ctx, s, []*session.Envelope{e}, nil)
	if err != nil {
		return Ack{}, err
	}
	return ackOf(all), nil
}
