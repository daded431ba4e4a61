package wal

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// EraseSessions erases sessions for good: as DeleteSessions, in steps a
// crash cannot leave half done, and with every byte of their metadata,
// records, heads, damage marks and exact index keys gone from the data
// directory's files before their tombstones are done (see Scrub): a
// synced mark first (kind GoneErased, who and why, the keys to delete),
// then the keys deleted, then the scrub, which also drops every earlier
// version of the session's mark (it named the index keys) and writes the
// done tombstone afresh. Open finishes an erasure a crash interrupted,
// scrub included; a crash inside badger's drop of the mark, before the
// tombstone is written again, leaves the session without a tombstone
// (and its content gone). A session already erased keeps its first
// tombstone; one purged before is erased anew.
func (l *Log) EraseSessions(ctx context.Context, ds []Deletion) error {
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
		t := d.Tombstone
		if len(t.Archive) > maxGoneText || len(t.By) > maxGoneText || len(t.Reason) > maxGoneText {
			return fmt.Errorf("%w: a tombstone's archive, by and reason hold at most %d bytes each", ErrInvalid, maxGoneText)
		}
		for _, k := range append(d.Index, d.Exact...) {
			if len(k) == 0 || len(k) > maxIndexKey {
				return fmt.Errorf("%w: an index key of %d bytes (1 to %d)", ErrInvalid, len(k), maxIndexKey)
			}
		}
		old, ok, err := l.gone(d.Session)
		if err != nil {
			return err
		}
		if ok && old.Done && old.Kind == GoneErased {
			continue
		}
		d.Tombstone.Kind, d.Tombstone.Done = GoneErased, false
		todo = append(todo, d)
	}
	if len(todo) == 0 {
		return nil
	}
	if err := l.putGone(todo, true); err != nil {
		return fmt.Errorf("wal: writing erasure marks: %w", err)
	}
	if h := l.hooks.afterGoneMark; h != nil {
		h()
	}
	if err := l.deleteKeys(ctx, todo); err != nil {
		return err
	}
	return l.scrub(ctx, todo, true)
}

// Scrub removes from the data directory's files every byte of the given
// sessions' metadata, records, heads and damage marks (and of the exact
// index keys of ds), for erasure: keys deleted in a transaction leave
// their old values in badger's memtable log and tables until compactions
// happen to drop them, and the journal keeps commits until its segments
// are pruned. Scrub runs with no commit in flight (appends wait): it has
// badger drop the sessions' key ranges (DropPrefix: the memtables are
// flushed, then every table holding such a key is rewritten without it,
// and the memtable logs that held them are deleted), seals the journal's
// active segment and deletes every segment badger has flushed (all of
// them), and has the value log collect what it can (values of 1 MiB and
// more live there). The ranges go, live or deleted keys alike; the
// sessions' tombstones (kindGone) stay. A crash during Scrub may leave a
// range with an empty value: run it again (Open does, for an erasure).
//
// Appends wait while badger rewrites its tables: Scrub costs about a full
// compaction of the tables that hold the sessions.
func (l *Log) Scrub(ctx context.Context, sessions ...[16]byte) error {
	ds := make([]Deletion, len(sessions))
	for i, s := range sessions {
		ds[i].Session = s
	}
	return l.scrub(ctx, ds, false)
}

// scrub runs the committer's scrub of ds; with tombstones, the sessions'
// marks are dropped and their done tombstones written afresh.
func (l *Log) scrub(ctx context.Context, ds []Deletion, tombstones bool) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.storage.Err(); err != nil {
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{done: make(chan error, 1), op: func(c *committer) error { return c.scrub(ds, tombstones) }}
	r.state.Store(stateQueued)
	if !l.enqueue(r) {
		return ErrClosed
	}
	return <-r.done
}

// scrub is Scrub's work, on the committer's goroutine.
func (c *committer) scrub(ds []Deletion, tombstones bool) error {
	if err := c.l.storage.Err(); err != nil {
		return err // failed while the scrub waited in the queue: nothing is written
	}
	for _, d := range ds {
		delete(c.last, d.Session)
	}
	if err := c.l.dropSessions(ds, tombstones); err != nil {
		return err
	}
	if h := c.l.hooks.afterDropPrefix; h != nil {
		h()
	}
	if j := c.journal; j != nil {
		// Every commit is in a table now: a fresh segment, and the others go.
		if err := j.rotate(c.l.db.MaxVersion(), max(flushedVersion(c.l.db), c.l.db.MaxVersion()), 0); err != nil {
			return c.l.storage.fail(err)
		}
		if n := len(j.segs); n > 0 {
			return fmt.Errorf("wal: scrubbing: %d journal segments could not be deleted", n)
		}
	}
	if c.l.db.Opts().InMemory {
		return nil // no value log
	}
	for {
		err := c.l.db.RunValueLogGC(0.01)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wal: scrubbing the value log: %w", err)
		}
	}
}

// dropSessions has badger drop the key ranges of ds and their exact index
// keys from its memtables and tables. Badger drops a prefix only where a
// key of it is live, so each first gets a live key (an empty value);
// then the ranges go, with every version of every key in them. With
// tombstones, the sessions' gone keys go too (every mark naming index
// keys), and their done tombstones are written again and synced.
func (l *Log) dropSessions(ds []Deletion, tombstones bool) error {
	if len(ds) == 0 {
		return nil
	}
	var prefixes [][]byte
	err := l.db.Update(func(txn *badger.Txn) error {
		for _, d := range ds {
			for _, kind := range []byte{kindMeta, kindRecord, kindHead, kindMark} {
				k := appendSessionKey(nil, kind, d.Session)
				prefixes = append(prefixes, k)
				if kind == kindRecord {
					k = appendRecordKey(nil, d.Session, 0)
				}
				if err := txn.Set(k, appendValue(nil, k, nil)); err != nil {
					return err
				}
			}
			for _, x := range d.Exact {
				k := append([]byte{kindIndex}, x...)
				prefixes = append(prefixes, k)
				if err := txn.Set(k, appendValue(nil, k, nil)); err != nil {
					return err
				}
			}
			if tombstones {
				k := appendSessionKey(nil, kindGone, d.Session)
				prefixes = append(prefixes, k)
				if err := txn.Set(k, encodeGone(d.Session, d.Tombstone, nil, nil)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: scrubbing %d sessions: %w", len(ds), err)
	}
	if err := l.db.DropPrefix(prefixes...); err != nil {
		return fmt.Errorf("wal: scrubbing %d sessions: %w", len(ds), err)
	}
	if !tombstones {
		return nil
	}
	err = l.db.Update(func(txn *badger.Txn) error {
		for _, d := range ds {
			t := d.Tombstone
			t.Done = true
			if err := txn.Set(appendSessionKey(nil, kindGone, d.Session), encodeGone(d.Session, t, nil, nil)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = l.db.Sync()
	}
	if err != nil {
		return fmt.Errorf("wal: writing the tombstones of %d erased sessions: %w", len(ds), err)
	}
	return nil
}
