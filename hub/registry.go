package hub

import (
	"container/list"
	"sync"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// registry is what the hub finds its sessions by, guarded by mu: the live
// sessions by id, by participant and by their creators' keys, the open
// count of each creator, the sessions asking questions, the quarantined
// ones, and the cache of ended sessions reads loaded. A session's own
// state is guarded by its tree's lock, not by mu.
type registry struct {
	mu        sync.RWMutex
	sessions  map[session.ID]*Session
	byAgent   map[string]map[session.ID]*Session // participant → sessions
	purging   map[session.ID]bool                // sessions being purged: not loaded again
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
		purging: map[session.ID]bool{}, openKeys: map[string]session.ID{}, threads: map[string]*Session{}, askers: map[session.ID]*Session{}, openCount: map[string]int{},
		quarantined: map[session.ID]error{}, quarantinedMeta: map[session.ID]*hubpb.SessionMeta{}, cache: newEndedCache(ended)}
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

// remove drops id.
func (c *endedCache) remove(id session.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[id]; ok {
		c.ll.Remove(e)
		delete(c.m, id)
	}
}

func (c *endedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
