package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// storageCheckEvery is how often an idle log checks its storage, so that
// health reports a vanished directory without waiting for a commit.
const storageCheckEvery = time.Second

// storage watches what the log's durability rests on: its data
// directory (still at its path, and the same directory as at Open), the
// journal's active segment (still linked into it), the journal's writes
// and syncs, badger's commits and badger's background work (memtable
// flushes, compactions). The first failure it is told of or finds is
// final: from then on every append is refused with ErrStorageFailed, as
// an fsync that failed once cannot be trusted to have written what it
// was given, nor can one that succeeds later (the page cache may have
// dropped the data the first one failed to write). Only a restart, after
// an operator has looked, clears it.
type storage struct {
	dir    string
	at     os.FileInfo // the data directory at Open; nil in memory
	logger zerolog.Logger
	onFail func(error)

	once   sync.Once
	err    atomic.Pointer[error]
	failed chan struct{} // closed at the first failure
}

// newStorage returns the watcher of opts' data directory. The directory
// is recorded by openedDir once badger has created it.
func newStorage(opts Options) *storage {
	return &storage{dir: opts.Dir, logger: opts.Logger, onFail: opts.OnFailure, failed: make(chan struct{})}
}

// openedDir records the data directory Open is about to use.
func (s *storage) openedDir() error {
	fi, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("wal: data directory: %w", err)
	}
	s.at = fi
	return nil
}

// fail records cause as the storage's failure, unless one is recorded
// already, and returns the failure. The first call logs it at error level
// and calls Options.OnFailure.
func (s *storage) fail(cause error) error {
	s.once.Do(func() {
		err := fmt.Errorf("%w: %w", ErrStorageFailed, cause)
		s.err.Store(&err)
		close(s.failed)
		s.logger.Error().Err(cause).Str("dir", s.dir).
			Msg("wal: storage failed; every write is refused until an operator restarts the hub")
		if s.onFail != nil {
			s.onFail(err)
		}
	})
	return s.Err()
}

// Err returns the storage's failure, or nil.
func (s *storage) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// check fails the storage when the data directory is no longer at its
// path (removed, renamed, replaced by another directory or a mount) or
// the journal's active segment seg (nil: none yet) was unlinked. It costs
// a stat and an fstat.
func (s *storage) check(seg segmentFile) error {
	if err := s.Err(); err != nil {
		return err
	}
	if s.at == nil {
		return nil
	}
	fi, err := os.Stat(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s.fail(fmt.Errorf("the data directory %s was removed", s.dir))
	case err != nil:
		return s.fail(fmt.Errorf("the data directory %s: %w", s.dir, err))
	case !os.SameFile(fi, s.at):
		return s.fail(fmt.Errorf("the data directory %s was replaced: another directory (or mount) is at its path now", s.dir))
	}
	if seg == nil {
		return nil
	}
	fi, err = seg.Stat()
	if err != nil {
		return s.fail(fmt.Errorf("the journal segment %s: %w", seg.Name(), err))
	}
	if unlinked(fi) {
		return s.fail(fmt.Errorf("the journal segment %s was removed from the data directory", seg.Name()))
	}
	return nil
}

// badgerFailure reports the failure a message of badger's background work
// stands for, or nil for one that is only a message: a failed memtable
// flush, write or file operation always fails the storage; a failed
// compaction does when an operating system error caused it (a full disk
// aside, which the reserve handles); read errors are damage, which scans
// report session by session.
func badgerFailure(warning bool, format string, args []any) error {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if !warning {
		for _, p := range badgerNotFailures {
			if strings.HasPrefix(format, p) {
				return nil
			}
		}
		return fmt.Errorf("badger: %s", msg)
	}
	if !strings.Contains(strings.ToLower(format), "compact") {
		return nil
	}
	for _, a := range args {
		if err, ok := a.(error); ok && osFailure(err) {
			return fmt.Errorf("badger: %s", msg)
		}
	}
	return nil
}

// badgerNotFailures are the prefixes of badger's error messages that do
// not mean the storage failed: reads of damaged data (scans and Verify
// report those per session) and the cleanup of an Open that failed
// (Open returns that error).
var badgerNotFailures = []string{
	"Unable to read",
	"Key: %v, Version",
	"Invalid read",
	"Unable to get stats",
	"Received err",
	"Ignoring table",
	"Key [%x, %d]. Error while fetching value",
	"WatchBatch.Cancel",
}

// osFailure reports whether err comes from the operating system failing a
// file operation for a reason other than a full disk.
func osFailure(err error) bool {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno != 0 && !isNoSpace(errno)
	}
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// segmentFile is a journal segment file, as the journal uses it: the
// operating system's file, or in tests one that fails as a broken disk
// would.
type segmentFile interface {
	Name() string
	WriteAt(b []byte, off int64) (int, error)
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
	// Datasync flushes the file's data (fdatasync where there is one).
	Datasync() error
}

// osFile is a segment file on the file system.
type osFile struct{ *os.File }

// Datasync flushes f's data.
func (f osFile) Datasync() error { return fdatasync(f.File) }
