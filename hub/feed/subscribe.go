package feed

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// A subscription or a watch is registered for deliveries first, and reads
// what each session published afterwards (its last seq, state and turn,
// hub.Session): a commit published before the registration is in what it
// reads, and caught up on from the log; one published after is delivered
// live as well, and handed out once (Subscription.filter). Nothing waits
// for a session's lock.

// SubscribeOptions tune an agent's subscription.
type SubscribeOptions struct {
	// Cursors are the last seq the agent has processed, per session; it
	// receives what it may see after each. Sessions without a cursor are
	// delivered from their start if they have not ended.
	Cursors map[session.ID]uint64
	// Ended includes ended sessions without a cursor too.
	Ended bool
	// TurnView, when set, makes every your_turn delivery carry the agent's
	// view of its session with these options (see Subscription.Next).
	TurnView *ViewOptions
	// Terse hands out only what asks the agent to act or ends its work
	// (see acts); other envelopes addressed to it are skipped.
	Terse bool
	// Deltas hands out the deltas of replies others write in the agent's
	// sessions too (Delivery.delta), best-effort.
	Deltas bool
	// Place, when set, is the place among the agent's streams of the
	// stream the subscription is delivered on (an agent stream's, see
	// TakeStream): the subscription takes no other.
	Place *StreamPlace
}

// Subscribe opens agent's delivery stream: first what it missed after its
// cursors (the close of a session it was in included), then its pending
// turns, then everything live. Envelopes come in seq order per session, with
// no gap and no duplicate. Read it with Next; Close it when done.
func (f *Feed) Subscribe(ctx context.Context, agent string, opts SubscribeOptions) (*Subscription, error) {
	sub := newSubscription(f, agent, session.ID{})
	if v := opts.TurnView; v != nil {
		if _, _, err := resolveView(&hubpb.SessionMeta{}, *v); err != nil {
			return nil, err
		}
		if v.History != "" && v.History != HistoryThread && v.History != HistoryDelegate {
			return nil, fmt.Errorf("unknown view history %q (known: thread, delegate): %w", v.History, session.ErrMalformed)
		}
		sub.turnView = v
	}
	sub.terse, sub.deltas = opts.Terse, opts.Deltas
	if err := f.takeStream(sub, agent, opts.Place); err != nil {
		return nil, err
	}
	if err := f.add(sub); err != nil {
		f.releaseStream(sub)
		return nil, err
	}
	mine := f.h.Sessions(agent)
	for _, s := range mine {
		sub.catchUpOn(s, opts)
	}
	if err := f.endedFor(ctx, agent, mine, opts, sub); err != nil {
		sub.Close()
		return nil, err
	}
	f.retellQuestions(sub, agent)
	return sub, nil
}

// catchUpOn queues what the subscription catches up on in session s (after
// its cursor, if opts gives one) and the turn s expects its agent to take.
func (sub *Subscription) catchUpOn(s *hub.Session, opts SubscribeOptions) {
	cur, has := opts.Cursors[s.ID()]
	ended := s.State().Ended() // before LastSeq: an end comes with its last seq
	last := s.LastSeq()
	if t := s.Turn(); t != nil && slices.Contains(t.Expected, sub.agent) {
		sub.turns = append(sub.turns, &hubpb.Delivery{Envelope: visibleTo(t.Trigger, sub.agent), YourTurn: true})
		if sub.turnAt == nil {
			sub.turnAt = map[string]uint64{}
		}
		sub.turnAt[s.Meta().GetSessionId()] = t.Trigger.GetSeq()
	}
	sub.sent = setSeq(sub.sent, s.Meta().GetSessionId(), cur)
	if cur < last && (has || !ended || opts.Ended) {
		sub.spans = append(sub.spans, spanOf(s, cur+1, last))
	}
}

// endedFor queues the ended sessions a subscription catches up on besides
// the live ones its agent takes part in (live): those it gives a cursor
// for, and with opts.Ended all it took part in, loaded from the log one at
// a time (a subscription holds its spans, not the sessions).
func (f *Feed) endedFor(ctx context.Context, agent string, live []*hub.Session, opts SubscribeOptions, sub *Subscription) error {
	seen := make(map[session.ID]bool, len(live))
	for _, s := range live {
		seen[s.ID()] = true
	}
	add := func(id session.ID) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		s, err := f.h.Lookup(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil, !session.IsParticipant(s.Meta(), agent):
			return nil // unknown, quarantined or not its own: nothing to catch up on
		}
		sub.catchUpOn(s, opts)
		return nil
	}
	for _, id := range slices.SortedFunc(maps.Keys(opts.Cursors), compareIDs) {
		if err := add(id); err != nil {
			return err
		}
	}
	if opts.Ended {
		return f.h.MemberOf(ctx, agent, session.ID{}, add)
	}
	return nil
}

// retellQuestions queues the questions pending for agent in sessions it is
// not a participant of (participants hear of them with the rest).
func (f *Feed) retellQuestions(sub *Subscription, agent string) {
	for _, s := range f.h.Asking() {
		if session.IsParticipant(s.Meta(), agent) {
			continue
		}
		for _, q := range s.Questions(agent) {
			sub.turns = append(sub.turns, &hubpb.Delivery{Envelope: q.GetEnvelope()})
		}
	}
}

// WatchOptions tune a watch.
type WatchOptions struct {
	// From is the first seq of the watched session (0 or 1: all).
	From uint64
	// Tree watches the session's descendants too, each from its cursor
	// (or its start): every envelope of theirs with Verbose, else only
	// questions, answers, question_closed and delegation results.
	Tree    bool
	Verbose bool
	// Deltas hands out the deltas of replies written in the watched
	// session too (Delivery.delta), best-effort; not a tree watch's.
	Deltas bool
	// Cursors are the last seq seen per descendant (session id string);
	// those naming no descendant the watch hands out are dropped
	// (Subscription.Cursors says which were kept).
	Cursors map[string]uint64
}

// Watch streams the envelopes of one session (and with opts.Tree its
// descendants, each envelope carrying its session and depth in call), for
// dashboards and audits: every envelope for an operator, what the agent
// may read (addressed to it, or its own, in sessions it takes part in) for
// a participant; nobody else may watch.
func (f *Feed) Watch(ctx context.Context, agent string, operator bool, id session.ID, opts WatchOptions) (*Subscription, error) {
	if f.h.Lifetime().Err() != nil {
		return nil, hub.ErrClosed
	}
	s, err := f.h.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(s.Meta(), agent) {
		return nil, fmt.Errorf("%q may not watch session %v: %w", agent, id, hub.ErrPermissionDenied)
	}
	sub := newSubscription(f, "", id)
	sub.tree, sub.verbose, sub.root = opts.Tree, opts.Verbose, s.Root()
	sub.deltas = opts.Deltas && !opts.Tree
	if !operator {
		sub.viewer = agent
	}
	if err := f.takeStream(sub, agent, nil); err != nil {
		return nil, err
	}
	if err := f.add(sub); err != nil {
		f.releaseStream(sub)
		return nil, err
	}
	var kids []*hub.Session
	if opts.Tree {
		if kids, err = f.descendants(ctx, s); err != nil {
			sub.Close()
			return nil, err
		}
	}
	// A tree watch resumed past its root's end ends after catching up.
	from := max(opts.From, 1)
	sub.over = opts.Tree && s.State().Ended() && from > s.LastSeq()
	sub.catchUp(s, from)
	for _, k := range kids {
		if sub.viewer == "" || session.IsParticipant(k.Meta(), sub.viewer) {
			kid := k.Meta().GetSessionId()
			cur, ok := opts.Cursors[kid]
			if ok {
				sub.cursors = setSeq(sub.cursors, kid, cur)
			}
			sub.catchUp(k, cur+1)
		}
	}
	return sub, nil
}

// catchUp queues s's logged envelopes from seq from, as published.
func (sub *Subscription) catchUp(s *hub.Session, from uint64) {
	sub.sent = setSeq(sub.sent, s.Meta().GetSessionId(), from-1)
	if last := s.LastSeq(); from <= last {
		sub.spans = append(sub.spans, spanOf(s, from, last))
	}
}

// descendants returns s's descendants, live and ended, depth first,
// oldest first.
func (f *Feed) descendants(ctx context.Context, s *hub.Session) ([]*hub.Session, error) {
	kids, err := f.h.Children(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []*hub.Session
	for _, k := range kids {
		out = append(out, k)
		more, err := f.descendants(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// PendingTurns returns agent's pending turns: for each open session where
// it is expected to speak, the envelope that began the turn.
func (f *Feed) PendingTurns(ctx context.Context, agent string) ([]*hubpb.Delivery, error) {
	var out []*hubpb.Delivery
	for _, s := range f.h.Sessions(agent) {
		if s.State() != session.StateOpen {
			continue
		}
		if t := s.Turn(); t != nil && slices.Contains(t.Expected, agent) {
			out = append(out, &hubpb.Delivery{Envelope: visibleTo(t.Trigger, agent), YourTurn: true})
		}
	}
	return out, nil
}
