package hub

import (
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// committed runs after a successful append: each session's derived
// state, indexes, hooks and timers, then the commit is published to the
// consumer (delivery), then the sessions it ended leave the live indexes.
func (h *Hub) committed(p *plan) {
	c := &Commit{Parts: make([]Part, len(p.parts))}
	var ended []*Session
	for i, x := range p.parts {
		for _, e := range x.envs {
			x.s.observe(e, e == x.trigger)
		}
		t := h.took(x.s, x.envs, x.before, x.trigger != nil)
		if t.ended {
			ended = append(ended, x.s)
		}
		c.Parts[i] = t.Part
	}
	h.feed.Committed(c)
	for _, s := range ended {
		h.retire(s)
	}
}

// share is a session's share of a commit, as published.
type share struct {
	Part
	ended bool // the commit ended the session
}

// took runs what follows envelopes the log took, once the session's state
// has observed them: hooks, what the session publishes, the index of
// sessions asking, the open count and timers. newTurn: they began a turn.
// It returns the session's part of the commit to publish.
func (h *Hub) took(s *Session, all []*hubpb.Envelope, before session.State, newTurn bool) share {
	if f := h.cfg.Hooks.Accepted; f != nil {
		for _, e := range all {
			f(e)
		}
	}
	after := s.m.Lifecycle.State
	s.publish()
	h.noteAsking(s)
	ended := after.Ended() && !before.Ended()
	if ended {
		h.reg.mu.Lock()
		h.reg.openCount[s.meta.GetCreator()]--
		h.reg.mu.Unlock()
		s.tree.live.Add(-1)
		if f := h.cfg.Hooks.Closed; f != nil {
			f(s.id, after, s.m.Lifecycle.Reason)
		}
	}
	h.sched.update(s)
	x := share{Part: Part{Session: s, Envelopes: all}, ended: ended}
	if newTurn {
		x.Turn = s.turn.Load()
	}
	return x
}

// noteAsking keeps the index of sessions with pending questions; the
// caller holds s's lock. The hub's lock is taken only when s joins or
// leaves the index: every commit calls this, and a write lock of the
// hub's taken on each was most of the hub's lock contention.
func (h *Hub) noteAsking(s *Session) {
	asking := len(s.m.Calls.Questions) > 0
	if asking == s.asking {
		return
	}
	s.asking = asking
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	if asking {
		h.reg.askers[s.id] = s
	} else {
		delete(h.reg.askers, s.id)
	}
}
