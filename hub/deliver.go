package hub

import (
	"bytes"
	"context"
	"fmt"
	"maps"
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
	var trigger *hubpb.Envelope
	if newTurn {
		expected, trigger = s.expectedNow()
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.deliverQuestions(s, all)
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
			d := &hubpb.Delivery{Envelope: e, YourTurn: turn && e == trigger}
			told = told || d.YourTurn
			for _, sub := range subs {
				if !sub.terse || acts(d, name) {
					sub.push(d)
				}
			}
		}
		if turn && !told {
			d := &hubpb.Delivery{Envelope: visibleTo(trigger, name), YourTurn: true}
			for _, sub := range subs {
				sub.push(d)
			}
		}
	}
}

// deliverTree hands a plan's envelopes to the watchers of its tree, all of
// a plan at once per watcher: a watcher that sees the root end has the
// rest of that write (its descendants closed with it) queued already. The
// caller holds the tree's lock.
func (h *Hub) deliverTree(p *plan) {
	if len(p.parts) == 0 {
		return
	}
	for _, w := range p.parts[0].s.tree.watchers {
		var ds []*hubpb.Delivery
		for _, x := range p.parts {
			s := x.s
			if !under(s, w.top) || (w.viewer != "" && !session.IsParticipant(s.meta, w.viewer)) {
				continue
			}
			for _, e := range x.envs {
				if w.sees(e) {
					ds = append(ds, &hubpb.Delivery{Envelope: e})
				}
			}
		}
		w.push(ds...)
	}
}

// acts reports whether a terse subscription of agent hands out d: what
// asks the agent to act (its turn, an invite naming it, a question or its
// withdrawal) or ends its work in a session.
func acts(d *hubpb.Delivery, agent string) bool {
	if d.GetYourTurn() {
		return true
	}
	e := d.GetEnvelope()
	switch t := e.GetType(); t {
	case session.EventInvite:
		return slices.Contains(e.GetInvite().GetInvitees(), agent)
	case session.EventQuestion, session.EventQuestionClosed:
		return true
	default:
		return session.Ends(t)
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
	// TurnView, when set, makes every your_turn delivery carry the agent's
	// view of its session with these options (see Subscription.Next).
	TurnView *ViewOptions
	// Terse hands out only what asks the agent to act or ends its work
	// (see acts); other envelopes addressed to it are skipped.
	Terse bool
	// Place, when set, is the place among the agent's streams of the
	// stream the subscription is delivered on (an agent stream's, see
	// TakeStream): the subscription takes no other.
	Place *StreamPlace
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
	if v := opts.TurnView; v != nil {
		if _, _, err := resolveView(&hubpb.SessionMeta{}, *v); err != nil {
			return nil, err
		}
		if v.History != "" && v.History != HistoryThread && v.History != HistoryDelegate {
			return nil, fmt.Errorf("unknown view history %q (known: thread, delegate): %w", v.History, session.ErrMalformed)
		}
		sub.turnView = v
	}
	sub.terse = opts.Terse
	if err := h.takeStream(sub, agent, opts.Place); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.subs[agent] = append(h.subs[agent], sub)
	mine := make([]*sess, 0, len(h.byAgent[agent]))
	for _, s := range h.byAgent[agent] { // sorted below
		mine = append(mine, s)
	}
	h.mu.Unlock()
	slices.SortFunc(mine, func(a, b *sess) int { return compareIDs(a.id, b.id) })
	// What each session published is read after the subscription is
	// registered: a commit published before is in it, one after is
	// delivered live as well (and handed out once, see filter).
	take := func(s *sess) error {
		cur, has := opts.Cursors[s.id]
		last, ended := s.lastSeq.Load(), session.State(s.state.Load()).Ended()
		if exp, trigger := s.expectedNow(); slices.Contains(exp, agent) {
			sub.turns = append(sub.turns, &hubpb.Delivery{Envelope: visibleTo(trigger, agent), YourTurn: true})
			if sub.turnAt == nil {
				sub.turnAt = map[string]uint64{}
			}
			sub.turnAt[s.meta.GetSessionId()] = trigger.GetSeq()
		}
		sub.sent = setSeq(sub.sent, s.meta.GetSessionId(), cur)
		if cur < last && (has || !ended || opts.Ended) {
			sub.spans = append(sub.spans, spanOf(s, cur+1, last))
		}
		return nil
	}
	for _, s := range mine {
		if err := take(s); err != nil {
			sub.Close()
			return nil, err
		}
	}
	if err := h.endedFor(ctx, agent, mine, opts, take); err != nil {
		sub.Close()
		return nil, err
	}
	if err := h.retellQuestions(ctx, sub, agent); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// endedFor calls take with each ended session a subscription catches up
// on besides the live ones agent takes part in (live): those it gives a
// cursor for, and with opts.Ended all it took part in, loaded from the log
// one at a time (a subscription holds its spans, not the sessions).
func (h *Hub) endedFor(ctx context.Context, agent string, live []*sess, opts SubscribeOptions, take func(*sess) error) error {
	seen := make(map[session.ID]bool, len(live))
	for _, s := range live {
		seen[s.id] = true
	}
	add := func(id session.ID) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		s, err := h.lookup(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil, !session.IsParticipant(s.meta, agent):
			return nil // unknown, quarantined or not its own: nothing to catch up on
		}
		return take(s)
	}
	for _, id := range slices.SortedFunc(maps.Keys(opts.Cursors), compareIDs) {
		if err := add(id); err != nil {
			return err
		}
	}
	if opts.Ended {
		return h.memberOf(ctx, agent, session.ID{}, add)
	}
	return nil
}

// retellQuestions queues the questions pending for agent in sessions it is
// not a participant of (participants hear of them with the rest).
func (h *Hub) retellQuestions(ctx context.Context, sub *Subscription, agent string) error {
	for _, s := range h.asking() {
		if session.IsParticipant(s.meta, agent) {
			continue
		}
		for _, q := range s.pendingFor(agent) {
			sub.turns = append(sub.turns, &hubpb.Delivery{Envelope: q.GetEnvelope()})
		}
	}
	return nil
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
func (h *Hub) Watch(ctx context.Context, agent string, operator bool, id session.ID, opts WatchOptions) (*Subscription, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	s, err := h.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(s.meta, agent) {
		return nil, fmt.Errorf("%q may not watch session %v: %w", agent, id, ErrPermissionDenied)
	}
	sub := newSubscription(h, "", id)
	sub.tree, sub.verbose, sub.top = opts.Tree, opts.Verbose, s
	if !operator {
		sub.viewer = agent
	}
	sub.ws = s
	if err := h.takeStream(sub, agent, nil); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		h.releaseStream(sub)
		return nil, err
	}
	defer s.release()
	var kids []*sess
	if opts.Tree {
		if kids, err = h.descendants(ctx, s); err != nil {
			h.releaseStream(sub)
			return nil, err
		}
	}
	if opts.Tree {
		s.tree.watchers = append(s.tree.watchers, sub)
	} else {
		s.watch = append(s.watch, sub)
	}
	h.mu.Lock()
	h.watches[sub] = struct{}{}
	h.mu.Unlock()
	sub.catchUp(s, max(opts.From, 1))
	// A tree watch resumed past its root's end ends after catching up.
	sub.over = opts.Tree && s.m.Lifecycle.State.Ended() && max(opts.From, 1) > s.m.Seq
	if opts.Tree {
		for _, k := range kids {
			if sub.viewer == "" || session.IsParticipant(k.meta, sub.viewer) {
				kid := k.meta.GetSessionId()
				cur, ok := opts.Cursors[kid]
				if ok {
					sub.cursors = setSeq(sub.cursors, kid, cur)
				}
				sub.catchUp(k, cur+1)
			}
		}
	}
	return sub, nil
}

// catchUp queues s's logged envelopes from seq from; the caller holds the
// tree's lock.
func (sub *Subscription) catchUp(s *sess, from uint64) {
	sub.sent = setSeq(sub.sent, s.meta.GetSessionId(), from-1)
	if last := s.m.Seq; from <= last {
		sub.spans = append(sub.spans, spanOf(s, from, last))
	}
}

// descendants returns s's descendants, live and ended, depth first,
// oldest first.
func (h *Hub) descendants(ctx context.Context, s *sess) ([]*sess, error) {
	kids, err := h.allKids(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []*sess
	for _, k := range kids {
		out = append(out, k)
		more, err := h.descendants(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// under reports whether s is top or one of its descendants.
func under(s, top *sess) bool {
	for x := s; x != nil; x = x.parent {
		if x == top {
			return true
		}
	}
	return false
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
		if exp, trigger := s.expectedNow(); slices.Contains(exp, agent) {
			out = append(out, &hubpb.Delivery{Envelope: visibleTo(trigger, agent), YourTurn: true})
		}
	}
	return out, nil
}

// deliverQuestions hands a question to its answerer's subscriptions when
// the answerer is not a participant (a person's agent asked from a child
// session); participants get it with the rest. The caller holds h.mu.
func (h *Hub) deliverQuestions(s *sess, all []*hubpb.Envelope) {
	for _, e := range all {
		a := e.GetQuestion().GetAnswerer()
		if e.GetType() != session.EventQuestion || a == "" || session.IsParticipant(s.meta, a) {
			continue
		}
		for _, sub := range h.subs[a] {
			sub.push(&hubpb.Delivery{Envelope: e})
		}
	}
}
