package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Hub serves sessions: the write side of hubd. Create it with New; it is
// safe for concurrent use. Its fields are few on purpose, each a room of
// its own with its own lock (see doc.go):
type Hub struct {
	cfg      Config    // with its defaults; Log, Clock and Logger are the hub's
	reg      registry  // the sessions by id, agent and key; the quarantined; the ended cache (registry.go)
	ids      idSource  // new ids above every id held, for the live snapshot (ids.go)
	interned interner  // knob values shared between sessions (intern.go)
	sched    scheduler // every session's next deadline, one clock timer (scheduler.go)
	feed     Consumer  // reads what the hub publishes: its feed (Config.Feed), or none (publish.go)
	gate     gate      // calls in flight and Close (life.go)
	spans    tracing   // the send path's spans (trace.go)
}

// tree is a delegation tree: a root session and its descendants. Its lock
// is a one-slot semaphore held for a whole change (validate → commit →
// deliver) of any session of the tree, so a change that spans sessions (a
// child's open and its parent's record, a child's end and its parent's
// result, a budget closing a whole tree) sees and writes them all at once.
// Sessions of different trees never wait for each other.
type tree struct {
	lock chan struct{}
	root session.ID
	// live counts the tree's sessions pending or open (MaxTreeSessions);
	// changed with the hub's indexes, read under the tree's lock.
	live atomic.Int64
}

func newTree(root session.ID) *tree { return &tree{lock: make(chan struct{}, 1), root: root} }

// Session is one session the hub serves: its machine and what is derived
// from it, guarded by its tree's lock, and what it publishes for readers
// (see publish.go), which they read without the lock.
type Session struct {
	id   session.ID
	meta *hubpb.SessionMeta // immutable
	call *hubpb.Call        // its place in the call tree, stamped on every envelope
	tree *tree

	// Guarded by the tree's lock.
	m       *adapters.Machine
	failed  error
	dedup   map[string]uint64 // sender \x00 client message id → seq
	trigger *hubpb.Envelope   // the envelope that began the current turn
	lastAt  time.Time
	parent  *Session   // nil for a root (or a child whose parent is not served)
	kids    []*Session // every child, oldest first
	task    string     // a child's task until its open is written (Delegate)
	// turnKids counts the children delegations opened since the current
	// turn began (MaxChildrenPerTurn), folded from the log with the turn.
	turnKids int
	asking   bool // noteAsking last put it in Hub.askers
	dropped  bool // a new session whose open did not land (see forget)

	tail atomic.Value // the consumer's Tail, told every envelope folded; its own lock

	// Readable without the lock: what the session's last commit
	// published (see publish), for listings and deliveries.
	state     atomic.Uint32 // session.State
	lastSeq   atomic.Uint64
	reason    atomic.Pointer[string]                   // set when the session ends
	turn      atomic.Pointer[Turn]                     // who is expected to speak, and what began the turn; nil: nobody
	questions atomic.Pointer[[]*hubpb.PendingQuestion] // its pending questions; nil: none
	gone      atomic.Bool                              // unloaded (its partition moved): never scheduled again

	// Guarded by the scheduler's mutex.
	due     time.Time
	heapIdx int
}

// newSession makes a session of machine m, with the consumer's tail.
func (h *Hub) newSession(id session.ID, m *adapters.Machine) *Session {
	root := m.Meta.GetRootSessionId()
	if root == "" {
		root = id.String()
	}
	call := &hubpb.Call{Id: id.String(), Parent: m.Meta.GetParentSessionId(), Root: root, Depth: m.Meta.GetDepth()}
	s := &Session{id: id, meta: m.Meta, m: m, call: call, heapIdx: -1}
	if t := h.feed.Tail(m.Meta); t != nil {
		s.tail.Store(t)
	}
	return s
}

// publish copies what readers read without the lock (listings, and a
// subscription's catch-up: the state, the last seq, the turn, the pending
// questions); the caller holds it. It runs before the commit is handed to
// the consumer, so a reader that registers for deliveries and then reads
// what is published misses nothing.
func (s *Session) publish() {
	s.lastSeq.Store(s.m.Seq) // before the state: an end comes with its last seq (and its reason)
	if s.m.Lifecycle.State.Ended() && s.reason.Load() == nil {
		r := s.m.Lifecycle.Reason
		s.reason.Store(&r)
	}
	s.state.Store(uint32(s.m.Lifecycle.State))
	if exp := s.m.Expected(); len(exp) > 0 && s.trigger != nil {
		if t := s.turn.Load(); t == nil || t.Trigger != s.trigger || !slices.Equal(t.Expected, exp) {
			s.turn.Store(&Turn{Trigger: s.trigger, Expected: exp})
		}
	} else if s.turn.Load() != nil {
		s.turn.Store(nil)
	}
	if len(s.m.Calls.Questions) > 0 {
		qs := pendingOf(s)
		s.questions.Store(&qs)
	} else if s.questions.Load() != nil {
		s.questions.Store(nil)
	}
}

// acquire takes the session's tree, waiting at most until ctx is done.
func (s *Session) acquire(ctx context.Context) error {
	select {
	case s.tree.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hold takes the session's tree, waiting as long as it takes.
func (s *Session) hold() { s.tree.lock <- struct{}{} }

func (s *Session) release() { <-s.tree.lock }

// New builds a hub and hydrates it: every live (open or pending) session
// in the log is re-folded and its timers re-armed before New returns;
// ended sessions stay in the log until a read loads them (see memory.go).
func New(ctx context.Context, cfg Config) (*Hub, error) {
	return newHub(ctx, cfg, cfg.NewID == nil)
}

// newHub is New; v7IDs says the ids are UUIDv7s made from the wall clock.
func newHub(ctx context.Context, cfg Config, v7IDs bool) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h := &Hub{cfg: cfg, reg: newRegistry(cfg.EndedCache), ids: idSource{v7: v7IDs}, feed: noConsumer{}, spans: newTracing(cfg.Tracer)}
	if cfg.Feed != nil {
		if c := cfg.Feed(h); c != nil {
			h.feed = c
		}
	}
	h.gate.open()
	h.sched.init(cfg.Clock, h.runTimers)
	if !cfg.Partitioned {
		if err := h.hydrate(ctx); err != nil {
			h.gate.end()
			return nil, err
		}
	}
	if !cfg.FoldAll { // a check of the log: nothing may be written, no timer fires
		h.sched.start()
	}
	return h, nil
}

// Done is closed when Close begins: a stream that holds no subscription
// ends then too.
func (h *Hub) Done() <-chan struct{} { return h.gate.life.Done() }

// Lifetime returns a context cancelled when Close begins, for
// context.AfterFunc: a stream can end with the hub without a goroutine
// waiting on Done.
func (h *Hub) Lifetime() context.Context { return h.gate.life }

// Close stops the hub: new calls fail with ErrClosed, in-flight changes
// finish, timers stop and every subscription ends with ErrClosed. It does
// not close the log; its owner closes it after the hub.
func (h *Hub) Close() error {
	if !h.gate.close() {
		return nil // closed already
	}
	h.sched.stop()
	if h.snapshotEligible() {
		// Nothing writes any more: the live set is final.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := h.writeSnapshot(ctx); err != nil {
			h.cfg.Logger.Warn().Err(err).Msg("live snapshot not written: the next start scans the index")
		}
		cancel()
	}
	h.feed.Closed()
	return nil
}

// gate is a hub's life: the calls in flight, and whether Close has
// begun. Every change enters it and leaves it; Close waits for those in
// flight, and no change enters after.
type gate struct {
	mu       sync.RWMutex // enter's read side, close's write side
	closed   atomic.Bool
	inflight sync.WaitGroup
	life     context.Context    // cancelled when Close begins
	end      context.CancelFunc // cancels life
}

// open starts the hub's life.
func (g *gate) open() { g.life, g.end = context.WithCancel(context.Background()) }

// enter registers an in-flight call, or fails once the hub is closing.
// The lock orders every Add before close's Wait (a WaitGroup's Add at
// zero must not race its Wait).
func (g *gate) enter() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return ErrClosed
	}
	g.inflight.Add(1)
	return nil
}

func (g *gate) leave() { g.inflight.Done() }

// close ends the hub's life and waits for the calls in flight; it
// reports false when Close had begun already.
func (g *gate) close() bool {
	g.mu.Lock()
	already := g.closed.Swap(true)
	g.mu.Unlock()
	if already {
		return false
	}
	g.end()
	g.inflight.Wait()
	return true
}

func (h *Hub) newID() uuid.UUID {
	if h.ids.v7 {
		return h.ids.next(h.cfg.NewID())
	}
	return h.cfg.NewID()
}

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

func openKey(creator, key string) string { return creator + "\x00" + key }

func dedupKey(from, id string) string { return from + "\x00" + id }

// noConsumer is the consumer of a hub without a feed: it keeps nothing
// and delivers nothing.
type noConsumer struct{}

func (noConsumer) Tail(*hubpb.SessionMeta) Tail      { return nil }
func (noConsumer) Committed(*Commit)                 {}
func (noConsumer) Moved([]string, []*Session, error) {}
func (noConsumer) Closed()                           {}
