package hub

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Lookup returns session id: a live one, or an ended one from the cache
// or the log. Else ErrUnknownSession, ErrQuarantined (without what was
// found wrong), or in a cluster the *NotOwnerError naming its owner.
func (h *Hub) Lookup(ctx context.Context, id session.ID) (*Session, error) { return h.lookup(ctx, id) }

// LookupFor is Lookup for agent: a quarantined session's participants (by
// its stored metadata, when that decodes) and operators also get what was
// found wrong with it.
func (h *Hub) LookupFor(ctx context.Context, id session.ID, agent string, operator bool) (*Session, error) {
	return h.lookupFor(ctx, id, agent, operator)
}

// Live returns the live session with id, if it is one (on a cluster node,
// any session of its partitions).
func (h *Hub) Live(id session.ID) (*Session, bool) { return h.live(id) }

// Ended returns an ended session, from the cache or loaded from the log
// (one that does not load is quarantined: ErrQuarantined).
func (h *Hub) Ended(ctx context.Context, id session.ID) (*Session, error) {
	return h.loadEnded(ctx, id)
}

// Sessions returns the live sessions agent takes part in, every live one
// for "", in id order.
func (h *Hub) Sessions(agent string) []*Session {
	h.reg.mu.RLock()
	pool := h.reg.sessions
	if agent != "" {
		pool = h.reg.byAgent[agent]
	}
	out := make([]*Session, 0, len(pool))
	for _, s := range pool { // sorted below
		out = append(out, s)
	}
	h.reg.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Session) int { return compareIDs(a.id, b.id) })
	return out
}

// MemberOf calls fn with the id of every session agent takes part in
// whose id is greater than after (zero: all), in id order, live and
// ended, until fn returns an error, which it returns.
func (h *Hub) MemberOf(ctx context.Context, agent string, after session.ID, fn func(id session.ID) error) error {
	return h.memberOf(ctx, agent, after, fn)
}

// ChildIDs returns the ids of every child session of parent, oldest
// first.
func (h *Hub) ChildIDs(ctx context.Context, parent session.ID) ([]session.ID, error) {
	if !h.cfg.Partitioned {
		return h.childIDs(ctx, parent)
	}
	p, ok := h.live(parent)
	if !ok {
		return nil, nil
	}
	kids, err := h.Children(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]session.ID, len(kids))
	for i, k := range kids {
		out[i] = k.id
	}
	return out, nil
}

// Children returns every child of s, live and ended, oldest first (a
// quarantined one left out). A child whose open was published is among
// them: a reader that registers for a tree's commits and then asks
// misses none.
func (h *Hub) Children(ctx context.Context, s *Session) ([]*Session, error) {
	if h.cfg.Partitioned {
		// A node's children are its sessions' own lists, which a
		// delegation extends under the tree's lock once it is written.
		if err := s.acquire(ctx); err != nil {
			return nil, err
		}
		kids := slices.Clone(s.kids)
		s.release()
		return kids, nil
	}
	return h.allKids(ctx, s)
}

// Asking returns the sessions with pending questions, in id order (each
// says which: Session.Questions).
func (h *Hub) Asking() []*Session {
	h.reg.mu.RLock()
	out := make([]*Session, 0, len(h.reg.askers))
	for _, s := range h.reg.askers { // sorted below
		out = append(out, s)
	}
	h.reg.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Session) int { return compareIDs(a.id, b.id) })
	return out
}

// Quarantine returns the stored metadata of quarantined session id, and
// whether it is quarantined (the metadata is nil when it does not
// decode).
func (h *Hub) Quarantine(id session.ID) (*hubpb.SessionMeta, bool) {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	_, ok := h.reg.quarantined[id]
	return h.reg.quarantinedMeta[id], ok
}

// QuarantinedMetas returns the stored metadata of every quarantined
// session whose metadata decodes.
func (h *Hub) QuarantinedMetas() map[session.ID]*hubpb.SessionMeta {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	return maps.Clone(h.reg.quarantinedMeta)
}

// Quarantined returns the sessions hydrate could not rebuild, with why.
func (h *Hub) Quarantined() map[session.ID]error {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	return maps.Clone(h.reg.quarantined)
}

// Info returns s's metadata and state as agent may read them (all of it
// for an operator): the turn, who is expected, the context it may read,
// holds, usage and open children. It takes the session's lock (reloading
// it first after a failed write).
func (h *Hub) Info(ctx context.Context, s *Session, agent string, operator bool) (*hubpb.SessionInfo, error) {
	return h.info(ctx, s, agent, operator)
}

// Timers returns s's pending deadlines, earliest first: those the hub's
// timers act on. It takes the session's lock.
func (h *Hub) Timers(ctx context.Context, s *Session) ([]adapters.Deadline, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	return s.m.Deadlines(), nil
}

// Snapshot returns a session's whole folded state as deterministic JSON
// (adapters.Machine.MarshalJSON), for audits and for checking that a replay
// of its log gives the live state. Only an operator may read it.
func (h *Hub) Snapshot(ctx context.Context, id session.ID) (json.RawMessage, error) {
	s, err := h.lookup(ctx, id)
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
	return json.Marshal(s.m)
}

// Log returns the hub's log, which readers read (never write).
func (h *Hub) Log() Log { return h.cfg.Log }

// Partitioned reports whether the hub is a cluster node's
// (Config.Partitioned): it keeps every session of its partitions in
// memory, ended ones too, and its index in the log is not kept.
func (h *Hub) Partitioned() bool { return h.cfg.Partitioned }

// Resident returns how many sessions the hub holds in memory: the live
// ones (open or pending: always) and the ended ones cached after a read
// (at most Config.EndedCache).
func (h *Hub) Resident() (live, cached int) {
	h.reg.mu.RLock()
	live = len(h.reg.sessions)
	h.reg.mu.RUnlock()
	return live, h.reg.cache.len()
}

// TypeOf returns the type of session id ("workflow@1"), for observers: it
// takes no session's lock, so a hook may call it (the metrics label what
// the hooks report with it).
func (h *Hub) TypeOf(id session.ID) (string, bool) {
	h.reg.mu.RLock()
	s, ok := h.reg.sessions[id]
	h.reg.mu.RUnlock()
	if !ok {
		if s, ok = h.reg.cache.peek(id); !ok {
			return "", false
		}
	}
	return s.meta.GetType(), true
}

// CountSessions calls f once for each session type and state the hub
// holds live sessions in (open or pending: ended sessions are in the log,
// not in memory), with how many, in no particular order (for metrics).
// It takes no session's lock.
func (h *Hub) CountSessions(f func(typ string, state session.State, n int)) {
	type key struct {
		typ   string
		state session.State
	}
	counts := map[key]int{}
	h.reg.mu.RLock()
	for _, s := range h.reg.sessions { //hubd:orderless counting
		counts[key{s.meta.GetType(), session.State(s.state.Load())}]++
	}
	h.reg.mu.RUnlock()
	for k, n := range counts { //hubd:orderless the caller does not depend on the order
		f(k.typ, k.state, n)
	}
}

// The hub's answers to its readers (the feed): sessions found by id, by
// agent or under a parent, and copies of a session's state. None of them
// hands out a map or a machine of the hub's; those that read a machine
// take its session's lock, and the reader never does.
