package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hubd/hubd/session"
)

// lookup returns a session: a live one, or an ended one from the cache or
// the log; else ErrUnknownSession (or the reason it is quarantined).
func (h *Hub) lookup(ctx context.Context, id session.ID) (*Session, error) {
	h.reg.mu.RLock()
	s, ok := h.reg.sessions[id]
	q := h.reg.quarantined[id]
	h.reg.mu.RUnlock()
	if ok {
		return s, nil
	}
	if q != nil {
		return nil, fmt.Errorf("session %v is quarantined: its log is damaged, and it serves nothing until an operator restores it: %w", id, ErrQuarantined)
	}
	if err := h.route(id); err != nil {
		return nil, err
	}
	return h.loadEnded(ctx, id)
}

// lookupFor is lookup for agent: a quarantined session's participants (by
// its stored metadata, when that decodes) and operators also get what was
// found wrong with it; others only that it is quarantined.
func (h *Hub) lookupFor(ctx context.Context, id session.ID, agent string, operator bool) (*Session, error) {
	s, err := h.lookup(ctx, id)
	if err == nil || !errors.Is(err, ErrQuarantined) {
		return s, err
	}
	h.reg.mu.RLock()
	q, meta := h.reg.quarantined[id], h.reg.quarantinedMeta[id]
	h.reg.mu.RUnlock()
	if operator || (meta != nil && session.IsParticipant(meta, agent)) {
		return nil, fmt.Errorf("session %v is quarantined (%v): it serves nothing until an operator restores it: %w", id, q, ErrQuarantined)
	}
	return nil, err
}

// live returns the live session with id, if it is one.
func (h *Hub) live(id session.ID) (*Session, bool) {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	s, ok := h.reg.sessions[id]
	return s, ok
}

// loadEnded returns an ended session, from the cache or loaded from the
// log; ErrUnknownSession when the log has none with id. A session that
// does not load is quarantined.
func (h *Hub) loadEnded(ctx context.Context, id session.ID) (*Session, error) {
	if s, ok := h.reg.cache.get(id); ok {
		return s, nil
	}
	meta, err := h.cfg.Log.Meta(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading session %v: %v: %w", id, err, ErrSessionFailed)
	}
	if meta == nil {
		if err := h.gone(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
	}
	s, err := h.start(ctx, meta, id)
	if err == nil {
		err = h.scanRest(ctx, s)
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err == nil && !s.m.Lifecycle.State.Ended() {
		err = fmt.Errorf("the log holds it open (at seq %d), but the index of open sessions does not: %w", s.m.Seq, session.ErrCorrupt)
	}
	if err != nil {
		if gerr := h.gone(ctx, id); gerr != nil {
			return nil, gerr // purged while it loaded
		}
		h.quarantine(id, err, meta)
		return nil, fmt.Errorf("session %v is quarantined: its log is damaged, and it serves nothing until an operator restores it: %w", id, ErrQuarantined)
	}
	s.tree = newTree(session.MustParseID(s.call.GetRoot()))
	s.publish()
	// The children it has no result from ended with it: its tree usage
	// counts theirs.
	for _, c := range s.m.Calls.Children {
		kid, err := session.ParseID(c.ID)
		if err != nil {
			continue
		}
		if k, err := h.lookup(ctx, kid); err == nil {
			s.kids = append(s.kids, k)
		}
	}
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	if h.reg.purging[id] {
		return nil, &PurgedError{ID: id, Tombstone: Tombstone{Kind: GonePurged, At: h.cfg.Clock.Now().UTC()}}
	}
	return h.reg.cache.put(s), nil
}

// quarantine records a session that cannot be rebuilt from its log, with
// its stored metadata when that decodes (who may see what was found).
func (h *Hub) quarantine(id session.ID, err error, meta []byte) {
	m, merr := session.UnmarshalMeta(meta)
	h.reg.mu.Lock()
	h.reg.quarantined[id] = err
	if merr == nil && meta != nil {
		h.reg.quarantinedMeta[id] = m
	}
	h.reg.mu.Unlock()
	h.cfg.Logger.Error().Err(err).Str("session", id.String()).Msg("session quarantined")
	if f := h.cfg.Hooks.SessionFailed; f != nil {
		f(id, err)
	}
}

// index adds a session to the hub's indexes.
func (h *Hub) index(s *Session) {
	h.reg.sessions[s.id] = s
	for _, p := range s.meta.GetParticipants() {
		m := h.reg.byAgent[p.GetName()]
		if m == nil {
			m = map[session.ID]*Session{}
			h.reg.byAgent[p.GetName()] = m
		}
		m[s.id] = s
	}
	if k := s.meta.GetOpenKey(); k != "" {
		h.reg.openKeys[openKey(s.meta.GetCreator(), k)] = s.id
	}
	if k := s.meta.GetThreadKey(); k != "" {
		h.reg.threads[openKey(s.meta.GetCreator(), k)] = s // ids are time-ordered: the latest indexed is the latest
	}
	if !session.State(s.state.Load()).Ended() {
		h.reg.openCount[s.meta.GetCreator()]++
		s.tree.live.Add(1)
	}
}

// reserve indexes a new session before its first write, checking the
// creator's limit and the open key.
func (h *Hub) reserve(s *Session, key string) error {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	creator := s.meta.GetCreator()
	if key != "" {
		if _, dup := h.reg.openKeys[openKey(creator, key)]; dup {
			return fmt.Errorf("an open with key %q is in progress: %w", key, ErrLimit)
		}
	}
	if max := h.cfg.MaxOpenPerAgent; max > 0 && h.reg.openCount[creator] >= max {
		return h.limitErr("--max-open-per-agent", max, ErrLimit, "%q has %d sessions pending or open (children it delegated included)", creator, h.reg.openCount[creator])
	}
	s.state.Store(uint32(session.StatePending))
	h.index(s)
	return nil
}

// unreserve removes a session whose first write failed.
func (h *Hub) unreserve(s *Session, key string) {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	delete(h.reg.sessions, s.id)
	for _, p := range s.meta.GetParticipants() {
		delete(h.reg.byAgent[p.GetName()], s.id)
	}
	if key != "" {
		delete(h.reg.openKeys, openKey(s.meta.GetCreator(), key))
	}
	if k := openKey(s.meta.GetCreator(), s.meta.GetThreadKey()); h.reg.threads[k] == s {
		delete(h.reg.threads, k) // the thread's latest is again the one before, in the log's index
	}
	h.reg.openCount[s.meta.GetCreator()]--
	s.tree.live.Add(-1)
	h.sched.remove(s)
}

// retire moves a session that just ended out of the live indexes, into the
// cache of ended sessions; the caller holds its tree's lock. A live parent
// keeps only live children; one that ended with it keeps it (its tree
// usage counts the children it has no result from).
func (h *Hub) retire(s *Session) {
	if h.cfg.Partitioned {
		return // a cluster node keeps its partitions' sessions (see partition.go)
	}
	h.reg.cache.put(s)
	h.reg.mu.Lock()
	delete(h.reg.sessions, s.id)
	for _, p := range s.meta.GetParticipants() {
		if m := h.reg.byAgent[p.GetName()]; m != nil {
			delete(m, s.id)
			if len(m) == 0 {
				delete(h.reg.byAgent, p.GetName())
			}
		}
	}
	if k := s.meta.GetOpenKey(); k != "" && h.reg.openKeys[openKey(s.meta.GetCreator(), k)] == s.id {
		delete(h.reg.openKeys, openKey(s.meta.GetCreator(), k))
	}
	if k := s.meta.GetThreadKey(); k != "" && h.reg.threads[openKey(s.meta.GetCreator(), k)] == s {
		delete(h.reg.threads, openKey(s.meta.GetCreator(), k))
	}
	delete(h.reg.askers, s.id)
	h.reg.mu.Unlock()
	h.sched.remove(s)
	if p := s.parent; p != nil && !p.m.Lifecycle.State.Ended() {
		p.kids = slices.DeleteFunc(p.kids, func(k *Session) bool { return k == s })
	}
}

// childIDs returns the ids of every child session of parent, oldest first.
func (h *Hub) childIDs(ctx context.Context, parent session.ID) ([]session.ID, error) {
	var out []session.ID
	if h.cfg.Partitioned {
		if p, ok := h.live(parent); ok {
			for _, k := range p.kids {
				out = append(out, k.id)
			}
		}
		return out, nil
	}
	err := h.cfg.Log.IndexScan(ctx, append([]byte{ixChild}, parent[:]...), nil, func(k, _ []byte) error {
		if id, ok := indexedID(k); ok {
			out = append(out, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the children of %v: %w", parent, err)
	}
	return out, nil
}

// allKids returns every child of s, live and ended, oldest first. A child
// that is quarantined is left out.
func (h *Hub) allKids(ctx context.Context, s *Session) ([]*Session, error) {
	ids, err := h.childIDs(ctx, s.id)
	if err != nil {
		return nil, err
	}
	out := make([]*Session, 0, len(ids))
	for _, id := range ids {
		k, err := h.lookup(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// memberOf calls fn with the id of every session agent takes part in whose
// id is greater than after (zero: all), in id order, until fn returns an
// error (errStop ends the walk quietly).
func (h *Hub) memberOf(ctx context.Context, agent string, after session.ID, fn func(id session.ID) error) error {
	if h.cfg.Partitioned {
		return h.residentOf(agent, after, fn)
	}
	prefix := nameKey(ixMember, agent)
	var from []byte
	if !after.IsZero() {
		from = append(slices.Clone(prefix), after[:]...)
	}
	err := h.cfg.Log.IndexScan(ctx, prefix, from, func(k, _ []byte) error {
		id, ok := indexedID(k)
		if !ok || len(k) != len(prefix)+16 {
			return nil
		}
		return fn(id)
	})
	if err == errStop {
		return nil
	}
	return err
}

// residentOf is memberOf for a cluster node's hub, which keeps every
// session of its partitions in memory.
func (h *Hub) residentOf(agent string, after session.ID, fn func(id session.ID) error) error {
	h.reg.mu.RLock()
	ids := slices.SortedFunc(maps.Keys(h.reg.byAgent[agent]), compareIDs)
	h.reg.mu.RUnlock()
	for _, id := range ids {
		if compareIDs(id, after) <= 0 {
			continue
		}
		if err := fn(id); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
	return nil
}

// keyed returns the session the index keeps under a creator's key (an
// open key or a thread key).
func (h *Hub) keyed(ctx context.Context, kind byte, creator, key string) (session.ID, bool, error) {
	v, ok, err := h.cfg.Log.IndexGet(ctx, keyKey(kind, creator, key))
	if err != nil || !ok {
		return session.ID{}, false, err
	}
	id, ok := indexedID(v)
	return id, ok, nil
}
