package hub

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"github.com/hubd/hubd/hubpb"
	"maps"
	"slices"
	"sync"

	"github.com/hubd/hubd/session"
)

// The hub keeps in memory only what is live: open and pending sessions
// (their machines, timers, idempotency answers), plus a bounded cache of
// ended sessions a read loaded from the log. Everything else it finds
// through an index it keeps in the log itself (Log.IndexScan), written in
// the same atomic append as the records it describes, so that it is
// exactly as durable as they are:
//
//	'V'                          → "1": the index is complete (a log written before it is indexed at start)
//	'L' | session                → "": the session is live (written with its open, deleted with its end)
//	'P' | len | agent | session  → "": agent takes part in the session
//	'C' | parent | child         → "": child is a child session of parent
//	'K' | len | creator | key    → session: the session opened with idempotency key
//	'T' | len | creator | key    → session: the latest session of the creator's thread
//
// (len is the name's length, 2 bytes big-endian, so that a prefix of one
// name never matches another.) Start-up folds only the live sessions;
// listings, trees and subscriptions find ended ones through the index and
// load each on demand: start-up time and memory grow with the live
// sessions, not with the length of the log.
const (
	ixVersion byte = 'V'
	ixLive    byte = 'L'
	ixMember  byte = 'P'
	ixChild   byte = 'C'
	ixOpenKey byte = 'K'
	ixThread  byte = 'T'
)

// indexVersion is the value of the 'V' key.
const indexVersion = "1"

func versionKey() []byte { return []byte{ixVersion} }

func liveKey(id session.ID) []byte { return append([]byte{ixLive}, id[:]...) }

// nameKey is kind | len(name) | name, the prefix of an agent's keys.
func nameKey(kind byte, name string) []byte {
	b := binary.BigEndian.AppendUint16([]byte{kind}, uint16(len(name)))
	return append(b, name...)
}

func memberKey(agent string, id session.ID) []byte { return append(nameKey(ixMember, agent), id[:]...) }

func childKey(parent, child session.ID) []byte {
	return append(append([]byte{ixChild}, parent[:]...), child[:]...)
}

// keyKey is the index key of a creator's open or thread key: the key
// itself, or past maxPlainKey bytes its SHA-256 (after a 0xff byte, which
// no UTF-8 text holds), so that any key fits the log's index.
func keyKey(kind byte, creator, key string) []byte {
	b := nameKey(kind, creator)
	if len(key) <= maxPlainKey {
		return append(b, key...)
	}
	sum := sha256.Sum256([]byte(key))
	return append(append(b, 0xff), sum[:]...)
}

// maxPlainKey is the longest open or thread key indexed as it is.
const maxPlainKey = 256

// createIndex is the index of a new session: its members, its place under
// its parent, its keys, and (unless it ended in its first write) its live
// mark.
func createIndex(s *Session) []IndexEntry {
	var out []IndexEntry
	if !s.m.Lifecycle.State.Ended() {
		out = append(out, IndexEntry{Key: liveKey(s.id)})
	}
	for _, p := range s.meta.GetParticipants() {
		out = append(out, IndexEntry{Key: memberKey(p.GetName(), s.id)})
	}
	if pid, err := session.ParseID(s.meta.GetParentSessionId()); err == nil {
		out = append(out, IndexEntry{Key: childKey(pid, s.id)})
	}
	if k := s.meta.GetOpenKey(); k != "" {
		out = append(out, IndexEntry{Key: keyKey(ixOpenKey, s.meta.GetCreator(), k), Value: s.id[:]})
	}
	if k := s.meta.GetThreadKey(); k != "" {
		out = append(out, IndexEntry{Key: keyKey(ixThread, s.meta.GetCreator(), k), Value: s.id[:]})
	}
	return out
}

// indexedID reads a session id stored as an index value or key suffix.
func indexedID(b []byte) (session.ID, bool) {
	if len(b) < 16 {
		return session.ID{}, false
	}
	return session.ID(b[len(b)-16:]), true
}

// endedCache holds the ended sessions reads loaded, least recently used
// out first. Safe for concurrent use.
type endedCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List // of *Session, most recently used first
	m   map[session.ID]*list.Element
}

func newEndedCache(n int) *endedCache {
	return &endedCache{max: n, ll: list.New(), m: map[session.ID]*list.Element{}}
}

func (c *endedCache) get(id session.ID) (*Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*Session), true
}

// peek is get without making it recent.
func (c *endedCache) peek(id session.ID) (*Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok {
		return nil, false
	}
	return e.Value.(*Session), true
}

// put adds s, or returns the copy already there.
func (c *endedCache) put(s *Session) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[s.id]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*Session)
	}
	c.m[s.id] = c.ll.PushFront(s)
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*Session).id)
	}
	return s
}

func (c *endedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Resident returns how many sessions the hub holds in memory: the live
// ones (open or pending: always) and the ended ones cached after a read
// (at most Config.EndedCache).
func (h *Hub) Resident() (live, cached int) {
	h.reg.mu.RLock()
	live = len(h.reg.sessions)
	h.reg.mu.RUnlock()
	return live, h.reg.cache.len()
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
		return nil, fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
	}
	s, err := h.start(meta, id)
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

// live returns the live session with id, if it is one.
func (h *Hub) live(id session.ID) (*Session, bool) {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	s, ok := h.reg.sessions[id]
	return s, ok
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

func compareIDs(a, b session.ID) int { return bytes.Compare(a[:], b[:]) }

// registry is what the hub finds its sessions by, guarded by mu: the live
// sessions by id, by participant and by their creators' keys, the open
// count of each creator, the sessions asking questions, the quarantined
// ones, and the cache of ended sessions reads loaded. A session's own
// state is guarded by its tree's lock, not by mu.
type registry struct {
	mu        sync.RWMutex
	sessions  map[session.ID]*Session
	byAgent   map[string]map[session.ID]*Session // participant → sessions
	openKeys  map[string]session.ID              // creator + open key → session
	threads   map[string]*Session                // creator + thread key → the thread's latest session
	askers    map[session.ID]*Session            // sessions with pending questions
	openCount map[string]int                     // creator → pending or open sessions
	// quarantined are the sessions that could not be rebuilt from the
	// log, with why; quarantinedMeta the stored metadata of those whose
	// metadata decodes (who takes part, for listings and answers).
	quarantined     map[session.ID]error
	quarantinedMeta map[session.ID]*hubpb.SessionMeta
	cache           *endedCache // ended sessions reads loaded; its own lock
}

func newRegistry(ended int) registry {
	return registry{sessions: map[session.ID]*Session{}, byAgent: map[string]map[session.ID]*Session{},
		openKeys: map[string]session.ID{}, threads: map[string]*Session{}, askers: map[session.ID]*Session{}, openCount: map[string]int{},
		quarantined: map[session.ID]error{}, quarantinedMeta: map[session.ID]*hubpb.SessionMeta{}, cache: newEndedCache(ended)}
}
