package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// failures collects what Options.OnFailure is told.
type failures struct {
	mu   sync.Mutex
	errs []error
}

func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

func (f *failures) list() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// openWatched opens a log on dir with the storage check of an idle log
// every hour (so that only the commit path notices), reporting failures
// to f. The test closes it.
func openWatched(t *testing.T, dir string, f *failures, h testHooks) *Log {
	t.Helper()
	h.storageCheck = cmpOr(h.storageCheck, time.Hour)
	l, err := open(Options{Dir: dir, MinFreeBytes: -1, OnFailure: f.add}, h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func cmpOr(d, def time.Duration) time.Duration {
	if d != 0 {
		return d
	}
	return def
}

// appendN appends records first..first+n-1 of s one call each and
// returns the first error.
func appendN(l *Log, s [16]byte, first uint64, n int) error {
	for i := range n {
		if err := l.Append(context.Background(), mkWrite(s, first+uint64(i), 1)); err != nil {
			return err
		}
	}
	return nil
}

// wantFailed checks that err and every later append are ErrStorageFailed
// naming cause, that OnFailure was told once, and that Failure says so.
func wantFailed(t *testing.T, l *Log, f *failures, err error, cause string) {
	t.Helper()
	if !errors.Is(err, ErrStorageFailed) || !strings.Contains(err.Error(), cause) {
		t.Fatalf("append: %v; want ErrStorageFailed naming %q", err, cause)
	}
	for range 3 {
		if err := l.Append(context.Background(), mkWrite(sid(99), 1, 1)); !errors.Is(err, ErrStorageFailed) {
			t.Fatalf("a later append: %v; want ErrStorageFailed", err)
		}
	}
	if err := l.PutIndex(context.Background(), []IndexEntry{{Key: []byte("k"), Value: []byte("v")}}); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("PutIndex: %v; want ErrStorageFailed", err)
	}
	if got := f.list(); len(got) != 1 || !errors.Is(got[0], ErrStorageFailed) {
		t.Fatalf("OnFailure told %v; want one ErrStorageFailed", got)
	}
	if !errors.Is(l.Failure(), ErrStorageFailed) {
		t.Fatalf("Failure() = %v", l.Failure())
	}
}

// shutdownUnclean checks that Shutdown ends at once with an error saying
// the log was not closed cleanly.
func shutdownUnclean(t *testing.T, l *Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "not closed cleanly") || ctx.Err() != nil {
		t.Fatalf("Shutdown: %v (ctx %v); want 'not closed cleanly' before the deadline", err, ctx.Err())
	}
}

// restoredHas opens a copy of dir, as a restart after the process ended
// would find it (the log that failed is left open, as a dead process
// leaves its files), and checks that session s holds at least its
// acknowledged records 1..acked, densely: a commit that was refused may
// have landed all the same (its outcome is unknown), none acknowledged
// may be missing.
func restoredHas(t *testing.T, dir string, s [16]byte, acked uint64) {
	t.Helper()
	restored := filepath.Join(t.TempDir(), "restored")
	copyDir(t, dir, restored)
	l, err := Open(Options{Dir: restored, MinFreeBytes: -1})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer l.Close()
	last, err := l.LastSeq(context.Background(), s)
	if err != nil || last < acked {
		t.Fatalf("restored session has %d records (%v); %d were acknowledged", last, err, acked)
	}
	verifySession(t, l, s, last)
}

// The data directory moved away (a lost mount, a clean-up script):
// the first append after it fails, every later one too, Shutdown does
// not wait for badger's flush, and every acknowledged record is in the
// directory once it is back.
func TestStorageDirectoryMoved(t *testing.T) {
	base := t.TempDir()
	dir, away := filepath.Join(base, "data"), filepath.Join(base, "away")
	var f failures
	l := openWatched(t, dir, &f, testHooks{})
	s := sid(1)
	if err := appendN(l, s, 1, 20); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	wantFailed(t, l, &f, appendN(l, s, 21, 1), "was removed")
	shutdownUnclean(t, l)
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	restoredHas(t, dir, s, 20)
}

// A directory that goes while a commit is being made fails that commit:
// the check after the sync finds it, and nothing is acknowledged that may
// have been written into a directory no longer there.
func TestStorageDirectoryGoesDuringCommit(t *testing.T) {
	base := t.TempDir()
	dir, away := filepath.Join(base, "data"), filepath.Join(base, "away")
	var f failures
	var move atomic.Bool
	l := openWatched(t, dir, &f, testHooks{beforeCommit: func() {
		if move.CompareAndSwap(true, false) {
			if err := os.Rename(dir, away); err != nil {
				panic(err)
			}
		}
	}})
	s := sid(9)
	if err := appendN(l, s, 1, 3); err != nil {
		t.Fatal(err)
	}
	move.Store(true)
	wantFailed(t, l, &f, appendN(l, s, 4, 1), "was removed")
	shutdownUnclean(t, l)
	restoredHas(t, away, s, 3)
}

// Another directory at the data directory's path is noticed too.
func TestStorageDirectoryReplaced(t *testing.T) {
	base := t.TempDir()
	dir, away := filepath.Join(base, "data"), filepath.Join(base, "away")
	var f failures
	l := openWatched(t, dir, &f, testHooks{})
	s := sid(2)
	if err := appendN(l, s, 1, 5); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wantFailed(t, l, &f, appendN(l, s, 6, 1), "was replaced")
	shutdownUnclean(t, l)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	restoredHas(t, dir, s, 5)
}

// The data directory removed for good (rm -rf): refused at once, and a
// shutdown ends.
func TestStorageDirectoryRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var f failures
	l := openWatched(t, dir, &f, testHooks{})
	if err := appendN(l, sid(3), 1, 10); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	wantFailed(t, l, &f, appendN(l, sid(3), 11, 1), "was removed")
	shutdownUnclean(t, l)
}

// A journal segment unlinked while the directory stays (files removed one
// by one) is noticed by its link count.
func TestStorageJournalUnlinked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var f failures
	l := openWatched(t, dir, &f, testHooks{})
	if err := appendN(l, sid(4), 1, 3); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, journalDir, "*"+journalExt))
	if err != nil || len(segs) == 0 {
		t.Fatalf("journal segments: %v %v", segs, err)
	}
	for _, p := range segs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	wantFailed(t, l, &f, appendN(l, sid(4), 4, 1), "journal segment")
	shutdownUnclean(t, l)
}

// faultyFile fails its writes or syncs with EIO from the nth call on, as
// a failing disk does, and succeeds again when told to (as the page cache
// would let a later sync return success over lost data).
type faultyFile struct {
	segmentFile
	op     string // "write" or "sync"
	failAt int64  // the call that fails first (1-based); 0: never
	heal   *atomic.Bool
	calls  atomic.Int64
}

func (f *faultyFile) fault(op string) error {
	if f.op != op || f.failAt == 0 || (f.heal != nil && f.heal.Load()) {
		return nil
	}
	if f.calls.Add(1) >= f.failAt {
		return &os.PathError{Op: op, Path: f.Name(), Err: syscall.EIO}
	}
	return nil
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fault("write"); err != nil {
		return 0, err
	}
	return f.segmentFile.WriteAt(b, off)
}

func (f *faultyFile) Datasync() error {
	if err := f.fault("sync"); err != nil {
		return err
	}
	return f.segmentFile.Datasync()
}

// A journal write or sync that fails (EIO) fails the storage: the commit
// is not acknowledged, and no later commit is, even once the disk answers
// again (an fsync that failed is never retried and acknowledged).
func TestStorageJournalIOError(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			var f failures
			var heal atomic.Bool
			var armed atomic.Bool
			h := testHooks{wrapSegment: func(sf segmentFile) segmentFile {
				ff := &faultyFile{segmentFile: sf, op: op, heal: &heal}
				if armed.Load() {
					ff.failAt = 1
				}
				return ff
			}}
			l := openWatched(t, dir, &f, h)
			s := sid(5)
			if err := appendN(l, s, 1, 4); err != nil {
				t.Fatal(err)
			}
			// The active segment fails from its next call on.
			l.c.journal.f.(*faultyFile).failAt = l.c.journal.f.(*faultyFile).calls.Load() + 1
			armed.Store(true)
			err := appendN(l, s, 5, 1)
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("append on a failing disk: %v; want EIO", err)
			}
			heal.Store(true)
			wantFailed(t, l, &f, err, "input/output error")
			shutdownUnclean(t, l)
			restoredHas(t, dir, s, 4)
		})
	}
}

// badger's messages of failed background work fail the storage; its
// messages about damaged reads do not (scans report those per session).
func TestBadgerFailure(t *testing.T) {
	eio := &os.PathError{Op: "open", Path: "d/000008.sst", Err: syscall.EIO}
	enospc := &os.PathError{Op: "write", Path: "d/000008.sst", Err: syscall.ENOSPC}
	cases := []struct {
		name    string
		warning bool
		format  string
		args    []any
		fail    bool
	}{
		{"flush", false, "error flushing memtable to disk: %v, retrying", []any{fmt.Errorf("while creating table: %w", eio)}, true},
		{"flush on close", false, "While trying to flush memtable: %v", []any{eio}, true},
		{"write requests", false, "writeRequests: %v", []any{eio}, true},
		{"new memtable", false, "Got error: %v for id: %d\n", []any{eio, 7}, true},
		{"compaction os error", true, "[Compactor: %d] LOG Compact FAILED with error: %+v: %+v", []any{1, eio, "cd"}, true},
		{"compaction on a full disk", true, "[Compactor: %d] LOG Compact FAILED with error: %+v: %+v", []any{1, enospc, "cd"}, false},
		{"compaction race", true, "While running doCompact: %v\n", []any{errors.New("there is a non-empty level 2 above base level 3")}, false},
		{"damaged read", false, "Unable to read: Key: %v, Version : %v, meta: %v, userMeta: %v", []any{"k", 1, 0, 0}, false},
		{"cache warning", true, "%s might be too small. Metrics: %s\n", []any{"cache", "m"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := badgerFailure(c.warning, c.format, c.args)
			if (err != nil) != c.fail {
				t.Fatalf("badgerFailure = %v; want a failure: %v", err, c.fail)
			}
		})
	}
}

// The bridge of badger's logger fails the storage the log watches: a
// memtable flush badger retries for ever refuses appends at once.
func TestBadgerFlushFailureRefusesAppends(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var f failures
	l := openWatched(t, dir, &f, testHooks{})
	if err := appendN(l, sid(6), 1, 2); err != nil {
		t.Fatal(err)
	}
	l.db.Opts().Logger.Errorf("error flushing memtable to disk: %v, retrying",
		&os.PathError{Op: "open", Path: filepath.Join(dir, "000009.sst"), Err: syscall.EROFS})
	wantFailed(t, l, &f, appendN(l, sid(6), 3, 1), "read-only file system")
	shutdownUnclean(t, l)
	restoredHas(t, dir, sid(6), 2)
}

// An idle log notices a vanished directory on its own, so that health
// says so before any write is tried.
func TestStorageCheckedWhileIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	failed := make(chan error, 1)
	l, err := open(Options{Dir: dir, MinFreeBytes: -1, OnFailure: func(err error) { failed <- err }},
		testHooks{storageCheck: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := appendN(l, sid(7), 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, ErrStorageFailed) {
			t.Fatalf("OnFailure: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an idle log did not notice its directory was removed")
	}
	shutdownUnclean(t, l)
}

// Shutdown gives up at its deadline when the committer cannot drain (a
// sync that does not return, as on a hung disk), rather than wait for
// ever.
func TestShutdownDeadline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	stuck, entered := make(chan struct{}), make(chan struct{}, 1)
	var block atomic.Bool
	l := openWatched(t, dir, &failures{}, testHooks{beforeCommit: func() {
		if block.Load() {
			entered <- struct{}{}
			<-stuck
		}
	}})
	t.Cleanup(func() {
		close(stuck)
		<-l.stopped
		_ = l.db.Close()
	})
	if err := appendN(l, sid(8), 1, 1); err != nil {
		t.Fatal(err)
	}
	block.Store(true)
	go func() { _ = appendN(l, sid(8), 2, 1) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := l.Shutdown(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not closed cleanly") {
		t.Fatalf("Shutdown: %v; want 'not closed cleanly' at the deadline", err)
	}
}
