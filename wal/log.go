package wal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// Log is a write-ahead log of per-session records on badger. Its methods are
// safe for concurrent use. Open one per directory.
type Log struct {
	db     *badger.DB
	logger zerolog.Logger
	limits limits

	mu      sync.Mutex
	queue   []*request // appends not yet taken by the committer, FIFO
	closed  bool       // set by Close; no request is queued afterwards
	readers int        // read calls in flight
	idle    sync.Cond  // signalled (on mu) when readers drops to 0

	wake    chan struct{} // capacity 1: something was queued, or Close began
	stopped chan struct{} // closed when the committer has exited
	reqPool sync.Pool     // of *request
	c       committer     // owned by the committer goroutine
	hooks   testHooks     // nil funcs outside tests
	stats   counters
}

// counters are the committer's running totals.
type counters struct {
	commits, requests, records atomic.Uint64
	commitNanos                atomic.Int64
}

// Stats are running totals of the log's writes since Open, for metrics
// and for seeing how well group commit batches.
type Stats struct {
	Commits  uint64        // transactions committed (each one sync)
	Requests uint64        // Append calls they held
	Records  uint64        // records they held
	Syncing  time.Duration // time spent committing (mostly syncing)
}

// Stats returns the log's running totals.
func (l *Log) Stats() Stats {
	return Stats{Commits: l.stats.commits.Load(), Requests: l.stats.requests.Load(),
		Records: l.stats.records.Load(), Syncing: time.Duration(l.stats.commitNanos.Load())}
}

// testHooks lets tests stop the committer at fixed points. Set before the
// committer starts; nil in production.
type testHooks struct {
	beforeTake   func() // before each look at the queue
	afterTake    func() // after taking a non-empty batch, before checking it
	beforeCommit func() // after staging a transaction, before committing it
}

// Open opens (creating it if needed) the log in opts.Dir, or an in-memory
// log, checks the store's format version and starts the committer.
func Open(opts Options) (*Log, error) {
	return open(opts, testHooks{})
}

// open is Open with test hooks.
func open(opts Options, hooks testHooks) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db, err := badger.Open(opts.badgerOptions())
	if err != nil {
		return nil, fmt.Errorf("wal: open badger in %q: %w", opts.Dir, err)
	}
	if err := checkFormat(db, opts.Dir); err != nil {
		if cerr := db.Close(); cerr != nil {
			opts.Logger.Warn().Err(cerr).Msg("wal: close badger after failed open")
		}
		return nil, err
	}
	l := &Log{
		db:      db,
		logger:  opts.Logger,
		limits:  opts.limits(),
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		hooks:   hooks,
	}
	l.idle.L = &l.mu
	l.reqPool.New = func() any { return &request{done: make(chan error, 1)} }
	l.c.init(l)
	go l.c.run()
	return l, nil
}

// checkFormat writes the format record into an empty store, or checks the
// one present. A non-empty store without it is ErrFormat; one of another
// version is a *FormatError.
func checkFormat(db *badger.DB, dir string) error {
	return db.Update(func(txn *badger.Txn) error {
		ver, found, err := readFormat(txn)
		switch {
		case err != nil:
			return err
		case !found && !isEmpty(txn):
			return fmt.Errorf("%w: store is not empty but has no format record", ErrFormat)
		case !found:
			return txn.Set(formatKey(), encodeFormat(formatVersion))
		case ver != formatVersion:
			return &FormatError{Dir: dir, Have: ver, Want: formatVersion}
		}
		return nil
	})
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
// closes badger. The first call returns badger's close error, if any; later
// calls return ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	l.signal()
	<-l.stopped
	l.mu.Lock()
	for l.readers > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("wal: close badger: %w", err)
	}
	return nil
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
