package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ErrPurged: the session was purged (its retention passed, or an operator
// purged it); a *PurgedError wraps it with when and the archive file.
var ErrPurged = session.NewError(hubpb.Reason_PURGED, "hub: session purged")

// GoneKind says why a session left the log.
type GoneKind byte

const (
	// GonePurged: its retention passed, or an operator purged it.
	GonePurged GoneKind = 1
	// GoneErased: it was erased on request.
	GoneErased GoneKind = 2
)

// Tombstone is what the log keeps of a session it deleted.
type Tombstone struct {
	Kind    GoneKind
	At      time.Time // when it was removed
	Archive string    // the archive file that holds it ("": none)
}

// Purger is a Log that deletes sessions (the badger log does; a cluster
// node's does not).
type Purger interface {
	// DeleteSession removes every key of the session, and the hub's index
	// keys given, leaving its tombstone, in steps a crash cannot leave
	// half done (the log finishes an interrupted deletion when it opens).
	DeleteSession(ctx context.Context, session [16]byte, t Tombstone, index [][]byte) error
	// Gone returns the session's tombstone, and whether it has one (its
	// deletion may still be in progress).
	Gone(ctx context.Context, session [16]byte) (Tombstone, bool, error)
}

// Archiver writes a session about to be purged to an archive, durably,
// and returns the archive file's name.
type Archiver interface {
	Archive(ctx context.Context, s ArchivedSession) (string, error)
}

// ArchivedSession is what an Archiver writes: the session as its log
// stores it.
type ArchivedSession struct {
	Meta    []byte   // its stored hubpb.SessionMeta
	Records [][]byte // its stored hubpb.Envelope records, seq 1 first
	EndedAt time.Time
	At      time.Time // when it is archived
}

// PurgedError is the answer about a purged session: when, and the archive
// file that holds it. It wraps ErrPurged.
type PurgedError struct {
	ID session.ID
	Tombstone
}

func (e *PurgedError) Error() string {
	what := "purged"
	if e.Kind == GoneErased {
		what = "erased"
	}
	archive := "without an archive"
	if e.Archive != "" {
		archive = "archived in " + e.Archive
	}
	return fmt.Sprintf("session %v was %s at %s (%s): %v", e.ID, what, e.At.UTC().Format(time.RFC3339), archive, ErrPurged)
}

func (e *PurgedError) Unwrap() error { return ErrPurged }

// ErrorMetadata is the ErrorInfo metadata of the answer: "purged_at"
// (RFC 3339) and "archive" (the file; "" without an archive).
func (e *PurgedError) ErrorMetadata() map[string]string {
	return map[string]string{"purged_at": e.At.UTC().Format(time.RFC3339Nano), "archive": e.Archive}
}

// gone returns the *PurgedError of a session the log deleted, nil for
// any other (or a log that does not delete).
func (h *Hub) gone(ctx context.Context, id session.ID) error {
	p, ok := h.cfg.Log.(Purger)
	if !ok {
		return nil
	}
	t, found, err := p.Gone(ctx, id)
	if err != nil || !found {
		return nil
	}
	return &PurgedError{ID: id, Tombstone: t}
}

// Purge archives (with Config.Archive set) and purges session id at once,
// for an operator, whatever its retention: it must have ended, with its
// whole tree (its root and every descendant), and be the source of no
// fork (a fork replays its source's log). Refusals write nothing:
// BAD_LIFECYCLE_TRANSITION naming the open session or the fork;
// PURGED for a session purged already; UNKNOWN_SESSION.
func (h *Hub) Purge(ctx context.Context, id session.ID) (Tombstone, error) {
	if err := h.gate.enter(); err != nil {
		return Tombstone{}, err
	}
	defer h.gate.leave()
	return h.purge(ctx, id)
}

// purge is Purge within the gate.
func (h *Hub) purge(ctx context.Context, id session.ID) (Tombstone, error) {
	p, ok := h.cfg.Log.(Purger)
	if !ok || h.cfg.Partitioned {
		return Tombstone{}, fmt.Errorf("this hub's log does not purge sessions (a cluster node's log keeps its partitions' streams): %w",
			session.ErrBadTransition)
	}
	h.purges.Lock()
	defer h.purges.Unlock()
	s, err := h.lookup(ctx, id)
	if err != nil {
		return Tombstone{}, err
	}
	if err := h.purgeable(ctx, s); err != nil {
		return Tombstone{}, err
	}
	t := Tombstone{Kind: GonePurged, At: h.cfg.Clock.Now().UTC()}
	if h.cfg.Archive != nil {
		a, err := h.archived(ctx, s, t.At)
		if err == nil {
			t.Archive, err = h.cfg.Archive.Archive(ctx, a)
		}
		if err != nil {
			return Tombstone{}, fmt.Errorf("archiving session %v before its purge: %v: %w", id, err, ErrSessionFailed)
		}
	}
	index, err := h.purgeIndex(ctx, s)
	if err != nil {
		return Tombstone{}, err
	}
	h.reg.mu.Lock()
	h.reg.purging[id] = true
	h.reg.mu.Unlock()
	err = p.DeleteSession(ctx, id, t, index)
	h.reg.mu.Lock()
	h.reg.cache.remove(id)
	delete(h.reg.purging, id)
	h.reg.mu.Unlock()
	if err != nil {
		return Tombstone{}, fmt.Errorf("purging session %v: %v: %w", id, err, ErrSessionFailed)
	}
	return t, nil
}

// purgeable refuses a session that is not ended, whose tree has a session
// that is not, or that a fork replays.
func (h *Hub) purgeable(ctx context.Context, s *Session) error {
	if st := s.State(); !st.Ended() {
		return fmt.Errorf("session %v is %v: only an ended session is purged: %w", s.id, st, session.ErrBadTransition)
	}
	root := s.id
	if r, err := session.ParseID(s.meta.GetRootSessionId()); err == nil {
		root = r
	}
	stack := []session.ID{root}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if l, ok := h.live(x); ok && !l.State().Ended() {
			return fmt.Errorf("session %v of the tree of %v is %v: a tree is purged only once all of it ended: %w",
				x, s.id, l.State(), session.ErrBadTransition)
		}
		kids, err := h.childIDs(ctx, x)
		if err != nil {
			return err
		}
		stack = append(stack, kids...)
	}
	var fork []byte
	err := h.cfg.Log.IndexScan(ctx, forkPrefix(s.id), nil, func(k, _ []byte) error {
		fork = append(fork, k...)
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if f, ok := indexedID(fork); ok {
		return fmt.Errorf("session %v is the source of fork %v, whose state is folded from its log: purge the fork first: %w",
			s.id, f, session.ErrBadTransition)
	}
	return nil
}

// archived reads what the archive keeps of s.
func (h *Hub) archived(ctx context.Context, s *Session, at time.Time) (ArchivedSession, error) {
	meta, err := h.cfg.Log.Meta(ctx, s.id)
	if err != nil {
		return ArchivedSession{}, err
	}
	a := ArchivedSession{Meta: meta, At: at}
	err = h.cfg.Log.Scan(ctx, s.id, 1, func(_ uint64, data []byte) error {
		a.Records = append(a.Records, append([]byte(nil), data...))
		return nil
	})
	if err != nil {
		return ArchivedSession{}, err
	}
	a.EndedAt, err = h.endedAt(ctx, s.id)
	return a, err
}

// purgeIndex returns the index keys of s: its live mark, memberships,
// place under its parent and its children's under it, its fork mark, and
// its open and thread keys where they still name it (a thread's key
// names its latest session).
func (h *Hub) purgeIndex(ctx context.Context, s *Session) ([][]byte, error) {
	out := [][]byte{liveKey(s.id)}
	for _, p := range s.meta.GetParticipants() {
		out = append(out, memberKey(p.GetName(), s.id))
	}
	if pid, err := session.ParseID(s.meta.GetParentSessionId()); err == nil {
		out = append(out, childKey(pid, s.id))
	}
	if src, err := session.ParseID(s.meta.GetForkedFrom().GetSessionId()); err == nil {
		out = append(out, forkKey(src, s.id))
	}
	kids, err := h.childIDs(ctx, s.id)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		out = append(out, childKey(s.id, k))
	}
	for kind, key := range map[byte]string{ixOpenKey: s.meta.GetOpenKey(), ixThread: s.meta.GetThreadKey()} { //hubd:orderless a set of keys
		if key == "" {
			continue
		}
		k := keyKey(kind, s.meta.GetCreator(), key)
		v, ok, err := h.cfg.Log.IndexGet(ctx, k)
		if err != nil {
			return nil, err
		}
		if id, _ := indexedID(v); ok && id == s.id {
			out = append(out, k)
		}
	}
	return out, nil
}

// endedAt returns when session id ended: its last envelope's time.
func (h *Hub) endedAt(ctx context.Context, id session.ID) (time.Time, error) {
	var at time.Time
	last := func(_ uint64, data []byte) error {
		var e hubpb.Envelope
		if err := e.UnmarshalVT(data); err != nil {
			return err
		}
		at = session.Time(e.GetAcceptedAt())
		return nil
	}
	if back, ok := h.cfg.Log.(BackScanner); ok {
		err := back.ScanBack(ctx, id, 0, func(seq uint64, data []byte) error {
			if err := last(seq, data); err != nil {
				return err
			}
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			return time.Time{}, err
		}
		return at, nil
	}
	return at, h.cfg.Log.Scan(ctx, id, 1, last)
}
