package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// By and Reason are who erased it and why (GoneErased).
	By, Reason string
}

// Purger is a Log that deletes sessions: the badger log, and a cluster
// node's JetStream log (its partitions' streams, tombstone first).
type Purger interface {
	// DeleteSessions removes every key of each session, and the hub's
	// index keys given, leaving its tombstone, in steps a crash cannot
	// leave half done (the log finishes an interrupted deletion when it
	// opens).
	DeleteSessions(ctx context.Context, ds []Deletion) error
	// Gone returns the session's tombstone, and whether it has one (its
	// deletion may still be in progress).
	Gone(ctx context.Context, session [16]byte) (Tombstone, bool, error)
}

// Deletion is one session for Purger.DeleteSessions.
type Deletion struct {
	Session   [16]byte
	Tombstone Tombstone
	Index     [][]byte // the hub's index keys of the session
	// Exact are the keys of Index of a fixed length (no other key extends
	// one), which an erasure drops from the log's files at once.
	Exact [][]byte
	// Lazy lets the log return before the deletion is synced (a crash of
	// the machine may undo it, whole, until the next LazySyncer.SyncDeletions):
	// the retention sweep's, which nobody waits for.
	Lazy bool
}

// LazySyncer is a Purger whose lazy deletions become durable at
// SyncDeletions (the badger log).
type LazySyncer interface {
	SyncDeletions(ctx context.Context) error
}

// Archiver writes sessions about to be purged to an archive, durably
// (synced) before it returns, and returns the archive file's name.
type Archiver interface {
	Archive(ctx context.Context, ss []ArchivedSession) (string, error)
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
	if e.Kind == GoneErased {
		return fmt.Sprintf("session %v was erased at %s by %s (%s): %v", e.ID, e.At.UTC().Format(time.RFC3339), e.By, e.Reason, ErrErased)
	}
	archive := "without an archive"
	if e.Archive != "" {
		archive = "archived in " + e.Archive
	}
	return fmt.Sprintf("session %v was purged at %s (%s): %v", e.ID, e.At.UTC().Format(time.RFC3339), archive, ErrPurged)
}

// Unwrap is ErrErased for an erased session, else ErrPurged.
func (e *PurgedError) Unwrap() error {
	if e.Kind == GoneErased {
		return ErrErased
	}
	return ErrPurged
}

// ErrorMetadata is the ErrorInfo metadata of the answer: "purged_at"
// (RFC 3339) and "archive" (the file; "" without an archive); for an
// erased session "erased_at", "erased_by" and "reason".
func (e *PurgedError) ErrorMetadata() map[string]string {
	if e.Kind == GoneErased {
		return map[string]string{"erased_at": e.At.UTC().Format(time.RFC3339Nano), "erased_by": e.By, "reason": e.Reason}
	}
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
	ts, errs, err := h.purgeBatch(ctx, []session.ID{id}, false)
	if err != nil {
		return Tombstone{}, err
	}
	return ts[0], errs[0]
}

// purgeBatch purges ids, archived together: errs has the refusal of
// each id not eligible (the others purged, with their tombstones in ts);
// err is a failure of the archive or the log, where none was purged.
// lazy deletions are not synced before it returns (Deletion.Lazy).
func (h *Hub) purgeBatch(ctx context.Context, ids []session.ID, lazy bool) (ts []Tombstone, errs []error, err error) {
	p, ok := h.cfg.Log.(Purger)
	if !ok {
		return nil, nil, fmt.Errorf("this hub's log does not purge sessions: %w", session.ErrBadTransition)
	}
	h.retain.mu.Lock()
	defer h.retain.mu.Unlock()
	ts, errs = make([]Tombstone, len(ids)), make([]error, len(ids))
	at := h.cfg.Clock.Now().UTC()
	var ds []Deletion
	var as []ArchivedSession
	var where []int
	for i, id := range ids {
		d, a, err := h.purgeOne(ctx, id, at)
		if err != nil {
			errs[i] = err
			continue
		}
		d.Lazy = lazy
		ds, as, where = append(ds, d), append(as, a), append(where, i)
	}
	if len(ds) == 0 {
		return ts, errs, nil
	}
	if h.cfg.Archive != nil {
		file, err := h.cfg.Archive.Archive(ctx, as)
		if err != nil {
			return nil, nil, fmt.Errorf("archiving %d sessions before their purge: %v: %w", len(as), err, ErrSessionFailed)
		}
		for i := range ds {
			ds[i].Tombstone.Archive = file
		}
	}
	err = h.deleteAll(ctx, p, ds)
	if err != nil {
		return nil, nil, err
	}
	for i, d := range ds {
		ts[where[i]] = d.Tombstone
	}
	return ts, errs, nil
}

// purgeOne checks session id and reads what its purge needs, from its
// stored metadata and records (an ended session is not folded: its state
// is known from the registry and the index, where a live one is marked).
func (h *Hub) purgeOne(ctx context.Context, id session.ID, at time.Time) (Deletion, ArchivedSession, error) {
	m, raw, err := h.endedMeta(ctx, id)
	if err != nil {
		return Deletion{}, ArchivedSession{}, err
	}
	if err := h.purgeable(ctx, id, m); err != nil {
		return Deletion{}, ArchivedSession{}, err
	}
	var a ArchivedSession
	if h.cfg.Archive != nil {
		if a, err = h.archived(ctx, id, raw, at); err == nil && len(a.Records) == 0 {
			err = errors.New("the log holds none of its records")
		}
		if err != nil {
			return Deletion{}, ArchivedSession{}, fmt.Errorf("reading session %v to archive it: %v: %w", id, err, ErrSessionFailed)
		}
	}
	index, err := h.purgeIndex(ctx, id, m)
	if err != nil {
		return Deletion{}, ArchivedSession{}, err
	}
	return Deletion{Session: id, Tombstone: Tombstone{Kind: GonePurged, At: at}, Index: index}, a, nil
}

// endedMeta returns the metadata of session id, stored (raw) and decoded,
// when it is an ended session the hub may purge: not live (pending or
// open), not quarantined, not purged, and in the log.
func (h *Hub) endedMeta(ctx context.Context, id session.ID) (*hubpb.SessionMeta, []byte, error) {
	s, ok := h.live(id)
	if ok && !s.State().Ended() {
		return nil, nil, fmt.Errorf("session %v is %v: only an ended session is purged: %w", id, s.State(), session.ErrBadTransition)
	}
	if h.cfg.Partitioned {
		return h.residentMeta(ctx, id, s)
	}
	h.reg.mu.RLock()
	q := h.reg.quarantined[id]
	h.reg.mu.RUnlock()
	if q != nil {
		return nil, nil, fmt.Errorf("session %v is quarantined: its log is damaged: %w", id, ErrQuarantined)
	}
	raw, err := h.cfg.Log.Meta(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("reading session %v: %v: %w", id, err, ErrSessionFailed)
	}
	if raw == nil {
		if err := h.gone(ctx, id); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
	}
	if _, live, err := h.cfg.Log.IndexGet(ctx, liveKey(id)); err != nil || live {
		if err == nil {
			err = fmt.Errorf("session %v is live (pending or open): only an ended session is purged: %w", id, session.ErrBadTransition)
		}
		return nil, nil, err
	}
	m, err := session.UnmarshalMeta(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("session %v: its metadata does not decode: %v: %w", id, err, ErrQuarantined)
	}
	return m, raw, nil
}

// residentMeta is endedMeta on a partitioned hub, which holds every
// session of its partitions, ended ones too: s when it holds it.
func (h *Hub) residentMeta(ctx context.Context, id session.ID, s *Session) (*hubpb.SessionMeta, []byte, error) {
	if s == nil {
		if _, err := h.lookup(ctx, id); err != nil {
			return nil, nil, err // served elsewhere, quarantined, gone or unknown
		}
		return nil, nil, fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
	}
	raw, err := session.MarshalMeta(s.meta)
	if err != nil {
		return nil, nil, fmt.Errorf("session %v: %v: %w", id, err, ErrSessionFailed)
	}
	return s.meta, raw, nil
}

// deleteAll deletes ds from the log, keeping reads from loading them
// meanwhile, and drops them from the cache of ended sessions.
func (h *Hub) deleteAll(ctx context.Context, p Purger, ds []Deletion) error {
	if err := h.leaving(ds, func() error { return p.DeleteSessions(ctx, ds) }); err != nil {
		if errors.Is(err, ErrNotOwner) || errors.Is(err, session.ErrBadTransition) {
			return err // a cluster's partition moved, or its stream keeps its sessions
		}
		return fmt.Errorf("purging %d sessions: %v: %w", len(ds), err, ErrSessionFailed)
	}
	return nil
}

// leaving runs remove, which takes ds out of the log, with the sessions
// marked as leaving (no read loads them meanwhile), then drops them from
// the cache of ended sessions.
func (h *Hub) leaving(ds []Deletion, remove func() error) error {
	h.reg.mu.Lock()
	for _, d := range ds {
		h.reg.purging[d.Session] = true
	}
	h.reg.mu.Unlock()
	err := remove()
	removed := map[session.ID]bool{}
	for _, d := range ds {
		// A cluster's log deletes session by session: after a failure,
		// those whose tombstone is written left the stream all the same.
		removed[d.Session] = err == nil || (h.cfg.Partitioned && h.gone(context.Background(), d.Session) != nil)
	}
	var dropped []*Session
	h.reg.mu.Lock()
	for _, d := range ds {
		h.reg.cache.remove(d.Session)
		delete(h.reg.purging, d.Session)
		if s, ok := h.reg.sessions[d.Session]; ok && h.cfg.Partitioned && removed[d.Session] {
			h.dropResidentLocked(s)
			dropped = append(dropped, s)
		}
	}
	h.reg.mu.Unlock()
	for _, s := range dropped {
		unlink(s)
	}
	return err
}

// unlink takes a deleted session s out of its parent's children (a
// partitioned hub keeps ended parents, with their children, in memory).
func unlink(s *Session) {
	p := s.parent
	if p == nil {
		return
	}
	p.hold()
	p.kids = slices.DeleteFunc(p.kids, func(k *Session) bool { return k == s })
	p.release()
}

// purgeable refuses a session whose tree has a session that is not
// ended, or that a fork replays.
func (h *Hub) purgeable(ctx context.Context, id session.ID, m *hubpb.SessionMeta) error {
	root := id
	if r, err := session.ParseID(m.GetRootSessionId()); err == nil {
		root = r
	}
	stack := []session.ID{root}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if l, ok := h.live(x); ok && !l.State().Ended() {
			return fmt.Errorf("session %v of the tree of %v is %v: a tree is purged only once all of it ended: %w",
				x, id, l.State(), session.ErrBadTransition)
		}
		kids, err := h.childIDs(ctx, x)
		if err != nil {
			return err
		}
		stack = append(stack, kids...)
	}
	var fork []byte
	err := h.cfg.Log.IndexScan(ctx, forkPrefix(id), nil, func(k, _ []byte) error {
		fork = append(fork, k...)
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if f, ok := indexedID(fork); ok {
		return fmt.Errorf("session %v is the source of fork %v, whose state is folded from its log: purge the fork first: %w",
			id, f, session.ErrBadTransition)
	}
	return nil
}

// archived reads what the archive keeps of session id: its stored
// metadata and records, and when it ended (its last record's time).
func (h *Hub) archived(ctx context.Context, id session.ID, meta []byte, at time.Time) (ArchivedSession, error) {
	a := ArchivedSession{Meta: meta, At: at}
	err := h.cfg.Log.Scan(ctx, id, 1, func(_ uint64, data []byte) error {
		a.Records = append(a.Records, append([]byte(nil), data...))
		return nil
	})
	if err != nil || len(a.Records) == 0 {
		return a, err
	}
	var last hubpb.Envelope
	if err := last.UnmarshalVT(a.Records[len(a.Records)-1]); err != nil {
		return a, err
	}
	a.EndedAt = session.Time(last.GetAcceptedAt())
	return a, nil
}

// purgeIndex returns the index keys of session id: its live mark, memberships,
// place under its parent and its children's under it, its fork mark, and
// its open and thread keys where they still name it (a thread's key
// names its latest session).
func (h *Hub) purgeIndex(ctx context.Context, id session.ID, m *hubpb.SessionMeta) ([][]byte, error) {
	out := [][]byte{liveKey(id)}
	for _, p := range m.GetParticipants() {
		out = append(out, memberKey(p.GetName(), id))
	}
	if pid, err := session.ParseID(m.GetParentSessionId()); err == nil {
		out = append(out, childKey(pid, id))
	}
	if src, err := session.ParseID(m.GetForkedFrom().GetSessionId()); err == nil {
		out = append(out, forkKey(src, id))
	}
	kids, err := h.childIDs(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		out = append(out, childKey(id, k))
	}
	for kind, key := range map[byte]string{ixOpenKey: m.GetOpenKey(), ixThread: m.GetThreadKey()} { //hubd:orderless a set of keys
		if key == "" {
			continue
		}
		k := keyKey(kind, m.GetCreator(), key)
		v, ok, err := h.cfg.Log.IndexGet(ctx, k)
		if err != nil {
			return nil, err
		}
		if named, _ := indexedID(v); ok && named == id {
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

// LabelImportedFrom is the label of a session brought back from an
// archive (hubd log archive import): the archive file. The retention
// sweep leaves such a session alone; an operator purges it again.
const LabelImportedFrom = "imported_from"

// ImportIndex returns the hub's index entries of a session brought back
// from an archive: its memberships, so that listings and its
// participants' reads find it, and for a fork its mark under its source,
// so that the source, whose log the fork's state is folded from, is not
// purged under it. It is ended: no live mark; its open and thread keys
// stay free.
func ImportIndex(meta *hubpb.SessionMeta) []IndexEntry {
	id, err := session.ParseID(meta.GetSessionId())
	if err != nil {
		return nil
	}
	var out []IndexEntry
	for _, p := range meta.GetParticipants() {
		out = append(out, IndexEntry{Key: memberKey(p.GetName(), id)})
	}
	if src, err := session.ParseID(meta.GetForkedFrom().GetSessionId()); err == nil {
		out = append(out, IndexEntry{Key: forkKey(src, id)})
	}
	return out
}
