package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
)

// MigrateKind says what a value handed to a [Convert] function is.
type MigrateKind uint8

// The kinds of value a migration converts.
const (
	// MigrateMeta is a session's metadata; its seq is 0.
	MigrateMeta MigrateKind = 1
	// MigrateRecord is the record of a session at a seq.
	MigrateRecord MigrateKind = 2
)

// String returns "metadata" or "record".
func (k MigrateKind) String() string {
	switch k {
	case MigrateMeta:
		return "metadata"
	case MigrateRecord:
		return "record"
	}
	return fmt.Sprintf("MigrateKind(%d)", uint8(k))
}

// Convert turns one stored value (the data inside its frame) into its
// form in the current format version. data is valid only during the call.
//
// A migration may be interrupted and run again, so Convert sees values it
// has already converted, and must return those unchanged (data itself, or
// equal bytes): it must tell the two forms apart by their content. A value
// returned unchanged is not written. An error stops the migration and is
// returned, wrapped with the value's session and seq; what was committed
// before it stays, and a later run goes on from there. Metadata must not
// convert to nothing.
type Convert func(kind MigrateKind, session [16]byte, seq uint64, data []byte) ([]byte, error)

// MigrateStats says what a migration did.
type MigrateStats struct {
	From, To  uint32 // the store's format version before and after
	Sessions  int    // metadata values read
	Records   int    // record values read
	Rewritten int    // values convert changed, written back
	Commits   int    // transactions committed
}

// Migrate converts the store in opts.Dir from format version from to the
// version Open reads: it passes every metadata and record value through
// convert, in key order (all metadata, then records by session and seq),
// writes back each value that changed with its frame's checksum
// recomputed, in transactions of at most opts.MaxBatchBytes, and once all
// of them are committed and synced it writes each session's head and then
// the new format version. A store of version 2 only needs the heads
// (convert is not called; the stats say From 2). The
// hub must be stopped: badger's directory lock makes Migrate fail while a
// Log is open on the directory.
//
// Migrate is crash safe and idempotent. Until its last step the store's
// format record still names version from, so Open keeps refusing the store
// (with a *FormatError) and a rerun converts the rest; convert must
// therefore accept values it has already converted (see [Convert]). A store
// already at the current version is left alone: the stats then have From
// == To and count nothing. A store of any other version, or one without a
// format record, is ErrFormat; a directory without a store is an error
// wrapping fs.ErrNotExist. ctx is checked between values. opts.InMemory
// is ErrInvalid and opts.NoSync is ignored: a migration always syncs. Once
// a migration has begun, the release that wrote version from can no longer
// read the store.
func Migrate(ctx context.Context, opts Options, from uint32, convert Convert) (MigrateStats, error) {
	st := MigrateStats{From: from, To: formatVersion}
	if err := checkMigrate(opts, from, convert); err != nil {
		return st, err
	}
	db, err := badger.Open(opts.badgerOptions().WithSyncWrites(true))
	if err != nil {
		return st, fmt.Errorf("wal: open badger in %q: %w", opts.Dir, err)
	}
	err = migrate(ctx, db, opts, convert, &st)
	if cerr := db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("wal: close badger: %w", cerr)
	}
	return st, err
}

// checkMigrate checks Migrate's arguments and that opts.Dir holds a store.
func checkMigrate(opts Options, from uint32, convert Convert) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	switch {
	case opts.InMemory:
		return fmt.Errorf("%w: an in-memory store has nothing to migrate", ErrInvalid)
	case from == 0 || from >= formatVersion:
		return fmt.Errorf("%w: cannot migrate from format version %d to %d", ErrInvalid, from, formatVersion)
	case convert == nil:
		return fmt.Errorf("%w: no convert function", ErrInvalid)
	}
	// Badger would create a store in an empty or missing directory.
	_, err := os.Stat(filepath.Join(opts.Dir, badger.ManifestFilename))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("wal: no store to migrate in %q: %w", opts.Dir, fs.ErrNotExist)
	case err != nil:
		return fmt.Errorf("wal: migrate: %w", err)
	}
	return nil
}

// migrate checks the store's version, converts every value, syncs and
// then writes the current format version.
func migrate(ctx context.Context, db *badger.DB, opts Options, convert Convert, st *MigrateStats) error {
	var ver uint32
	err := db.View(func(txn *badger.Txn) error {
		v, found, err := readFormat(txn)
		if err == nil && !found {
			err = fmt.Errorf("%w: the store in %q has no format record", ErrFormat, opts.Dir)
		}
		ver = v
		return err
	})
	switch {
	case err != nil:
		return err
	case ver == formatVersion:
		st.From = ver
		return nil
	case ver == 2:
		// Version 2 differs from 3 only by the heads, which need no
		// conversion of values (Open adds them too).
		st.From = ver
		return upgradeHeads(db, opts, st)
	case ver != st.From:
		return fmt.Errorf("%w: the store in %q has format version %d, the migration converts version %d",
			ErrFormat, opts.Dir, ver, st.From)
	}
	m := migration{db: db, convert: convert, budget: opts.maxBatchBytes(), st: st}
	if err := m.run(ctx); err != nil {
		return err
	}
	if err := db.Sync(); err != nil {
		return fmt.Errorf("wal: migrate: sync: %w", err)
	}
	return upgradeHeads(db, opts, st)
}

// upgradeHeads writes every session's head and then the current format
// version (see addHeads).
func upgradeHeads(db *badger.DB, opts Options, st *MigrateStats) error {
	if err := os.MkdirAll(filepath.Join(opts.Dir, journalDir), 0o755); err != nil {
		return fmt.Errorf("wal: migrate: %w", err)
	}
	if _, err := addHeads(db, opts.maxBatchBytes()); err != nil {
		return fmt.Errorf("wal: migrate: %w", err)
	}
	st.Commits++
	return nil
}

// migration converts the values of one store, reading one snapshot and
// writing what changed in bounded transactions.
type migration struct {
	db      *badger.DB
	convert Convert
	budget  int // MaxBatchBytes
	st      *MigrateStats

	txn  *badger.Txn // the write transaction being filled, or nil
	size int         // what it holds, counted as MaxBatchBytes counts
	raw  []byte      // the current value's key, as stored
	key  key         // and decoded
	out  []byte      // the current value's new data; nil if unchanged
}

// run converts every metadata and record value, then commits the last
// transaction.
func (m *migration) run(ctx context.Context) error {
	rtxn := m.db.NewTransaction(false)
	defer rtxn.Discard()
	it := rtxn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	defer m.discard()
	value := m.value // one closure for the whole walk
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		k, err := decodeKey(item.Key())
		if err != nil {
			return fmt.Errorf("wal: migrate: key %x: %w", item.Key(), err)
		}
		if k.kind != kindMeta && k.kind != kindRecord {
			continue
		}
		m.raw, m.key, m.out = item.Key(), k, nil
		if err := item.Value(value); err != nil {
			return err
		}
		if m.out != nil {
			if err := m.stage(item.KeyCopy(nil), m.out); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.commit()
}

// value checks the frame of the current value, passes its data through
// convert and keeps the result in m.out if it differs.
func (m *migration) value(v []byte) error {
	k := m.key
	kind, what := MigrateRecord, fmt.Sprintf("session %x seq %d", k.session, k.seq)
	if k.kind == kindMeta {
		kind, what = MigrateMeta, fmt.Sprintf("session %x metadata", k.session)
		m.st.Sessions++
	} else {
		m.st.Records++
	}
	data, err := decodeValue(m.raw, v)
	if err != nil {
		return fmt.Errorf("wal: migrate: %s: %w", what, err)
	}
	out, err := m.convert(kind, k.session, k.seq, data)
	switch {
	case err != nil:
		return fmt.Errorf("wal: migrate: %s: %w", what, err)
	case kind == MigrateMeta && len(out) == 0:
		return fmt.Errorf("%w: migrate: %s converts to nothing", ErrInvalid, what)
	case bytes.Equal(out, data):
		return nil
	}
	m.out = out
	m.st.Rewritten++
	return nil
}

// stage adds k's new framed value to the write transaction, committing the
// transaction first when the value would not fit.
func (m *migration) stage(k, data []byte) error {
	size := entrySize(len(k), len(data))
	if size > m.budget {
		return fmt.Errorf("%w: migrate: key %x: %d bytes converted exceed MaxBatchBytes %d", ErrTooLarge, k, size, m.budget)
	}
	if m.txn != nil && m.size+size > m.budget {
		if err := m.commit(); err != nil {
			return err
		}
	}
	if m.txn == nil {
		m.txn = m.db.NewTransaction(true)
	}
	err := m.txn.SetEntry(badger.NewEntry(k, appendValue(nil, k, data)))
	if errors.Is(err, badger.ErrTxnTooBig) && m.size > 0 {
		if err = m.commit(); err == nil {
			return m.stage(k, data)
		}
	}
	if err != nil {
		return fmt.Errorf("wal: migrate: stage key %x: %w", k, err)
	}
	m.size += size
	return nil
}

// commit commits the write transaction, if it holds anything. Badger
// syncs the commit (SyncWrites) before it returns.
func (m *migration) commit() error {
	if m.txn == nil {
		return nil
	}
	txn := m.txn
	m.txn, m.size = nil, 0
	defer txn.Discard()
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("wal: migrate: commit: %w", err)
	}
	m.st.Commits++
	return nil
}

// discard drops a write transaction left uncommitted by an error.
func (m *migration) discard() {
	if m.txn != nil {
		m.txn.Discard()
		m.txn = nil
	}
}
