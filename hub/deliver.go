package hub

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// deliver hands a commit's envelopes to the session's watchers and to the
// subscriptions of every participant who may see them, then tells the
// expected speakers it is their turn when the commit began one. The caller
// holds the session's lock, so deliveries of a session are in seq order.
func (h *Hub) deliver(s *sess, all []*hubpb.Envelope, newTurn bool) {
	for _, w := range s.watch {
		for _, e := range all {
			if w.sees(e) {
				w.push(&hubpb.Delivery{Envelope: e})
			}
		}
	}
	var expected []string
	if newTurn {
		expected = s.m.Expected()
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, p := range s.meta.GetParticipants() {
		name := p.GetName()
		subs := h.subs[name]
		if len(subs) == 0 {
			continue
		}
		told := false
		turn := slices.Contains(expected, name)
		for _, e := range all {
			if !session.Addressed(e, name) {
				continue
			}
			d := &hubpb.Delivery{Envelope: e, YourTurn: turn && e == s.trigger}
			told = told || d.YourTurn
			for _, sub := range subs {
				sub.push(d)
			}
		}
		if turn && !told && s.trigger != nil {
			d := &hubpb.Delivery{Envelope: visibleTo(s.trigger, name), YourTurn: true}
			for _, sub := range subs {
				sub.push(d)
			}
		}
	}
}

// visibleTo returns e, or a copy without its payload when name may not see
// it.
func visibleTo(e *hubpb.Envelope, name string) *hubpb.Envelope {
	if session.Visible(e, name) {
		return e
	}
	c := proto.CloneOf(e)
	c.Payload = nil
	return c
}

// SubscribeOptions tune an agent's subscription.
type SubscribeOptions struct {
	// Cursors are the last seq the agent has processed, per session; it
	// receives what it may see after each. Sessions without a cursor are
	// delivered from their start if they have not ended.
	Cursors map[session.ID]uint64
	// Ended includes ended sessions without a cursor too.
	Ended bool
}

// Subscribe opens agent's delivery stream: first what it missed after its
// cursors (the close of a session it was in included), then its pending
// turns, then everything live. Envelopes come in seq order per session, with
// no gap and no duplicate. Read it with Next; Close it when done.
func (h *Hub) Subscribe(ctx context.Context, agent string, opts SubscribeOptions) (*Subscription, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	sub := newSubscription(h, agent, session.ID{})
	h.mu.Lock()
	h.subs[agent] = append(h.subs[agent], sub)
	mine := make([]*sess, 0, len(h.byAgent[agent]))
	for _, s := range h.byAgent[agent] { // sorted below
		mine = append(mine, s)
	}
	h.mu.Unlock()
	slices.SortFunc(mine, func(a, b *sess) int { return compareIDs(a.id, b.id) })
	for _, s := range mine {
		cur, has := opts.Cursors[s.id]
		if err := s.acquire(ctx); err != nil {
			sub.Close()
			return nil, err
		}
		last, ended := s.m.Seq, s.m.Lifecycle.State.Ended()
		if slices.Contains(s.m.Expected(), agent) && s.trigger != nil {
			sub.turns = append(sub.turns, &hubpb.Delivery{Envelope: visibleTo(s.trigger, agent), YourTurn: true})
		}
		s.release()
		sub.sent[s.meta.GetSessionId()] = cur
		if cur < last && (has || !ended || opts.Ended) {
			sub.spans = append(sub.spans, span{id: s.id, from: cur + 1, to: last})
		}
	}
	return sub, nil
}

// Watch streams the envelopes of one session from seq from (1: all), for
// dashboards and audits: every envelope for an operator, what the agent
// may read (addressed to it, or its own) for a participant; nobody else
// may watch.
func (h *Hub) Watch(ctx context.Context, agent string, operator bool, id session.ID, from uint64) (*Subscription, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	s, err := h.lookup(id)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(s.meta, agent) {
		return nil, fmt.Errorf("%q may not watch session %v: %w", agent, id, ErrPermissionDenied)
	}
	if from == 0 {
		from = 1
	}
	sub := newSubscription(h, "", id)
	if !operator {
		sub.viewer = agent
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	s.watch = append(s.watch, sub)
	last := s.m.Seq
	s.release()
	sub.sent[s.meta.GetSessionId()] = from - 1
	if from <= last {
		sub.spans = append(sub.spans, span{id: id, from: from, to: last})
	}
	return sub, nil
}

func compareIDs(a, b session.ID) int { return bytes.Compare(a[:], b[:]) }

// PendingTurns returns agent's pending turns: for each open session where
// it is expected to speak, the envelope that began the turn.
func (h *Hub) PendingTurns(ctx context.Context, agent string) ([]*hubpb.Delivery, error) {
	h.mu.RLock()
	mine := make([]*sess, 0, len(h.byAgent[agent]))
	for _, s := range h.byAgent[agent] { // sorted below
		mine = append(mine, s)
	}
	h.mu.RUnlock()
	slices.SortFunc(mine, func(a, b *sess) int { return compareIDs(a.id, b.id) })
	var out []*hubpb.Delivery
	for _, s := range mine {
		if session.State(s.state.Load()) != session.StateOpen {
			continue
		}
		if err := s.acquire(ctx); err != nil {
			return nil, err
		}
		if slices.Contains(s.m.Expected(), agent) && s.trigger != nil {
			out = append(out, &hubpb.Delivery{Envelope: visibleTo(s.trigger, agent), YourTurn: true})
		}
		s.release()
	}
	return out, nil
}
