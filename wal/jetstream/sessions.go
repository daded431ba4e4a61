package jetstream

import (
	"context"
	"slices"
	"sync"
)

// markEvery is how far apart, in hub seqs, the stream seqs a session
// remembers are: a read from seq n starts at most markEvery-1 records
// before n.
const markEvery = 64

// pos places one record: its hub seq and its stream seq.
type pos struct{ seq, sseq uint64 }

// entry is what the log knows of one session: its partition (fixed for
// ever), and, while known, its last record and some of its records' stream
// seqs. lock serializes appends to the session.
type entry struct {
	part  int
	known bool // tail is the log as last read or written by this log
	tail  pos
	marks []pos // ascending; hub seqs 1, 65, 129, …
	lock  chan struct{}
}

// sessions is the log's cache of entries. Positions are facts for as
// long as the session is in its stream (until Delete), but a tail is only as fresh as
// the last read or write: a stale one makes JetStream refuse the next
// append (ErrFenced), never accept a wrong one.
type sessions struct {
	mu sync.Mutex
	m  map[[16]byte]*entry
}

func (s *sessions) init() { s.m = map[[16]byte]*entry{} }

// get returns the session's entry, nil if unknown.
func (s *sessions) get(id [16]byte) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// place returns the session's entry, creating it in partition part if
// unknown; the entry's partition is the one known first.
func (s *sessions) place(id [16]byte, part int) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[id]; ok {
		return e
	}
	e := &entry{part: part, lock: make(chan struct{}, 1)}
	s.m[id] = e
	return e
}

// lock takes the append locks of es (in the order of their sessions, so
// two appends never wait for each other crosswise), giving up when ctx
// ends.
func lock(ctx context.Context, es []*entry) error {
	for i, e := range es {
		select {
		case e.lock <- struct{}{}:
		case <-ctx.Done():
			unlock(es[:i])
			return ctx.Err()
		}
	}
	return nil
}

func unlock(es []*entry) {
	for _, e := range es {
		<-e.lock
	}
}

// tail returns the session's last record as known.
func (s *sessions) tail(e *entry) (pos, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.tail, e.known
}

// learn records that the session's record seq is at stream seq sseq; if
// last, it is the session's last record as of now.
func (s *sessions) learn(e *entry, p pos, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.learnLocked(e, p, last)
}

func (s *sessions) learnLocked(e *entry, p pos, last bool) {
	if last && (!e.known || p.sseq >= e.tail.sseq) {
		e.tail, e.known = p, true
	}
	if p.seq%markEvery != 1 {
		return
	}
	i, found := slices.BinarySearchFunc(e.marks, p.seq, func(m pos, seq uint64) int { return cmpU64(m.seq, seq) })
	if !found {
		e.marks = slices.Insert(e.marks, i, p)
	}
}

// learnID is learn for a session by id, placing it in part if unknown.
func (s *sessions) learnID(id [16]byte, part int, p pos, last bool) {
	s.learn(s.place(id, part), p, last)
}

// forget drops what the log believes of the sessions' tails after a write
// whose outcome is not known, or was refused.
func (s *sessions) forget(es []*entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range es {
		e.known = false
	}
}

// mark returns the greatest remembered position at or before seq.
func (s *sessions) mark(id [16]byte, seq uint64) (pos, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return pos{}, false
	}
	i, found := slices.BinarySearchFunc(e.marks, seq, func(m pos, seq uint64) int { return cmpU64(m.seq, seq) })
	switch {
	case found:
		return e.marks[i], true
	case i > 0:
		return e.marks[i-1], true
	}
	return pos{}, false
}

// remove forgets a deleted session.
func (s *sessions) remove(id [16]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// drop forgets the tails of partition k's sessions and removes the entries
// no append holds.
func (s *sessions) drop(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.m {
		if e.part != k {
			continue
		}
		e.known = false
		if len(e.lock) == 0 {
			delete(s.m, id)
		}
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
