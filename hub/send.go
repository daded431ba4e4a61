package hub

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Send appends an envelope from the authenticated agent from to session id,
// through the send path of the package doc, and acknowledges it once it is
// durable. Send takes ownership of env: the hub stamps it (from, session,
// seq, id, time; a protocol spelling of its type in the stored form) and
// keeps it for delivery, so the caller must not use it afterwards.
// Rejections write nothing and wrap the protocol sentinels of packages
// session and adapters, or ErrUnknownSession / ErrTooLarge /
// ErrSessionFailed.
func (h *Hub) Send(ctx context.Context, from string, id session.ID, env *hubpb.Envelope) (*hubpb.SendResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	if err := session.CheckName(from); err != nil {
		return nil, fmt.Errorf("sender: %w", err) // "" would be the hub itself
	}
	if env == nil {
		return nil, fmt.Errorf("envelope is required: %w", session.ErrMalformed)
	}
	t, err := session.ParseEventType(env.GetType())
	if err != nil {
		return nil, err
	}
	if err := checkHeader(env, from, id); err != nil {
		return nil, err
	}
	actx, admit := h.spans.start(ctx, spanAdmit, id)
	s, err := h.lookupFor(ctx, id, from, false)
	if err != nil {
		return nil, endSpan(admit, err)
	}
	if err := s.acquire(actx); err != nil {
		return nil, endSpan(admit, err)
	}
	defer s.release()
	if err := h.ready(actx, s); err != nil {
		return nil, endSpan(admit, err)
	}
	env.From, env.Type, env.SessionId, env.Id, env.Call = from, t, s.meta.GetSessionId(), "", nil
	if q := env.GetQuestion(); q != nil && q.GetAnswerer() == "" {
		q.Answerer = rootCreator(s) // the hub decides who answers by default, and logs it
	}
	env.Seq, env.AcceptedAt, env.Rule = 0, nil, "" // the hub's: a caller's values are neither checked nor kept
	if k := env.GetClientMsgId(); k != "" {
		if seq, ok := s.dedup[dedupKey(from, k)]; ok {
			admit.SetAttributes(attribute.Bool("hubd.duplicate", true))
			ack, err := h.duplicate(actx, s, seq)
			return ack, endSpan(admit, err)
		}
	}
	if err := s.m.Admit(env); err != nil {
		h.rejected(s.id, from, t, err)
		return nil, endSpan(admit, err)
	}
	admit.End()
	all, err := h.commit(ctx, s, []*hubpb.Envelope{env}, nil)
	if err != nil {
		h.rejected(s.id, from, t, err)
		return nil, err
	}
	return ackOf(all), nil
}

// checkHeader refuses an envelope that names another sender or session
// than the call's.
func checkHeader(env *hubpb.Envelope, from string, id session.ID) error {
	if f := env.GetFrom(); f != "" && f != from {
		return fmt.Errorf("the envelope says it is from %q but the caller is %q: %w", f, from, ErrImpersonation)
	}
	if sid := env.GetSessionId(); sid != "" {
		if got, err := session.ParseID(sid); err != nil || got != id {
			return fmt.Errorf("envelope.session_id %q differs from the session %v sent to: %w", sid, id, session.ErrMalformed)
		}
	}
	return nil
}

// duplicate answers a retry with the original envelope's seq, id and time.
func (h *Hub) duplicate(ctx context.Context, s *Session, seq uint64) (*hubpb.SendResponse, error) {
	a := &hubpb.SendResponse{Seq: seq, Duplicate: true}
	err := h.cfg.Log.Scan(ctx, s.id, seq, func(got uint64, data []byte) error {
		e, err := s.decode(data)
		if err != nil {
			return err
		}
		a.Id, a.AcceptedAt = e.GetId(), e.GetAcceptedAt()
		return errStop
	})
	if err != nil && err != errStop {
		return nil, fmt.Errorf("reading seq %d of session %v: %w", seq, s.id, err)
	}
	return a, nil
}

func (h *Hub) rejected(id session.ID, from, t string, err error) {
	if f := h.cfg.Hooks.Rejected; f != nil {
		f(id, from, t, err)
	}
}

// AckInvite acknowledges agent's invite to session id; the last ack opens
// the session in the same write.
func (h *Hub) AckInvite(ctx context.Context, agent string, id session.ID) (*hubpb.SendResponse, error) {
	return h.Send(ctx, agent, id, &hubpb.Envelope{Type: session.EventInviteAck})
}

// RejectInvite rejects agent's invite; the session closes with
// "invite_rejected" in the same write.
func (h *Hub) RejectInvite(ctx context.Context, agent string, id session.ID, reason string) (*hubpb.SendResponse, error) {
	if reason == "" {
		reason = "declined"
	}
	return h.Send(ctx, agent, id, session.Ended(session.EventInviteReject, reason))
}

// CloseSession closes session id on behalf of agent, who must be its
// creator unless operator is true. reason defaults to "explicit_close".
func (h *Hub) CloseSession(ctx context.Context, agent string, operator bool, id session.ID, reason string) (*hubpb.SendResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	s, err := h.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	switch creator := s.meta.GetCreator(); {
	case operator || agent == creator:
	case !session.IsParticipant(s.meta, agent): // told nothing of the session, its creator included
		return nil, fmt.Errorf("%q is not a participant of session %v and may not close it: %w", agent, id, ErrPermissionDenied)
	default:
		return nil, fmt.Errorf("only the creator %q (or an operator) closes session %v, not %q: %w", creator, id, agent, ErrPermissionDenied)
	}
	if err := session.CheckText("reason", reason); err != nil {
		return nil, err
	}
	if reason == "" {
		reason = session.ReasonExplicitClose
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	envs := s.m.Ending(reason) // its pending questions withdrawn, then the close
	if err := s.m.Admit(envs[len(envs)-1]); err != nil {
		return nil, err
	}
	all, err := h.commit(ctx, s, envs, nil)
	if err != nil {
		return nil, err
	}
	return ackOf(all[len(all)-1:]), nil
}
