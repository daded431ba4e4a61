package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Restorer is a Purger that writes a purged session back (the badger log
// does; a cluster node's JetStream log does not).
type Restorer interface {
	// RestoreSession writes back session, deleted before (its tombstone
	// is removed): its stored metadata, its records from seq 1 and the
	// hub's index entries, in steps that leave it gone until the last
	// one, synced, commits. A session the log holds is refused.
	RestoreSession(ctx context.Context, session [16]byte, meta []byte, records []LogRecord, index []IndexEntry) error
}

// ArchiveReader reads the sessions of an archive file of the Archiver's
// directory, by the file's name; an error wrapping fs.ErrNotExist for a
// name the directory does not hold.
type ArchiveReader interface {
	Sessions(ctx context.Context, file string) ([]ArchivedSession, error)
}

// Imported is a session Import wrote back.
type Imported struct {
	ID        session.ID
	Envelopes int
	Archive   string
}

// Import writes the purged sessions ids (none: every session) of the
// archive file (a name in the hub's archive directory) back into the log,
// each labelled LabelImportedFrom=file: ended, answered again by every
// read at once, left alone by the retention sweep. Each must be gone as
// purged; the checks of all come first, and a refusal imports nothing:
// MALFORMED for a name that is not a file of the directory, a file that
// does not read whole, or an id the file does not hold;
// BAD_LIFECYCLE_TRANSITION for a session the log holds (imported before,
// or never purged) or one the log never deleted, and on a hub that keeps
// no archive directory or whose log does not restore (a cluster node's);
// ERASED for an erased session.
func (h *Hub) Import(ctx context.Context, file string, ids []session.ID) ([]Imported, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	r, ok := h.cfg.Log.(Restorer)
	if !ok || h.cfg.Partitioned {
		return nil, fmt.Errorf("this hub's log does not import sessions (a cluster node brings none back into its streams: "+
			"import into a single hub's data directory): %w", session.ErrBadTransition)
	}
	ss, err := h.readArchive(ctx, file)
	if err != nil {
		return nil, err
	}
	todo, err := pickArchived(file, ss, ids)
	if err != nil {
		return nil, err
	}
	h.retain.mu.Lock()
	defer h.retain.mu.Unlock()
	for _, a := range todo {
		if err := h.importable(ctx, a.id); err != nil {
			return nil, err
		}
	}
	out := make([]Imported, 0, len(todo))
	for _, a := range todo {
		if err := h.restore(ctx, r, file, a); err != nil {
			return out, err
		}
		out = append(out, Imported{ID: a.id, Envelopes: len(a.Records), Archive: file})
	}
	return out, nil
}

// readArchive reads the sessions of the archive file named file.
func (h *Hub) readArchive(ctx context.Context, file string) ([]ArchivedSession, error) {
	if file == "" || file == "." || file == ".." || filepath.Base(file) != file || strings.ContainsAny(file, `/\`) {
		return nil, fmt.Errorf("archive %q: want the name of a file of the hub's archive directory (hubd-archive-YYYY-MM-DD.hubarc), not a path: %w",
			file, session.ErrMalformed)
	}
	ar, ok := h.cfg.Archive.(ArchiveReader)
	if !ok {
		return nil, fmt.Errorf("this hub keeps no archive directory to import from (it runs without an archive): %w", session.ErrBadTransition)
	}
	ss, err := ar.Sessions(ctx, file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("archive %q: the hub's archive directory holds no such file: %w", file, session.ErrMalformed)
	case err != nil:
		return nil, fmt.Errorf("archive %q does not read whole: %v: %w", file, err, session.ErrMalformed)
	}
	return ss, nil
}

// archivedOne is one session of an archive file to import.
type archivedOne struct {
	id   session.ID
	meta *hubpb.SessionMeta
	ArchivedSession
}

// pickArchived returns the sessions ids (none: all) of ss, each once, as
// the file last holds it (a session purged, imported and purged again on
// the same day is in its file twice).
func pickArchived(file string, ss []ArchivedSession, ids []session.ID) ([]archivedOne, error) {
	var all []archivedOne
	at := map[session.ID]int{}
	for _, a := range ss {
		m, err := session.UnmarshalMeta(a.Meta)
		if err != nil {
			return nil, fmt.Errorf("archive %q: a session's metadata does not decode: %v: %w", file, err, session.ErrMalformed)
		}
		id, err := session.ParseID(m.GetSessionId())
		if err != nil {
			return nil, fmt.Errorf("archive %q: session id %q: %v: %w", file, m.GetSessionId(), err, session.ErrMalformed)
		}
		if i, ok := at[id]; ok {
			all[i] = archivedOne{id, m, a}
			continue
		}
		at[id] = len(all)
		all = append(all, archivedOne{id, m, a})
	}
	if len(ids) == 0 {
		return all, nil
	}
	out := make([]archivedOne, 0, len(ids))
	for _, id := range ids {
		i, ok := at[id]
		if !ok {
			return nil, fmt.Errorf("archive %q holds no session %v: %w", file, id, session.ErrMalformed)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// importable refuses a session that is not gone as purged.
func (h *Hub) importable(ctx context.Context, id session.ID) error {
	raw, err := h.cfg.Log.Meta(ctx, id)
	if err != nil {
		return fmt.Errorf("reading session %v: %v: %w", id, err, ErrSessionFailed)
	}
	if _, live := h.live(id); live || raw != nil {
		why := "it was never purged"
		if m, err := session.UnmarshalMeta(raw); err == nil && m.GetLabels()[LabelImportedFrom] != "" {
			why = "it was imported from " + m.GetLabels()[LabelImportedFrom]
		}
		return fmt.Errorf("session %v is in the log (%s): only a purged session is imported: %w", id, why, session.ErrBadTransition)
	}
	t, gone := h.tombstone(ctx, id)
	switch {
	case !gone:
		return fmt.Errorf("session %v was never purged from this hub's log: only a purged session is imported: %w", id, session.ErrBadTransition)
	case t.Kind == GoneErased:
		return &PurgedError{ID: id, Tombstone: t}
	}
	return nil
}

// restore writes a back, labelled as imported from file, and drops what
// the hub's caches keep of it.
func (h *Hub) restore(ctx context.Context, r Restorer, file string, a archivedOne) error {
	if a.meta.Labels == nil {
		a.meta.Labels = map[string]string{}
	}
	a.meta.Labels[LabelImportedFrom] = file
	meta, err := session.MarshalMeta(a.meta)
	if err != nil {
		return fmt.Errorf("session %v: %v: %w", a.id, err, session.ErrMalformed)
	}
	recs := make([]LogRecord, len(a.Records))
	for i, b := range a.Records {
		recs[i] = LogRecord{Seq: uint64(i + 1), Data: b}
	}
	ds := []Deletion{{Session: a.id}}
	err = h.leaving(ds, func() error { return r.RestoreSession(ctx, a.id, meta, recs, ImportIndex(a.meta)) })
	if err != nil {
		return fmt.Errorf("importing session %v: %v: %w", a.id, err, ErrSessionFailed)
	}
	return nil
}
