package hub

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

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
	asking   bool       // noteAsking last put it in the registry's askers
	deltas   deltaMeter // the deltas forwarded on the current turn (delta.go)
	dropped  bool       // a new session whose open did not land (see forget)

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

// ID returns the session's id.
func (s *Session) ID() session.ID { return s.id }

// Meta returns the session's metadata; it never changes and must not be
// changed.
func (s *Session) Meta() *hubpb.SessionMeta { return s.meta }

// Call returns the session's place in its call tree, as stamped on its
// envelopes; it never changes and must not be changed.
func (s *Session) Call() *hubpb.Call { return s.call }

// Root returns the id of the root of the session's tree.
func (s *Session) Root() session.ID { return s.tree.root }

// Parent returns the session's parent as this hub serves it: nil for a
// root, or for a child whose parent this hub does not hold with it (one
// loaded from the log after it ended). It never changes once the session
// is served.
func (s *Session) Parent() *Session { return s.parent }

// State returns the session's lifecycle state as of its last commit. Read
// before LastSeq, an ended state comes with the seq of the end.
func (s *Session) State() session.State { return session.State(s.state.Load()) }

// LastSeq returns the seq of the session's last commit (0 while its open
// is being written).
func (s *Session) LastSeq() uint64 { return s.lastSeq.Load() }

// Listing returns what a listing says of the session: metadata, state,
// last seq and close reason.
func (s *Session) Listing() *hubpb.SessionInfo { return listing(s) }

// Turn returns the session's current turn as of its last commit, nil
// when nobody is expected to speak.
func (s *Session) Turn() *Turn { return s.turn.Load() }

// Questions returns the session's pending questions for answerer ("":
// all), as of its last commit.
func (s *Session) Questions(answerer string) []*hubpb.PendingQuestion {
	p := s.questions.Load()
	if p == nil {
		return nil
	}
	var out []*hubpb.PendingQuestion
	for _, q := range *p {
		if answerer == "" || q.GetEnvelope().GetQuestion().GetAnswerer() == answerer {
			out = append(out, q)
		}
	}
	return out
}

// Tail returns the consumer's tail beside the session (nil without one).
// A session reloaded from its log after a failed write gets a new one.
func (s *Session) Tail() Tail {
	t, _ := s.tail.Load().(Tail)
	return t
}

// Decode reads one of the session's stored envelopes (a record of the
// log), with its call stamped.
func (s *Session) Decode(data []byte) (*hubpb.Envelope, error) { return s.decode(data) }

// Turn is a session's current turn: the envelope that began it and who is
// expected to speak.
type Turn struct {
	Trigger  *hubpb.Envelope
	Expected []string
}

// Tail is what a consumer keeps beside one session (the feed: the tail of
// its view items), built by folding the session's envelopes.
type Tail interface {
	// Add folds the session's next envelope.
	Add(e *hubpb.Envelope)
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

// pendingOf returns s's pending questions, as published (see publish).
func pendingOf(s *Session) []*hubpb.PendingQuestion {
	var out []*hubpb.PendingQuestion
	for _, p := range s.m.Calls.Questions {
		e := &hubpb.Envelope{SessionId: s.meta.GetSessionId(), Seq: p.Seq, Id: p.Envelope, From: p.Asker,
			Type: session.EventQuestion, AcceptedAt: session.Stamp(p.Asked), Call: s.call,
			Payload: &hubpb.Envelope_Question{Question: p.Question}}
		out = append(out, &hubpb.PendingQuestion{SessionId: s.meta.GetSessionId(), Asker: p.Asker, Envelope: e})
	}
	return out
}

// listing returns what a listing says of s: metadata, state, last seq and
// close reason. It needs no lock.
func listing(s *Session) *hubpb.SessionInfo {
	info := &hubpb.SessionInfo{Meta: s.meta, State: session.State(s.state.Load()).String(), Seq: s.lastSeq.Load()}
	if r := s.reason.Load(); r != nil {
		info.CloseReason = *r
	}
	return info
}

// observe records what the hub derives from each envelope besides the
// machine: idempotency answers, the current turn's trigger (begins: e
// began a turn), the last time.
func (s *Session) observe(e *hubpb.Envelope, begins bool) {
	if k := e.GetClientMsgId(); k != "" {
		if from := dedupSender(e); from != "" {
			if s.dedup == nil {
				s.dedup = map[string]uint64{}
			}
			s.dedup[dedupKey(from, k)] = e.GetSeq()
		}
	}
	if begins {
		s.trigger, s.turnKids = e, 0
	}
	if d := e.GetDelegation(); d != nil {
		s.turnKids += len(d.GetChildSessionIds())
	}
	if t := s.Tail(); t != nil {
		t.Add(e)
	}
	if at := session.Time(e.GetAcceptedAt()); at.After(s.lastAt) {
		s.lastAt = at
	}
}

// dedupSender is whose idempotency key an envelope carries: its sender, or
// for what the hub wrote on someone's behalf (a delegation, an operator's
// answer) that someone.
func dedupSender(e *hubpb.Envelope) string {
	switch {
	case e.GetFrom() != "":
		return e.GetFrom()
	case e.GetDelegation() != nil:
		return e.GetDelegation().GetDelegator()
	case e.GetAnswer().GetBy() != "":
		return e.GetAnswer().GetBy()
	}
	return ""
}

func dedupKey(from, id string) string { return from + "\x00" + id }

func openKey(creator, key string) string { return creator + "\x00" + key }

// decode reads one of s's stored envelopes, with its call stamped.
func (s *Session) decode(data []byte) (*hubpb.Envelope, error) {
	e, err := session.UnmarshalEnvelope(data)
	if err == nil {
		e.Call = s.call
	}
	return e, err
}

// kid returns the child of s with id, nil when it does not serve.
func (s *Session) kid(id string) *Session {
	for _, k := range s.kids {
		if k.meta.GetSessionId() == id {
			return k
		}
	}
	return nil
}

// root returns the root of s's tree as served (s itself for a root, or the
// highest ancestor that serves).
func (s *Session) root() *Session {
	r := s
	for r.parent != nil {
		r = r.parent
	}
	return r
}

// treeOf returns every session of s's tree held in memory, s's root first.
func treeOf(s *Session) []*Session {
	root := s
	for root.parent != nil {
		root = root.parent
	}
	all := []*Session{root}
	for i := 0; i < len(all); i++ {
		all = append(all, all[i].kids...)
	}
	return all
}

// rootCreator is who answers a session's questions by default: the
// creator of its tree's root.
func rootCreator(s *Session) string {
	if c := s.meta.GetRootCreator(); c != "" {
		return c
	}
	return s.meta.GetCreator()
}

func compareIDs(a, b session.ID) int { return bytes.Compare(a[:], b[:]) }
