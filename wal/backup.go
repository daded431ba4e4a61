package wal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// BackupFormat returns the package's BackupFormat, for callers that hold
// a Log behind an interface.
func (l *Log) BackupFormat() string { return BackupFormat() }

// BackupFormat names what Backup writes: badger's backup stream of a store
// of this format version. Restore reads it; the restored store is opened
// like any other, so a backup of an older format is upgraded or refused
// there with the command that converts it.
func BackupFormat() string {
	return "badger-backup; hubd-wal format " + strconv.FormatUint(uint64(formatVersion), 10)
}

// Backup writes a consistent snapshot of every key of the log to w in
// badger's backup format, while the log serves: this is how a running
// hub's store is verified without stopping it (restore the backup with
// Restore into a new directory, then open and Verify that). Badger reads
// the snapshot with its iterators, so a damaged table block ends up as
// records missing in the copy, which Verify reports.
func (l *Log) Backup(ctx context.Context, w io.Writer) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := l.db.Backup(w, 0); err != nil {
		return fmt.Errorf("wal: backup: %w", err)
	}
	return nil
}

// Restore loads a backup written by Backup into opts.Dir, which must not
// hold a store, and closes it: Open then opens it like any other.
func Restore(opts Options, r io.Reader) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.InMemory || opts.ReadOnly {
		return fmt.Errorf("%w: Restore needs a directory to write", ErrInvalid)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, badger.ManifestFilename)); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s already holds a store", ErrInvalid, opts.Dir)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, journalDir), 0o755); err != nil {
		return fmt.Errorf("wal: restore: %w", err)
	}
	db, err := badger.Open(opts.badgerOptions().WithSyncWrites(true))
	if err != nil {
		return fmt.Errorf("wal: restore: open badger in %q: %w", opts.Dir, err)
	}
	err = db.Load(r, 16)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: restore: %w", err)
	}
	return nil
}
