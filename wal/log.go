package wal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// Log is a write-ahead log of per-session records on badger. Its methods are
// safe for concurrent use. Open one per directory.
type Log struct {
	db       *badger.DB
	logger   zerolog.Logger
	limits   limits
	readOnly bool
	heads    bool        // the store keeps a head per session (format 3)
	space    *spaceGuard // free-space reserve
	storage  *storage    // what durability rests on; its failure is final
	dir      string

	mu          sync.Mutex
	queue       []*request // appends not yet taken by the committer, FIFO
	closed      bool       // set by Close; no request is queued afterwards
	readers     int        // read calls in flight
	idle        sync.Cond  // signalled (on mu) when readers drops to 0
	marks       marks      // damaged sessions; written only while opening
	storeDamage []string   // store problems found at open
	opened      Opened     // what Open did; written only while opening

	wake    chan struct{} // capacity 1: something was queued, or Close began
	stopped chan struct{} // closed when the committer has exited
	reqPool sync.Pool     // of *request
	c       committer     // owned by the committer goroutine
	hooks   testHooks     // nil funcs outside tests
	// commitMu is held by the committer around each commit, and by
	// Reclaim while badger refuses writes (its memtables flushing).
	commitMu sync.Mutex
	// resumedErased are the erasures Open finished (resumeGone), whose
	// journal segments it scrubs once the committer runs.
	resumedErased []Deletion
	stats         counters
}

// counters are the committer's and the journal's running totals.
type counters struct {
	commits, requests, records, syncs atomic.Uint64
	syncNanos                         atomic.Int64
}

// Stats are running totals of the log's writes since Open, for metrics
// and for seeing how well group commit batches and what the disk costs.
type Stats struct {
	Commits  uint64 // transactions committed
	Requests uint64 // Append calls they held
	Records  uint64 // records they held
	// Syncs are the journal's syncs (fdatasync): one per commit, its
	// commit point, and a few more (an acknowledgement marker after a
	// pause, a new segment's first entry). Syncing is the time spent in
	// them: Syncing/Syncs is what the disk takes to make a commit
	// durable. Both stay 0 without syncs (NoSync, InMemory).
	Syncs   uint64
	Syncing time.Duration
}

// Stats returns the log's running totals.
func (l *Log) Stats() Stats {
	return Stats{Commits: l.stats.commits.Load(), Requests: l.stats.requests.Load(),
		Records: l.stats.records.Load(), Syncs: l.stats.syncs.Load(), Syncing: time.Duration(l.stats.syncNanos.Load())}
}

// Space returns the data directory's free space as last measured (before
// the last commit, or by the periodic check while the disk is full).
// Space.Full means appends are being refused with ErrDiskFull: a daemon
// reports itself not serving writes while it holds.
func (l *Log) Space() Space { return l.space.Space() }

// testHooks lets tests stop the committer at fixed points and shorten its
// timers. Set before the committer starts; zero in production.
type testHooks struct {
	beforeTake   func() // before each look at the queue
	afterTake    func() // after taking a non-empty batch, before checking it
	beforeCommit func() // after staging a transaction, before committing it
	afterAck     func() // after writing an entryAcked marker
	// afterGoneMark and afterDeleteBatch run in DeleteSession after its
	// mark is synced and after each deletion transaction.
	afterGoneMark, afterDeleteBatch func()
	spansOnly                       bool // journal commits without their data (as before entryData)
	ackDelay                        time.Duration
	recheck                         time.Duration
	storageCheck                    time.Duration // how often an idle log checks its storage
	// wrapSegment replaces each journal segment's file, to fail as a
	// broken disk would.
	wrapSegment func(segmentFile) segmentFile
	// afterDropPrefix runs in Scrub once badger has dropped the ranges.
	afterDropPrefix func()
	// goneSynced runs each time a deletion syncs badger's files.
	goneSynced func()
}

// Open opens (creating it if needed) the log in opts.Dir, or an in-memory
// log. Before badger opens the directory it refuses a store whose
// MANIFEST is missing or unreadable, or lists a table that is gone, and
// moves aside table files the MANIFEST does not list (badger would delete
// them); see [DamageError]. It then checks the store's format version
// (upgrading a store of version 2 to 3), compares the journal of recent
// commits with the store, and, where acknowledged records are missing,
// fails with a *DamageError or marks the sessions, as opts.OnDamage says.
// A store that could not flush what it replays on the free space left
// fails with ErrDiskFull; one in use by a running hub with ErrLocked.
func Open(opts Options) (*Log, error) {
	return open(opts, testHooks{})
}

// open is Open with test hooks.
func open(opts Options, hooks testHooks) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var moved []string
	if !opts.InMemory {
		var err error
		if moved, err = checkFiles(opts.Dir, opts.ReadOnly, opts.Logger); err != nil {
			return nil, err
		}
		if err := checkOpenSpace(opts); err != nil {
			return nil, err
		}
	}
	st := newStorage(opts)
	var watched *storage
	if !opts.InMemory && !opts.ReadOnly {
		watched = st
	}
	bopts := opts.badgerOptionsWatched(watched)
	if !opts.InMemory && !opts.ReadOnly && !hooks.spansOnly {
		// The journal is the commit point (see journal.go): badger's
		// memtable log is written but not synced.
		bopts = bopts.WithSyncWrites(false)
	}
	db, err := badger.Open(bopts)
	if err != nil {
		return nil, openError(opts, err)
	}
	if watched != nil {
		if err := st.openedDir(); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	l := &Log{
		storage:  st,
		db:       db,
		logger:   opts.Logger,
		limits:   opts.limits(),
		readOnly: opts.ReadOnly,
		space:    newSpaceGuard(opts, bopts.MemTableSize),
		dir:      opts.Dir,
		marks:    marks{},
		opened:   Opened{MovedAside: moved},
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		hooks:    hooks,
	}
	l.idle.L = &l.mu
	j, err := l.setup(opts)
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			opts.Logger.Warn().Err(cerr).Msg("wal: close badger after failed open")
		}
		return nil, err
	}
	l.reqPool.New = func() any { return &request{done: make(chan error, 1)} }
	if opts.ReadOnly {
		close(l.stopped)
		return l, nil
	}
	l.space.open()
	if err := l.space.check(0); err != nil {
		l.logger.Warn().Err(err).Msg("wal: opened with the disk below its reserve")
	}
	l.space.preallocMem()
	l.c.init(l, j)
	go l.c.run()
	if len(l.resumedErased) > 0 {
		// An erasure a crash interrupted: its bytes left badger's files
		// in resumeGone; the journal's segments that held them go now.
		if err := l.scrub(context.Background(), l.resumedErased, false); err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("wal: finishing an interrupted erasure: %w", err)
		}
		l.resumedErased = nil
	}
	return l, nil
}

// checkOpenSpace fails with ErrDiskFull when badger could not flush the
// memtable logs it will replay into tables on the free space left: it
// would end the process with SIGBUS.
func checkOpenSpace(opts Options) error {
	if opts.ReadOnly || opts.MinFreeBytes < 0 {
		return nil
	}
	need, err := openSpaceNeed(opts.Dir)
	if err != nil {
		return nil // a missing directory: badger creates it
	}
	free, ok, err := freeBytes(opts.Dir)
	if !ok || err != nil || free >= need {
		return nil
	}
	return fmt.Errorf("%w: opening %s replays memtable logs of %d bytes into tables, but only %d bytes are free",
		ErrDiskFull, opts.Dir, need, free)
}

// openError names the cause of badger's failure to open the store where
// it is one a caller acts on.
func openError(opts Options, err error) error {
	dir := opts.Dir
	switch {
	case strings.Contains(err.Error(), "Another process is using this Badger database"):
		return fmt.Errorf("%w: %s (a hub is running on it: stop it, or verify a backup): %w", ErrLocked, dir, err)
	case strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()), // wrapped as text
		opts.ReadOnly && strings.Contains(err.Error(), "while opening memtables"):
		return fmt.Errorf("%w: %s: a read-only open cannot replay its memtable log; open it read-write once, or open a copy: %w",
			ErrUnclean, dir, err)
	}
	if de := tableOpenDamage(dir, err); de != nil {
		return de
	}
	return fmt.Errorf("wal: open badger in %q: %w", dir, err)
}

// setup checks the format (upgrading version 2), loads the marks, checks
// the journal against the store and applies the damage policy. It returns
// the journal to write (nil read-only or in memory).
func (l *Log) setup(opts Options) (*journal, error) {
	jdir := filepath.Join(opts.Dir, journalDir)
	_, statErr := os.Stat(jdir)
	hadJournal := statErr == nil
	if !opts.InMemory && !opts.ReadOnly {
		if err := os.MkdirAll(jdir, 0o755); err != nil { // before a new store's format record
			return nil, fmt.Errorf("wal: journal: %w", err)
		}
	}
	ver, existed, err := checkFormat(l.db, opts, l.logger)
	if err != nil {
		return nil, err
	}
	l.heads = ver >= headsVersion
	if l.marks, err = loadMarks(l.db); err != nil {
		return nil, err
	}
	pending, err := loadPendingGone(l.db)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if l.opened.Deletions, err = l.resumeGone(pending); err != nil {
			return nil, err
		}
	}
	if opts.InMemory {
		return nil, nil
	}
	rep, err := readJournal(jdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	gone, err := rep.goneOf(l.db)
	if err != nil {
		return nil, fmt.Errorf("wal: journal check: %w", err)
	}
	rep.dropGone(gone)
	if !opts.ReadOnly {
		if l.opened.Replayed, err = replayJournal(l.db, rep, l.logger); err != nil {
			return nil, err
		}
	}
	l.storeDamage = rep.damage
	if !hadJournal && existed {
		l.storeDamage = append(l.storeDamage, "the journal directory is missing: commits the store lost cannot be detected")
	}
	found, err := checkJournal(l.db, rep)
	if err != nil {
		return nil, err
	}
	if err := l.applyPolicy(opts, found); err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return nil, nil
	}
	// What open wrote (the format record, marks, heads, replayed commits)
	// is durable before the first append: badger does not sync by itself.
	if err := l.db.Sync(); err != nil {
		return nil, fmt.Errorf("wal: sync after open: %w", err)
	}
	j, err := startJournal(jdir, opts.NoSync, opts.maxBatchBytes(), rep, l.db.MaxVersion())
	if err != nil {
		return nil, err
	}
	j.wrap = l.hooks.wrapSegment
	if err := j.ensureActive(); err != nil && !isNoSpace(err) {
		_ = j.close(false)
		return nil, err
	} else if err != nil {
		l.logger.Warn().Err(err).Msg("wal: no space for a journal segment; appends wait for space")
	}
	return j, nil
}

// applyPolicy refuses or marks the damage found at open that the store's
// marks do not already cover.
func (l *Log) applyPolicy(opts Options, found []SessionDamage) error {
	var fresh []SessionDamage
	for _, d := range found {
		if old, ok := l.marks[d.Session]; !ok || old.From > d.From {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) == 0 && len(l.storeDamage) == 0 {
		return nil
	}
	dmg := Damage{Sessions: fresh, Store: l.storeDamage}
	if opts.OnDamage == RefuseDamaged {
		return &DamageError{Dir: opts.Dir, Damage: dmg}
	}
	if !opts.ReadOnly && len(fresh) > 0 {
		if err := writeMarks(l.db, fresh); err != nil {
			return fmt.Errorf("wal: recording damage marks: %w", err)
		}
	}
	for _, d := range fresh {
		l.marks.add(d)
	}
	l.opened.Marked = fresh
	l.logger.Error().Int("sessions", len(fresh)).Strs("store", l.storeDamage).Str("report", dmg.String()).
		Msg("wal: damaged store opened; affected sessions are marked")
	return nil
}

// checkFormat writes the format record into an empty store, upgrades a
// store of version 2 (read-write only), or checks the one present. A
// non-empty store without it is ErrFormat; one of another version is a
// *FormatError. It returns the version the store now has and whether the
// store existed with heads before (not created or upgraded now).
func checkFormat(db *badger.DB, opts Options, logger zerolog.Logger) (uint32, bool, error) {
	var ver uint32
	var found, empty bool
	err := db.View(func(txn *badger.Txn) error {
		var err error
		ver, found, err = readFormat(txn)
		empty = !found && isEmpty(txn)
		return err
	})
	switch {
	case err != nil:
		return 0, false, err
	case !found && !empty:
		return 0, false, fmt.Errorf("%w: store is not empty but has no format record", ErrFormat)
	case !found && opts.ReadOnly:
		return formatVersion, false, nil
	case !found:
		return formatVersion, false, db.Update(func(txn *badger.Txn) error {
			return txn.Set(formatKey(), encodeFormat(formatVersion))
		})
	case ver == formatVersion:
		return ver, true, nil
	case ver == 2 && opts.ReadOnly:
		return ver, false, nil
	case ver == 2:
		n, err := addHeads(db, opts.maxBatchBytes())
		if err == nil {
			logger.Info().Int("sessions", n).Msg("wal: upgraded the store from format version 2 to 3")
		}
		return formatVersion, false, err
	}
	return 0, false, &FormatError{Dir: opts.Dir, Have: ver, Want: formatVersion}
}

// readFormat returns the store's format version, and whether it has a
// format record at all. A record that does not decode is ErrFormat.
func readFormat(txn *badger.Txn) (uint32, bool, error) {
	item, err := txn.Get(formatKey())
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("wal: read format record: %w", err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return 0, false, fmt.Errorf("wal: read format record: %w", err)
	}
	ver, err := decodeFormat(v)
	if err != nil {
		return 0, true, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return ver, true, nil
}

// isEmpty reports whether the store holds no user key at all.
func isEmpty(txn *badger.Txn) bool {
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	it.Rewind()
	return !it.Valid()
}

// Close stops accepting appends, lets the committer drain what is queued
// (those appends get their real results), waits for in-flight reads and
// closes badger, which flushes every memtable into a table; then the
// journal has nothing left to watch and its segments are deleted. The
// first call returns badger's close error, if any; later calls return
// ErrClosed. Close is Shutdown with no deadline.
func (l *Log) Close() error { return l.Shutdown(context.Background()) }

// Shutdown is Close bounded by ctx. Nothing acknowledged depends on it:
// every acknowledged commit is in the synced journal, which the next Open
// replays. So when the storage has failed (see ErrStorageFailed), or
// fails while badger flushes, or ctx is done first, Shutdown leaves
// badger as a crash would (its flush abandoned, the journal kept) and
// returns an error saying why the log was not closed cleanly: the
// process should then exit. A disk too full for badger's flush is such a
// case too (ErrDiskFull).
func (l *Log) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	l.signal()
	if err := l.await(ctx, l.stopped, "the committer to drain its appends"); err != nil {
		return err
	}
	if err := l.await(ctx, l.readsDone(), "reads in progress"); err != nil {
		return err
	}
	if err := l.closeSpace(); err != nil {
		return err
	}
	l.space.close()
	if j := l.c.journal; j != nil {
		if err := l.storage.check(j.f); err != nil {
			return fmt.Errorf("wal: not closed cleanly, the journal kept for the next start: %w", err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- l.db.Close() }()
	var err error
	select {
	case err = <-closed:
	case <-l.storage.failed:
		return fmt.Errorf("wal: not closed cleanly, the journal kept for the next start: %w", l.storage.Err())
	case <-ctx.Done():
		return fmt.Errorf("wal: not closed cleanly, badger's flush did not end in time; the journal kept for the next start: %w", ctx.Err())
	}
	if serr := l.storage.Err(); err == nil && serr != nil {
		err = serr // badger gave up on a failure it only logged
	}
	if j := l.c.journal; j != nil {
		if jerr := j.close(err == nil); jerr != nil {
			l.logger.Warn().Err(jerr).Msg("wal: closing the journal")
		}
	}
	if err != nil {
		return fmt.Errorf("wal: close badger: %w", err)
	}
	return nil
}

// await waits until done is closed, or fails once ctx is done, naming
// what it waited for.
func (l *Log) await(ctx context.Context, done <-chan struct{}, what string) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wal: not closed cleanly, waiting for %s; the journal kept for the next start: %w", what, ctx.Err())
	}
}

// readsDone returns a channel closed once no read is in flight (none can
// start once Close has begun).
func (l *Log) readsDone() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		l.mu.Lock()
		for l.readers > 0 {
			l.idle.Wait()
		}
		l.mu.Unlock()
		close(done)
	}()
	return done
}

// Failure returns the error every write is refused with since the log's
// storage failed (matching ErrStorageFailed), or nil while it serves.
func (l *Log) Failure() error { return l.storage.Err() }

// closeSpace fails with ErrDiskFull when badger could not flush its
// memtables on the free space left: its flush would write a table through
// a memory map and end the process with SIGBUS. Close then leaves badger
// open, as a crash would leave the store (everything acknowledged is in
// its synced memtable logs, and the journal stays): the process should
// exit, and the next Open replays the store once space is freed.
func (l *Log) closeSpace() error {
	if l.readOnly || !l.space.on {
		return nil
	}
	need, err := openSpaceNeed(l.dir)
	if err != nil {
		return nil
	}
	free, ok, err := freeBytes(l.dir)
	if !ok || err != nil || free >= need {
		return nil
	}
	l.logger.Error().Uint64("free", free).Uint64("need", need).
		Msg("wal: not flushing the memtables on close: the disk is too full; the next start replays them")
	return fmt.Errorf("%w: closing %s would flush memtable logs of %d bytes with %d bytes free; "+
		"left as after a crash", ErrDiskFull, l.dir, need, free)
}

// signal wakes the committer without blocking.
func (l *Log) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// enterRead registers a read call; it fails once Close has begun. A read
// that nests another (from a callback) cannot deadlock against Close: the
// inner call just sees ErrClosed.
func (l *Log) enterRead() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.readers++
	return nil
}

// exitRead ends a read call registered by enterRead.
func (l *Log) exitRead() {
	l.mu.Lock()
	l.readers--
	if l.readers == 0 {
		l.idle.Broadcast()
	}
	l.mu.Unlock()
}
