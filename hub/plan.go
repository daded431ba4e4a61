package hub

import (
	"context"
	"fmt"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// A plan is one atomic write: the envelopes of one or more sessions of a
// tree, applied to their machines in order and appended to the log in one
// call. It begins with what a caller asked (a send, an open, a close, a
// timer's firing) and grows by what that decides across sessions: a child
// that ends posts its result to its parent, a session that ends closes its
// open children, a crossed budget closes the tree.
type plan struct {
	now   *hubpb.Envelope // only its accepted_at: the write's time
	trace string          // the caller's traceparent, for envelopes without one
	parts []*part
	first bool // nothing applied yet: the size limit applies to the next envelope
	// unsure: its append failed with the outcome unknown (it may have
	// landed), so its sessions stay, failed, until a reload reads the log.
	unsure bool
}

// part is one session's share of a plan.
type part struct {
	s       *Session
	meta    []byte // a new session's metadata
	isNew   bool
	before  session.State // the session's state before the plan
	envs    []*hubpb.Envelope
	recs    []LogRecord
	trigger *hubpb.Envelope // the last envelope that began a turn
}

func (h *Hub) newPlan(ctx context.Context, s *Session) *plan {
	return &plan{now: &hubpb.Envelope{AcceptedAt: session.Stamp(h.stamp(s))}, trace: traceparentOf(ctx), first: true}
}

// part returns s's part of the plan, adding one.
func (p *plan) part(s *Session) *part {
	for _, x := range p.parts {
		if x.s == s {
			return x
		}
	}
	x := &part{s: s, before: s.m.Lifecycle.State}
	p.parts = append(p.parts, x)
	return x
}

// stamp returns the acceptance time of the next change: the clock, never
// earlier than the session's last acceptance, in UTC without a monotonic
// reading (the log keeps nanoseconds).
func (h *Hub) stamp(s *Session) time.Time {
	now := h.cfg.Clock.Now().UTC().Round(0)
	if now.Before(s.lastAt) {
		now = s.lastAt
	}
	return now
}

// apply stamps, checks the size of, applies and encodes envs in session s,
// in order, with the follow-ups each decides; it stops at the session's
// end. The first envelope of the plan is checked against the size limit
// before anything is applied.
func (h *Hub) apply(p *plan, s *Session, envs ...*hubpb.Envelope) error {
	x := p.part(s)
	for _, e := range envs {
		if s.m.Lifecycle.State.Ended() {
			break
		}
		h.stampEnvelope(p, s, e)
		if n := storedSize(e); p.first && n > h.cfg.MaxEnvelopeBytes {
			return fmt.Errorf("envelope is %d bytes stored, the limit is %d: %w", n, h.cfg.MaxEnvelopeBytes, ErrTooLarge)
		}
		p.first = false
		applied, out := s.m.Apply(e)
		if out.Trigger != nil {
			x.trigger = out.Trigger
		}
		if out.Rule != "" {
			e.Rule = out.Rule
		}
		// Encoded once, with the rule that decided it; a failure here
		// (never for an envelope CheckEnvelope passed) leaves the applied
		// machine to abandon, which rebuilds it from the log.
		data, err := encode(e)
		if err != nil {
			return fmt.Errorf("encoding seq %d: %v: %w", e.GetSeq(), err, session.ErrMalformed)
		}
		x.envs = append(x.envs, e)
		x.recs = append(x.recs, LogRecord{Seq: e.GetSeq(), Data: data})
		for _, f := range applied[1:] {
			f.Id = h.newID().String()
			if f.GetTraceparent() == "" {
				f.Traceparent = e.GetTraceparent() // a follow-up is part of its cause's trace
			}
			x.envs = append(x.envs, f)
			x.recs = append(x.recs, LogRecord{Seq: f.GetSeq(), Data: mustEncode(f)})
			f.Call = s.call
		}
		e.Call = s.call
	}
	return nil
}

// stampEnvelope sets what the hub assigns and stores: session, seq, time,
// id. The call is the session's, stamped after encoding (see encode).
func (h *Hub) stampEnvelope(p *plan, s *Session, e *hubpb.Envelope) {
	e.SessionId, e.Seq, e.AcceptedAt, e.Call = s.meta.GetSessionId(), s.m.Seq+1, p.now.GetAcceptedAt(), nil
	if e.GetId() == "" {
		e.Id = h.newID().String()
	}
	if e.GetTraceparent() == "" {
		e.Traceparent = p.trace
	}
}

// encode returns the stored form of e without its call: a session's call
// ids derive from its metadata, so they are stored once there and stamped
// on every envelope the hub hands out (see Session.decode).
func encode(e *hubpb.Envelope) ([]byte, error) {
	c := e.Call
	e.Call = nil
	b, err := session.MarshalEnvelope(e)
	e.Call = c
	return b, err
}

// storedSize is the size of e's stored form (see encode), without
// encoding it.
func storedSize(e *hubpb.Envelope) int {
	c := e.Call
	e.Call = nil
	n := e.SizeVT()
	e.Call = c
	return n
}

func mustEncode(e *hubpb.Envelope) []byte {
	b, err := encode(e)
	if err != nil {
		panic(fmt.Sprintf("hub: encoding seq %d of session %s: %v", e.GetSeq(), e.GetSessionId(), err))
	}
	return b
}

// abandon undoes a plan that was refused before its append: machines that
// applied something are rebuilt from the log before their next change.
func (h *Hub) abandon(p *plan) {
	for _, x := range p.parts {
		if len(x.envs) > 0 {
			x.s.failed = errPlanAbandoned
		}
	}
}

func firstSeq(p *plan) uint64 {
	if x := p.parts[0]; len(x.envs) > 0 {
		return x.envs[0].GetSeq()
	}
	return 0
}
