package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A session leaves the log in steps that a crash cannot leave half done
// (DeleteSession):
//
//  1. a gone mark (kindGone|session, not done) is written and synced: it
//     names the kind of removal, when, the archive file and the caller's
//     index keys to delete;
//  2. the session's keys are deleted in transactions of deleteBatch keys:
//     every record (seq 1 to its head), then the index keys, its
//     metadata, head and damage mark;
//  3. the mark becomes the session's tombstone (done, the index keys
//     dropped), synced.
//
// Open resumes every mark not done (steps 2 and 3) before the first
// append. The tombstone stays for good: it is how the caller answers
// that a session was removed rather than never there (Gone), and it keeps
// Open from writing the session's records again from journal segments
// that still hold them (replayJournal) or reporting them as lost
// (checkJournal).
const (
	kindGone   byte = 0x06 // kindGone|session -> framed tombstone
	goneKeyLen      = metaKeyLen
	// deleteBatch is how many keys one deletion transaction removes.
	deleteBatch = 128
)

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
	Archive string    // the archive file that holds it; "" for none
	// By and Reason are who erased it and why (GoneErased).
	By, Reason string
	// Done is false while the deletion is in progress (a mark): Open
	// finishes it.
	Done bool
}

// goneDataMin is the fixed part of a tombstone's data.
const goneDataMin = 1 + 1 + 8 + 2 + 2 + 2 + 4

// maxGoneText bounds a tombstone's archive, by and reason.
const maxGoneText = 4096

// encodeGone returns the framed value of a tombstone or mark: kind (1) |
// done (1) | at, Unix ns (8 BE) | archive, by, reason, each a length
// (2 BE) and its bytes | index key count (4 BE) | per key: length (2 BE)
// | key; then, in an erasure's mark, the exact index keys likewise.
func encodeGone(session [16]byte, t Tombstone, index, exact [][]byte) []byte {
	data := []byte{byte(t.Kind), 0}
	if t.Done {
		data[1] = 1
	}
	data = binary.BigEndian.AppendUint64(data, uint64(t.At.UnixNano()))
	for _, s := range []string{t.Archive, t.By, t.Reason} {
		data = binary.BigEndian.AppendUint16(data, uint16(len(s)))
		data = append(data, s...)
	}
	data = appendKeys(data, index)
	if len(exact) > 0 {
		data = appendKeys(data, exact)
	}
	return appendValue(nil, appendSessionKey(nil, kindGone, session), data)
}

func appendKeys(data []byte, keys [][]byte) []byte {
	data = binary.BigEndian.AppendUint32(data, uint32(len(keys)))
	for _, k := range keys {
		data = binary.BigEndian.AppendUint16(data, uint16(len(k)))
		data = append(data, k...)
	}
	return data
}

// readKeys reads a key list of appendKeys.
func readKeys(rest []byte) ([][]byte, []byte, bool) {
	if len(rest) < 4 {
		return nil, nil, false
	}
	count := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	var keys [][]byte
	for range count {
		if len(rest) < 2 || len(rest) < 2+int(binary.BigEndian.Uint16(rest)) {
			return nil, nil, false
		}
		n := int(binary.BigEndian.Uint16(rest))
		keys = append(keys, bytes.Clone(rest[2:2+n]))
		rest = rest[2+n:]
	}
	return keys, rest, true
}

// decodeGone checks a tombstone stored under k and returns it with its
// index keys (and an erasure mark's exact keys).
func decodeGone(k, v []byte) (Tombstone, [][]byte, [][]byte, error) {
	data, err := decodeValue(k, v)
	if err != nil {
		return Tombstone{}, nil, nil, err
	}
	bad := fmt.Errorf("%w: tombstone of %d bytes does not decode", ErrCorrupt, len(data))
	if len(data) < goneDataMin {
		return Tombstone{}, nil, nil, bad
	}
	t := Tombstone{Kind: GoneKind(data[0]), Done: data[1] == 1,
		At: time.Unix(0, int64(binary.BigEndian.Uint64(data[2:10]))).UTC()}
	rest := data[10:]
	var texts [3]string
	for i := range texts {
		if len(rest) < 2 || len(rest) < 2+int(binary.BigEndian.Uint16(rest)) {
			return Tombstone{}, nil, nil, bad
		}
		n := int(binary.BigEndian.Uint16(rest))
		texts[i], rest = string(rest[2:2+n]), rest[2+n:]
	}
	t.Archive, t.By, t.Reason = texts[0], texts[1], texts[2]
	index, rest, ok := readKeys(rest)
	if !ok {
		return Tombstone{}, nil, nil, bad
	}
	var exact [][]byte
	if len(rest) > 0 {
		if exact, _, ok = readKeys(rest); !ok {
			return Tombstone{}, nil, nil, bad
		}
	}
	return t, index, exact, nil
}

// Deletion is one session for DeleteSessions: its tombstone and the
// caller's index keys to delete with it.
type Deletion struct {
	Session   [16]byte
	Tombstone Tombstone
	Index     [][]byte
	// Exact are index keys of Index that no other key extends (a fixed
	// length: a session's live mark, memberships, children): an erasure
	// drops them from badger's files at once (EraseSessions), the others
	// leave at a compaction.
	Exact [][]byte
	// Lazy lets DeleteSessions return without syncing badger's files:
	// a crash of the process loses nothing (the writes are in the
	// operating system's cache), but a crash of the machine before the
	// next sync (SyncDeletions, or badger's own) may undo the deletion,
	// whole (the session is there again, as it was). A retention sweep's
	// deletions are lazy: a sync moves the send path's latency
	// (docs/PERFORMANCE.md, "Retention and purge").
	Lazy bool
}

// DeleteSession removes every key of session from the log (its metadata,
// head, damage mark, records, and the caller's index keys given), leaving
// its tombstone t (Done is set by the log), in the steps described above:
// a mark synced first, deletions in batches, the tombstone synced last,
// so that a crash at any point leaves a deletion that the next Open
// finishes. The caller must not append to the session again (nothing
// stops it). A session already gone keeps its first tombstone.
//
// The deleted keys leave badger's tables at its compactions (see
// [Log.Reclaim]); journal segments holding the session's commits are
// deleted as usual, once badger has flushed them (see journal.go).
func (l *Log) DeleteSession(ctx context.Context, session [16]byte, t Tombstone, index [][]byte) error {
	return l.DeleteSessions(ctx, []Deletion{{Session: session, Tombstone: t, Index: index}})
}

// DeleteSessions is DeleteSession of several sessions at once: their
// marks in one transaction and one sync, their tombstones likewise.
func (l *Log) DeleteSessions(ctx context.Context, ds []Deletion) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.storage.Err(); err != nil {
		return err
	}
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	var todo []Deletion
	for _, d := range ds {
		for _, k := range d.Index {
			if len(k) == 0 || len(k) > maxIndexKey {
				return fmt.Errorf("%w: an index key of %d bytes (1 to %d)", ErrInvalid, len(k), maxIndexKey)
			}
		}
		old, ok, err := l.gone(d.Session)
		if err != nil {
			return err
		}
		if !ok || !old.Done {
			d.Tombstone.Done = false
			todo = append(todo, d)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := l.putGone(todo, true); err != nil {
		return fmt.Errorf("wal: writing gone marks: %w", err)
	}
	if h := l.hooks.afterGoneMark; h != nil {
		h()
	}
	return l.finishGone(ctx, todo)
}

// putGone writes the marks (index keys kept) or the tombstones of ds in
// one transaction, and syncs it unless every deletion of ds is lazy.
func (l *Log) putGone(ds []Deletion, marks bool) error {
	err := l.db.Update(func(txn *badger.Txn) error {
		for _, d := range ds {
			t, index, exact := d.Tombstone, d.Index, d.Exact
			t.Done = !marks
			if !marks {
				index, exact = nil, nil
			}
			if err := txn.Set(appendSessionKey(nil, kindGone, d.Session), encodeGone(d.Session, t, index, exact)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range ds {
		if !d.Lazy {
			return l.syncGone()
		}
	}
	return nil
}

// syncGone syncs badger's files for a deletion.
func (l *Log) syncGone() error {
	if h := l.hooks.goneSynced; h != nil {
		h()
	}
	return l.db.Sync()
}

// SyncDeletions syncs badger's files: the lazy deletions written before
// it are durable once it returns.
func (l *Log) SyncDeletions(ctx context.Context) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.storage.Err(); err != nil {
		return err // a failed storage syncs nothing more
	}
	return l.syncGone()
}

// finishGone deletes the sessions' keys and turns their marks into
// tombstones.
func (l *Log) finishGone(ctx context.Context, ds []Deletion) error {
	if err := l.deleteKeys(ctx, ds); err != nil {
		return err
	}
	if err := l.putGone(ds, false); err != nil {
		return fmt.Errorf("wal: writing tombstones: %w", err)
	}
	return nil
}

// deleteKeys deletes the sessions' keys, deleteBatch per transaction,
// the sessions of ds together: each one's records first, seq 1 to its
// head (read once, so no iterator walks them), then its index keys,
// metadata, head and damage mark. A session whose head is gone already
// (a deletion resumed after those went) has its remaining records found
// by a scan.
func (l *Log) deleteKeys(ctx context.Context, ds []Deletion) error {
	var keys [][]byte
	flush := func(force bool) error {
		if len(keys) == 0 || (!force && len(keys) < deleteBatch) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := l.deleteBatch(keys)
		keys = keys[:0]
		return err
	}
	for _, d := range ds {
		recs, err := l.sessionRecordKeys(d.Session)
		if err != nil {
			return fmt.Errorf("wal: session %x: listing its records: %w", d.Session, err)
		}
		for _, k := range recs {
			keys = append(keys, k)
			if err := flush(false); err != nil {
				return fmt.Errorf("wal: session %x: deleting its records: %w", d.Session, err)
			}
		}
		for _, k := range d.Index {
			keys = append(keys, append([]byte{kindIndex}, k...))
		}
		for _, kind := range []byte{kindMeta, kindHead, kindMark} {
			keys = append(keys, appendSessionKey(nil, kind, d.Session))
		}
		if err := flush(false); err != nil {
			return fmt.Errorf("wal: session %x: deleting its keys: %w", d.Session, err)
		}
	}
	if err := flush(true); err != nil {
		return fmt.Errorf("wal: deleting the keys of %d sessions: %w", len(ds), err)
	}
	return nil
}

// sessionRecordKeys returns the keys of the session's records: seq 1 to
// its head, or when it has no head, those a scan finds.
func (l *Log) sessionRecordKeys(session [16]byte) ([][]byte, error) {
	var head uint64
	var ok bool
	err := l.db.View(func(txn *badger.Txn) error {
		var err error
		head, ok, err = headIn(txn, session)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return l.recordKeys(session)
	}
	out := make([][]byte, 0, head)
	for seq := uint64(1); seq <= head; seq++ {
		out = append(out, appendRecordKey(nil, session, seq))
	}
	return out, nil
}

// recordKeys returns every record key of the session the log holds.
func (l *Log) recordKeys(session [16]byte) ([][]byte, error) {
	var out [][]byte
	err := l.db.View(func(txn *badger.Txn) error {
		prefix := appendSessionKey(nil, kindRecord, session)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out = append(out, it.Item().KeyCopy(nil))
		}
		return nil
	})
	return out, err
}

// deleteBatch deletes keys in one transaction.
func (l *Log) deleteBatch(keys [][]byte) error {
	err := l.db.Update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		if h := l.hooks.afterDeleteBatch; h != nil {
			h()
		}
	}
	return err
}

// Gone returns the session's tombstone, and whether it has one (a
// tombstone not Done is a deletion still in progress).
func (l *Log) Gone(ctx context.Context, session [16]byte) (Tombstone, bool, error) {
	if err := ctx.Err(); err != nil {
		return Tombstone{}, false, err
	}
	if err := l.enterRead(); err != nil {
		return Tombstone{}, false, err
	}
	defer l.exitRead()
	return l.gone(session)
}

// gone reads the session's tombstone.
func (l *Log) gone(session [16]byte) (Tombstone, bool, error) {
	var t Tombstone
	var found bool
	err := l.db.View(func(txn *badger.Txn) error {
		k := appendSessionKey(nil, kindGone, session)
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return item.Value(func(v []byte) error {
			t, _, _, err = decodeGone(k, v)
			return err
		})
	})
	if err != nil {
		return Tombstone{}, false, fmt.Errorf("wal: session %x tombstone: %w", session, err)
	}
	return t, found, nil
}

// goneMark is a session's gone mark or tombstone, as Open reads them.
type goneMark struct {
	t            Tombstone
	index, exact [][]byte
}

// loadPendingGone reads the marks of db whose deletion is not done
// (tombstones are read, not kept: there may be many).
func loadPendingGone(db *badger.DB) (map[[16]byte]goneMark, error) {
	out := map[[16]byte]goneMark{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindGone}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			if len(k) != goneKeyLen {
				return fmt.Errorf("%w: tombstone key of length %d", ErrCorrupt, len(k))
			}
			err := item.Value(func(v []byte) error {
				t, index, exact, err := decodeGone(k, v)
				if err == nil && !t.Done {
					out[[16]byte(k[1:])] = goneMark{t, index, exact}
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("wal: session %x tombstone: %w", k[1:], err)
			}
		}
		return nil
	})
	return out, err
}

// resumeGone finishes every deletion a crash interrupted; Open calls it
// before the committer starts.
func (l *Log) resumeGone(gone map[[16]byte]goneMark) (int, error) {
	var ds, erased []Deletion
	for s, g := range gone { //hubd:orderless each deletion is finished on its own
		if g.t.Done {
			continue
		}
		d := Deletion{Session: s, Tombstone: g.t, Index: g.index, Exact: g.exact}
		if g.t.Kind == GoneErased {
			erased = append(erased, d)
		} else {
			ds = append(ds, d)
		}
	}
	n := len(ds) + len(erased)
	if n == 0 {
		return 0, nil
	}
	if err := l.finishGone(context.Background(), ds); err != nil {
		return 0, err
	}
	// An erasure's bytes leave the files before its tombstone is done;
	// the journal's segments go once the committer runs (Open).
	if err := l.deleteKeys(context.Background(), erased); err != nil {
		return 0, err
	}
	if err := l.dropSessions(erased, true); err != nil {
		return 0, err
	}
	l.resumedErased = erased
	if n > 0 {
		l.logger.Info().Int("sessions", n).Msg("wal: finished deleting sessions a crash interrupted")
	}
	return n, nil
}

// reclaimKey is a key Reclaim writes and drops at once, to have badger
// flush its memtables: kindGone and a session id no session has. Left
// behind by a crash, it is a tombstone of nothing.
var reclaimKey = append([]byte{kindGone}, bytes.Repeat([]byte{0xff}, sessionLen)...)

// Reclaim gives the disk space of deleted sessions back: it has badger
// flush its memtables into tables (appends wait meanwhile: badger refuses
// writes while it flushes them for a drop), then flattens its LSM tree
// into one level (a compaction that drops deleted keys and the versions
// they hid, appends going on) and runs the value log's garbage collection
// until it has nothing to rewrite. It may take long on a large store.
func (l *Log) Reclaim(ctx context.Context) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	if err := l.flushMemtables(); err != nil {
		return fmt.Errorf("wal: reclaim: flushing the memtables: %w", err)
	}
	if err := l.db.Flatten(2); err != nil {
		return fmt.Errorf("wal: reclaim: flatten: %w", err)
	}
	for ctx.Err() == nil {
		if err := l.db.RunValueLogGC(0.5); err != nil {
			if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
				return nil
			}
			return fmt.Errorf("wal: reclaim: value log gc: %w", err)
		}
	}
	return ctx.Err()
}

// flushMemtables has badger flush every memtable into a table: the
// deletions they hold must be in tables for a compaction to drop what
// they delete. Badger flushes on demand only for a drop, which refuses
// writes, so the committer is held meanwhile.
func (l *Log) flushMemtables() error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	tomb := Tombstone{Kind: GonePurged, Done: true}
	if err := l.db.Update(func(txn *badger.Txn) error {
		return txn.Set(reclaimKey, encodeGone([16]byte(reclaimKey[1:]), tomb, nil, nil))
	}); err != nil {
		return err
	}
	return l.db.DropPrefix(reclaimKey)
}

// goneOf returns which sessions of the journal's commits have a
// tombstone or a mark in db.
func (r *journalReport) goneOf(db *badger.DB) (map[[16]byte]bool, error) {
	gone := map[[16]byte]bool{}
	seen := map[[16]byte]bool{}
	err := db.View(func(txn *badger.Txn) error {
		for _, e := range r.entries {
			for _, s := range e.spans {
				if seen[s.session] {
					continue
				}
				seen[s.session] = true
				_, err := txn.Get(appendSessionKey(nil, kindGone, s.session))
				switch {
				case err == nil:
					gone[s.session] = true
				case !errors.Is(err, badger.ErrKeyNotFound):
					return err
				}
			}
		}
		return nil
	})
	return gone, err
}

// dropGone removes from the journal's commits what belongs to deleted
// sessions (their spans, their entries, index entries naming them), so
// that Open neither writes them again nor reports them lost. An index
// entry names a session of its commit (the hub writes a session's index
// with its records), so gone, the deleted sessions among the journal's,
// is all it needs.
func (r *journalReport) dropGone(gone map[[16]byte]bool) {
	if len(gone) == 0 {
		return
	}
	for i := range r.entries {
		e := &r.entries[i]
		if e.typ != entryCommit {
			continue
		}
		spans := e.spans[:0]
		for _, s := range e.spans {
			if _, ok := gone[s.session]; !ok {
				spans = append(spans, s)
			}
		}
		e.spans = spans
		if e.kvs == nil {
			continue
		}
		kvs := e.kvs[:0]
		for _, x := range e.kvs {
			if !namesGone(x, gone) {
				kvs = append(kvs, x)
			}
		}
		e.kvs = kvs
	}
}

// namesGone reports whether a journalled entry is a key of a deleted
// session, or an index entry whose key or value holds its id.
func namesGone(x kv, gone map[[16]byte]bool) bool {
	if len(x.key) == metaKeyLen || len(x.key) == recordKeyLen {
		switch x.key[0] {
		case kindMeta, kindRecord, kindHead, kindMark:
			_, ok := gone[[16]byte(x.key[1:metaKeyLen])]
			return ok
		}
	}
	if len(x.key) == 0 || x.key[0] != kindIndex {
		return false
	}
	for _, b := range [][]byte{x.key[1:], x.val} {
		for i := 0; i+sessionLen <= len(b); i++ {
			if _, ok := gone[[16]byte(b[i:i+sessionLen])]; ok {
				return true
			}
		}
	}
	return false
}
