package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ErrErased: the session was erased on an operator's request; a
// *PurgedError of kind GoneErased wraps it with when, by whom and why.
var ErrErased = session.NewError(hubpb.Reason_ERASED, "hub: session erased")

// Eraser is a Log that erases sessions: their keys deleted as by
// Purger.DeleteSessions, and every byte of them gone from its files.
type Eraser interface {
	EraseSessions(ctx context.Context, ds []Deletion) error
}

// ArchiveEraser removes sessions from an archive file (the Archiver's
// files), rewriting it without them, durably; and finds the archived
// sessions whose metadata match (by participant or thread: their index
// keys left the log with their purge).
type ArchiveEraser interface {
	Remove(ctx context.Context, file string, ids []session.ID) error
	Find(ctx context.Context, match func(*hubpb.SessionMeta) bool) ([]session.ID, error)
}

// maxEraseReason bounds an erasure's reason.
const maxEraseReason = 1024

// Erase erases the sessions req names, for an operator (by): by id, every
// session of a creator's thread, every session an agent takes part in.
// Live ones are closed first (reason "erased"); then each session's
// content leaves the archive file that holds it (a purged session's), the
// log and its files, and the hub's caches, and what remains is its
// tombstone: when, by whom, why. Every read of it then answers ERASED. A
// session erased before keeps its tombstone and is listed again.
// Refusals, which erase nothing: PERMISSION_DENIED for anybody but an
// operator, MALFORMED without a reason or sessions, UNKNOWN_SESSION for an
// id that names nothing, BAD_LIFECYCLE_TRANSITION for the source of a fork
// not erased with it (a fork folds its source's log) and on a hub whose
// log cannot erase (a cluster node's).
func (h *Hub) Erase(ctx context.Context, by string, operator bool, req *hubpb.EraseRequest) ([]Tombstone, []session.ID, error) {
	if err := h.gate.enter(); err != nil {
		return nil, nil, err
	}
	defer h.gate.leave()
	if !operator {
		return nil, nil, fmt.Errorf("%q may not erase sessions: it is an operator's call: %w", by, ErrPermissionDenied)
	}
	if req.GetReason() == "" || len(req.GetReason()) > maxEraseReason {
		return nil, nil, fmt.Errorf("an erasure needs a reason (1 to %d bytes), kept in each tombstone: %w", maxEraseReason, session.ErrMalformed)
	}
	if err := session.CheckText("reason", req.GetReason()); err != nil {
		return nil, nil, err
	}
	e, ok := h.cfg.Log.(Eraser)
	if !ok {
		return nil, nil, fmt.Errorf("this hub's log does not erase sessions: %w", session.ErrBadTransition)
	}
	ids, err := h.eraseTargets(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if ids, err = h.erasedHere(ctx, ids, len(req.GetSessionIds()) == 0); err != nil {
		return nil, nil, err
	}
	h.retain.mu.Lock()
	defer h.retain.mu.Unlock()
	if err := h.erasable(ctx, ids); err != nil {
		return nil, nil, err
	}
	t := Tombstone{Kind: GoneErased, At: h.cfg.Clock.Now().UTC(), By: by, Reason: req.GetReason()}
	ds, files, err := h.erasures(ctx, ids, by, t)
	if err != nil {
		return nil, nil, err
	}
	if err := h.eraseArchived(ctx, files); err != nil {
		return nil, nil, err
	}
	if err := h.eraseAll(ctx, e, ds); err != nil {
		return nil, nil, err
	}
	ts := make([]Tombstone, len(ids))
	for i, id := range ids {
		ts[i] = t
		if old, ok := h.tombstone(ctx, id); ok {
			ts[i] = old // erased before, or just now
		}
	}
	return ts, ids, nil
}

// eraseTargets resolves what req names into session ids, sorted, each
// once.
func (h *Hub) eraseTargets(ctx context.Context, req *hubpb.EraseRequest) ([]session.ID, error) {
	var ids []session.ID
	for _, s := range req.GetSessionIds() {
		id, err := session.ParseID(s)
		if err != nil {
			return nil, fmt.Errorf("session_ids: %q: %v: %w", s, err, session.ErrMalformed)
		}
		ids = append(ids, id)
	}
	if k := req.GetThreadKey(); k != "" {
		if req.GetCreator() == "" {
			return nil, fmt.Errorf("thread_key %q: a thread is its creator's: name the creator too: %w", k, session.ErrMalformed)
		}
		thread, err := h.threadIDs(ctx, req.GetCreator(), k)
		if err != nil && !errors.Is(err, ErrUnknownSession) {
			return nil, err
		}
		ids = append(ids, thread...)
	}
	if h.cfg.Partitioned && len(ids) > 0 && (req.GetThreadKey() != "" || req.GetParticipant() != "") {
		return nil, fmt.Errorf("on a cluster an erasure names its sessions by id, or by thread and participant, not both in one call: %w",
			session.ErrBadTransition)
	}
	if p := req.GetParticipant(); p != "" && h.cfg.Partitioned {
		// This node's part: the cluster asks every node (gathered).
		if err := h.residentOf(p, session.ID{}, func(id session.ID) error { ids = append(ids, id); return nil }); err != nil {
			return nil, err
		}
	} else if p != "" {
		err := h.cfg.Log.IndexScan(ctx, nameKey(ixMember, p), nil, func(k, _ []byte) error {
			if id, ok := indexedID(k[len(k)-16:]); ok {
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(req.GetSessionIds()) == 0 && req.GetThreadKey() == "" && req.GetParticipant() == "" {
		return nil, fmt.Errorf("an erasure names its sessions: session_ids, a thread_key with its creator, or a participant: %w", session.ErrMalformed)
	}
	archived, err := h.archivedTargets(ctx, req)
	if err != nil {
		return nil, err
	}
	ids = append(ids, archived...)
	slices.SortFunc(ids, func(a, b session.ID) int { return slices.Compare(a[:], b[:]) })
	return slices.Compact(ids), nil
}

// archivedTargets are the purged sessions of the archives a thread or
// participant of req names.
func (h *Hub) archivedTargets(ctx context.Context, req *hubpb.EraseRequest) ([]session.ID, error) {
	ae, ok := h.cfg.Archive.(ArchiveEraser)
	if !ok || (req.GetThreadKey() == "" && req.GetParticipant() == "") {
		return nil, nil
	}
	return ae.Find(ctx, func(m *hubpb.SessionMeta) bool {
		if req.GetThreadKey() != "" && m.GetThreadKey() == req.GetThreadKey() && m.GetCreator() == req.GetCreator() {
			return true
		}
		return req.GetParticipant() != "" && session.IsParticipant(m, req.GetParticipant())
	})
}

// threadIDs are the sessions of a creator's thread still in the log: its
// latest, then each one's previous.
func (h *Hub) threadIDs(ctx context.Context, creator, key string) ([]session.ID, error) {
	if h.cfg.Partitioned {
		return h.residentThread(creator, key)
	}
	v, ok, err := h.cfg.Log.IndexGet(ctx, keyKey(ixThread, creator, key))
	if err != nil {
		return nil, err
	}
	id, found := indexedID(v)
	if !ok || !found {
		return nil, fmt.Errorf("%s has no thread %q: %w", creator, key, ErrUnknownSession)
	}
	var out []session.ID
	for seen := 0; seen < 100000; seen++ {
		out = append(out, id)
		raw, err := h.cfg.Log.Meta(ctx, id)
		if err != nil || raw == nil {
			return out, nil // the rest of the thread left the log
		}
		m, err := session.UnmarshalMeta(raw)
		if err != nil {
			return out, nil
		}
		prev, err := session.ParseID(m.GetPreviousSessionId())
		if err != nil {
			return out, nil
		}
		id = prev
	}
	return out, nil
}

// erasable refuses ids naming nothing and sources of forks not erased
// with them.
func (h *Hub) erasable(ctx context.Context, ids []session.ID) error {
	for _, id := range ids {
		if _, ok := h.tombstone(ctx, id); ok {
			continue
		}
		if h.cfg.Partitioned {
			continue // held here (erasedHere), and a cluster has no forks
		}
		raw, err := h.cfg.Log.Meta(ctx, id)
		if err != nil {
			return fmt.Errorf("reading session %v: %v: %w", id, err, ErrSessionFailed)
		}
		if raw == nil {
			return fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
		}
		var fork []byte
		err = h.cfg.Log.IndexScan(ctx, forkPrefix(id), nil, func(k, _ []byte) error {
			if f, ok := indexedID(k[len(k)-16:]); ok && !slices.Contains(ids, f) {
				fork = f[:]
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if f, ok := indexedID(fork); ok {
			return fmt.Errorf("session %v is the source of fork %v, whose state is folded from its log: erase the fork with it: %w",
				id, f, session.ErrBadTransition)
		}
	}
	return nil
}

// tombstone is a session's tombstone, if it left the log.
func (h *Hub) tombstone(ctx context.Context, id session.ID) (Tombstone, bool) {
	p, ok := h.cfg.Log.(Purger)
	if !ok {
		return Tombstone{}, false
	}
	t, found, err := p.Gone(ctx, id)
	return t, err == nil && found
}

// erasures closes the live sessions of ids (as the operator by) and
// returns the deletions of those not erased yet, with the archive files
// that hold the purged ones.
func (h *Hub) erasures(ctx context.Context, ids []session.ID, by string, t Tombstone) ([]Deletion, map[string][]session.ID, error) {
	files := map[string][]session.ID{}
	var ds []Deletion
	for _, id := range ids {
		if old, ok := h.tombstone(ctx, id); ok {
			if old.Kind == GoneErased {
				continue
			}
			if old.Archive != "" {
				files[old.Archive] = append(files[old.Archive], id)
			}
			ds = append(ds, Deletion{Session: id, Tombstone: t})
			continue
		}
		if s, ok := h.live(id); ok && !s.State().Ended() {
			if _, err := h.CloseSession(ctx, by, true, id, "erased"); err != nil && !errors.Is(err, session.ErrClosed) {
				return nil, nil, fmt.Errorf("closing session %v before its erasure: %w", id, err)
			}
		}
		m, _, err := h.endedMeta(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		index, err := h.purgeIndex(ctx, id, m)
		if err != nil {
			return nil, nil, err
		}
		d := Deletion{Session: id, Tombstone: t, Index: index}
		for _, k := range index {
			if k[0] != ixOpenKey && k[0] != ixThread { // open and thread keys have the caller's length
				d.Exact = append(d.Exact, k)
			}
		}
		ds = append(ds, d)
	}
	return ds, files, nil
}

// eraseArchived rewrites each archive file without the sessions erased.
func (h *Hub) eraseArchived(ctx context.Context, files map[string][]session.ID) error {
	if len(files) == 0 {
		return nil
	}
	ae, ok := h.cfg.Archive.(ArchiveEraser)
	if !ok {
		return fmt.Errorf("purged sessions to erase are in archive files, and this hub writes no archive to rewrite: %w", ErrSessionFailed)
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if err := ae.Remove(ctx, f, files[f]); err != nil {
			return fmt.Errorf("erasing %d sessions from archive %s: %v: %w", len(files[f]), f, err, ErrSessionFailed)
		}
	}
	return nil
}

// eraseAll erases ds from the log, the hub's caches dropping them.
func (h *Hub) eraseAll(ctx context.Context, e Eraser, ds []Deletion) error {
	if len(ds) == 0 {
		return nil
	}
	if err := h.leaving(ds, func() error { return e.EraseSessions(ctx, ds) }); err != nil {
		if errors.Is(err, ErrNotOwner) || errors.Is(err, session.ErrBadTransition) {
			return err // a cluster's partition moved, or its stream keeps its sessions
		}
		return fmt.Errorf("erasing %d sessions: %v: %w", len(ds), err, ErrSessionFailed)
	}
	return nil
}

// residentThread is threadIDs on a partitioned hub: a thread's sessions
// are all in its key's partition, held by one node.
func (h *Hub) residentThread(creator, key string) ([]session.ID, error) {
	h.reg.mu.RLock()
	var out []session.ID
	for id, s := range h.reg.sessions { //hubd:orderless sorted below
		if s.meta.GetCreator() == creator && s.meta.GetThreadKey() == key {
			out = append(out, id)
		}
	}
	h.reg.mu.RUnlock()
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no thread %q here: %w", creator, key, ErrUnknownSession)
	}
	slices.SortFunc(out, compareIDs)
	return out, nil
}

// erasedHere checks, on a partitioned hub, that the sessions of ids are
// all served here, the live and ended ones held, the erased or purged
// ones in a partition served here: one erasure is one node's. Named by
// id, none served here answers the first one's refusal (NOT_OWNER with
// its node, where the call is routed; UNKNOWN_SESSION); some here and
// some elsewhere is refused. Named by thread or participant (part, the
// cluster asking every node), those served elsewhere are left to their
// node. It returns the ids to erase here.
func (h *Hub) erasedHere(ctx context.Context, ids []session.ID, part bool) ([]session.ID, error) {
	if !h.cfg.Partitioned {
		return ids, nil
	}
	var here, there []session.ID
	var first error
	for _, id := range ids {
		var err error
		if _, ok := h.live(id); ok {
			here = append(here, id)
			continue
		}
		if _, gone := h.tombstone(ctx, id); gone {
			err = h.route(id) // nil: its partition is served here
		} else if _, err = h.lookup(ctx, id); err == nil {
			err = fmt.Errorf("no session %v: %w", id, ErrUnknownSession)
		}
		if err == nil {
			here = append(here, id)
			continue
		}
		there = append(there, id)
		if first == nil {
			first = err
		}
	}
	switch {
	case part || len(there) == 0:
		return here, nil
	case len(here) == 0 || errors.Is(first, ErrUnknownSession) || errors.Is(first, ErrQuarantined):
		return nil, first
	}
	return nil, fmt.Errorf("sessions %v and %v are served by different nodes: erase them in one call each: %w",
		here[0], there[0], session.ErrBadTransition)
}
