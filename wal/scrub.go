package wal

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Scrub removes from the data directory's files every byte of the given
// sessions' metadata, records, heads and damage marks, for erasure: keys
// deleted in a transaction leave their old values in badger's memtable
// log and tables until compactions happen to drop them, and the journal
// keeps commits until its segments are pruned. Scrub runs with no commit
// in flight (appends wait): it has badger drop the sessions' key ranges
// (DropPrefix: the memtables are flushed, then every table holding such a
// key is rewritten without it, and the memtable logs that held them are
// deleted), seals the journal's active segment and deletes every segment
// badger has flushed (all of them), and has the value log collect what
// it can (values of 1 MiB and more live there). The sessions' keys go,
// live or deleted; their tombstones (kindGone) and the caller's index
// keys are left alone. A crash during Scrub may leave a session's ranges
// with an empty value or none: run it again.
//
// Appends wait while badger rewrites its tables: Scrub costs about a full
// compaction of the tables that hold the sessions.
func (l *Log) Scrub(ctx context.Context, sessions ...[16]byte) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.storage.Err(); err != nil {
		return err
	}
	if len(sessions) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{done: make(chan error, 1), op: func(c *committer) error { return c.scrub(sessions) }}
	r.state.Store(stateQueued)
	if !l.enqueue(r) {
		return ErrClosed
	}
	return <-r.done
}

// scrub is Scrub's work, on the committer's goroutine. Badger drops a
// prefix only where a key of it is live, so each range first gets a live
// key (an empty value), then the ranges go, with every version of every
// key in them (the deleted ones too).
func (c *committer) scrub(sessions [][16]byte) error {
	var prefixes [][]byte
	err := c.l.db.Update(func(txn *badger.Txn) error {
		for _, s := range sessions {
			for _, kind := range []byte{kindMeta, kindRecord, kindHead, kindMark} {
				k := appendSessionKey(nil, kind, s)
				prefixes = append(prefixes, k)
				if kind == kindRecord {
					k = appendRecordKey(nil, s, 0)
				}
				if err := txn.Set(k, appendValue(nil, k, nil)); err != nil {
					return err
				}
			}
			delete(c.last, s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: scrubbing %d sessions: %w", len(sessions), err)
	}
	if err := c.l.db.DropPrefix(prefixes...); err != nil {
		return fmt.Errorf("wal: scrubbing %d sessions: %w", len(sessions), err)
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
