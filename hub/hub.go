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
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Hub serves sessions. Create it with New; it is safe for concurrent use.
type Hub struct {
	cfg    Config
	wal    Log
	clock  Clock
	logger zerolog.Logger

	mu          sync.RWMutex
	sessions    map[session.ID]*Session
	byAgent     map[string]map[session.ID]*Session // participant → sessions
	openKeys    map[string]session.ID              // creator + open key → session
	threads     map[string]*Session                // creator + thread key → the thread's latest session
	askers      map[session.ID]*Session            // sessions with pending questions
	openCount   map[string]int                     // creator → pending or open sessions
	quarantined map[session.ID]error
	// quarantinedMeta is the stored metadata of the quarantined sessions
	// whose metadata decodes: who takes part, for listings and answers.
	quarantinedMeta map[session.ID]*hubpb.SessionMeta
	cache           *endedCache // ended sessions reads loaded

	interned  interner // knob values shared between sessions
	feed      Consumer // reads the commits: the hub's feed (Config.Feed), or none
	sched     scheduler
	inflight  sync.WaitGroup
	closed    atomic.Bool
	recording bool               // Config.Tracer records spans (not the no-op one)
	life      context.Context    // cancelled when Close begins
	end       context.CancelFunc // cancels life
	gate      sync.RWMutex       // enter's read side, Close's write side

	// v7IDs: ids are the default Config.NewID's UUIDv7s (livesnap.go).
	v7IDs  bool
	idMu   sync.Mutex
	newest session.ID // the newest id made or held live, for the live snapshot
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
	h := &Hub{v7IDs: v7IDs,
		cfg: cfg, wal: cfg.Log, clock: cfg.Clock, logger: cfg.Logger,
		sessions: map[session.ID]*Session{}, byAgent: map[string]map[session.ID]*Session{},
		openKeys: map[string]session.ID{}, threads: map[string]*Session{}, askers: map[session.ID]*Session{}, openCount: map[string]int{},
		quarantined: map[session.ID]error{}, quarantinedMeta: map[session.ID]*hubpb.SessionMeta{},
		cache: newEndedCache(cfg.EndedCache), feed: noConsumer{},
	}
	if cfg.Feed != nil {
		if c := cfg.Feed(h); c != nil {
			h.feed = c
		}
	}
	_, noTracer := cfg.Tracer.(noop.Tracer)
	h.recording = !noTracer
	h.life, h.end = context.WithCancel(context.Background())
	h.sched.init(h)
	if !cfg.Partitioned {
		if err := h.hydrate(ctx); err != nil {
			h.end()
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
func (h *Hub) Done() <-chan struct{} { return h.life.Done() }

// Lifetime returns a context cancelled when Close begins, for
// context.AfterFunc: a stream can end with the hub without a goroutine
// waiting on Done.
func (h *Hub) Lifetime() context.Context { return h.life }

// Close stops the hub: new calls fail with ErrClosed, in-flight changes
// finish, timers stop and every subscription ends with ErrClosed. It does
// not close the log; its owner closes it after the hub.
func (h *Hub) Close() error {
	h.gate.Lock()
	already := h.closed.Swap(true)
	h.gate.Unlock()
	if already {
		return nil
	}
	h.end()
	h.inflight.Wait()
	h.sched.stop()
	if h.snapshotEligible() {
		// Nothing writes any more: the live set is final.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := h.writeSnapshot(ctx); err != nil {
			h.logger.Warn().Err(err).Msg("live snapshot not written: the next start scans the index")
		}
		cancel()
	}
	h.feed.Closed()
	return nil
}

// enter registers an in-flight call, or fails once the hub is closing.
// The gate orders every Add before Close's Wait (a WaitGroup's Add at
// zero must not race its Wait).
func (h *Hub) enter() error {
	h.gate.RLock()
	defer h.gate.RUnlock()
	if h.closed.Load() {
		return ErrClosed
	}
	h.inflight.Add(1)
	return nil
}

func (h *Hub) leave() { h.inflight.Done() }

func (h *Hub) newID() uuid.UUID {
	if h.v7IDs {
		return h.nextID()
	}
	return h.cfg.NewID()
}

// lookup returns a session: a live one, or an ended one from the cache or
// the log; else ErrUnknownSession (or the reason it is quarantined).
func (h *Hub) lookup(ctx context.Context, id session.ID) (*Session, error) {
	h.mu.RLock()
	s, ok := h.sessions[id]
	q := h.quarantined[id]
	h.mu.RUnlock()
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
	h.mu.RLock()
	q, meta := h.quarantined[id], h.quarantinedMeta[id]
	h.mu.RUnlock()
	if operator || (meta != nil && session.IsParticipant(meta, agent)) {
		return nil, fmt.Errorf("session %v is quarantined (%v): it serves nothing until an operator restores it: %w", id, q, ErrQuarantined)
	}
	return nil, err
}

// index adds a session to the hub's indexes.
func (h *Hub) index(s *Session) {
	h.sessions[s.id] = s
	for _, p := range s.meta.GetParticipants() {
		m := h.byAgent[p.GetName()]
		if m == nil {
			m = map[session.ID]*Session{}
			h.byAgent[p.GetName()] = m
		}
		m[s.id] = s
	}
	if k := s.meta.GetOpenKey(); k != "" {
		h.openKeys[openKey(s.meta.GetCreator(), k)] = s.id
	}
	if k := s.meta.GetThreadKey(); k != "" {
		h.threads[openKey(s.meta.GetCreator(), k)] = s // ids are time-ordered: the latest indexed is the latest
	}
	if !session.State(s.state.Load()).Ended() {
		h.openCount[s.meta.GetCreator()]++
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
