package feed

import (
	"slices"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Tail implements hub.Consumer: a session's view cache.
func (f *Feed) Tail(meta *hubpb.SessionMeta) hub.Tail { return newViewCache(session.Names(meta)) }

// Committed implements hub.Consumer: it hands a commit's envelopes to the
// watchers of its sessions and to the subscriptions of every participant
// who may see them, tells the expected speakers it is their turn when the
// commit began one, then hands the whole commit to its tree's watchers.
// The hub holds the tree's lock, so a session's deliveries leave in seq
// order; a subscriber's queue takes them without waiting.
func (f *Feed) Committed(c *hub.Commit) {
	if len(c.Parts) == 0 {
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i := range c.Parts {
		f.deliver(&c.Parts[i])
	}
	f.deliverTree(c)
}

// deliver hands one session's share of a commit to its watchers and its
// participants' subscriptions; f.mu is held.
func (f *Feed) deliver(x *hub.Part) {
	s, all := x.Session, x.Envelopes
	if len(f.watches) > 0 {
		for _, w := range f.watches[s.ID()] {
			for _, e := range all {
				if w.sees(e) {
					w.push(&hubpb.Delivery{Envelope: e})
				}
			}
		}
	}
	var expected []string
	var trigger *hubpb.Envelope
	if x.Turn != nil {
		expected, trigger = x.Turn.Expected, x.Turn.Trigger
	}
	f.deliverQuestions(s, all)
	for _, p := range s.Meta().GetParticipants() {
		name := p.GetName()
		subs := f.subs[name]
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

// deliverTree hands a commit's envelopes to the watchers of its tree, all
// of a commit at once per watcher: a watcher that sees the root end has
// the rest of that write (its descendants closed with it) queued already;
// f.mu is held.
func (f *Feed) deliverTree(c *hub.Commit) {
	if len(f.trees) == 0 {
		return
	}
	for _, w := range f.trees[c.Parts[0].Session.Root()] {
		var ds []*hubpb.Delivery
		for _, x := range c.Parts {
			s := x.Session
			if !under(s, w.watch) || (w.viewer != "" && !session.IsParticipant(s.Meta(), w.viewer)) {
				continue
			}
			for _, e := range x.Envelopes {
				if w.sees(e) {
					ds = append(ds, &hubpb.Delivery{Envelope: e})
				}
			}
		}
		w.push(ds...)
	}
}

// under reports whether s is top or one of its descendants.
func under(s *hub.Session, top session.ID) bool {
	for x := s; x != nil; x = x.Parent() {
		if x.ID() == top {
			return true
		}
	}
	return false
}

// deliverQuestions hands a question to its answerer's subscriptions when
// the answerer is not a participant (a person's agent asked from a child
// session); participants get it with the rest. f.mu is held.
func (f *Feed) deliverQuestions(s *hub.Session, all []*hubpb.Envelope) {
	for _, e := range all {
		a := e.GetQuestion().GetAnswerer()
		if e.GetType() != session.EventQuestion || a == "" || session.IsParticipant(s.Meta(), a) {
			continue
		}
		for _, sub := range f.subs[a] {
			sub.push(&hubpb.Delivery{Envelope: e})
		}
	}
}

// Moved implements hub.Consumer: it ends, with why, the subscriptions of
// agents and the watches of the sessions gone and of their trees.
func (f *Feed) Moved(agents []string, gone []*hub.Session, why error) {
	f.mu.Lock()
	var ended []*Subscription
	for _, a := range agents {
		ended = append(ended, f.subs[a]...)
		delete(f.subs, a)
	}
	for _, s := range gone {
		ended = append(ended, f.watches[s.ID()]...)
		delete(f.watches, s.ID())
		ended = append(ended, f.trees[s.Root()]...)
		delete(f.trees, s.Root())
	}
	f.mu.Unlock()
	for _, sub := range ended {
		sub.fail(why)
	}
}

// Closed implements hub.Consumer: every subscription and watch ends with
// hub.ErrClosed, and none is taken any more.
func (f *Feed) Closed() {
	f.mu.Lock()
	f.closed = true
	var ended []*Subscription
	for _, list := range f.subs { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	for _, list := range f.watches { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	for _, list := range f.trees { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	f.subs, f.watches, f.trees = map[string][]*Subscription{}, map[session.ID][]*Subscription{}, map[session.ID][]*Subscription{}
	f.mu.Unlock()
	for _, sub := range ended {
		sub.fail(hub.ErrClosed)
	}
}
