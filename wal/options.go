package wal

import (
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/rs/zerolog"
)

const (
	// DefaultMaxBatchBytes is the group-commit transaction cap used when
	// Options.MaxBatchBytes is 0.
	DefaultMaxBatchBytes = 2 << 20
	// MaxMaxBatchBytes is the largest Options.MaxBatchBytes accepted.
	MaxMaxBatchBytes = 64 << 20

	// entryOverhead is what MaxBatchBytes charges per stored entry on top of
	// its key and framed value. Badger limits a transaction both to 15% of
	// the memtable in bytes and to that budget divided by its skiplist node
	// size (96 bytes) in entries; charging 100 bytes per entry makes one
	// byte budget respect both.
	entryOverhead = 100

	// minMemTableSize is the badger memtable size; it grows to
	// memTablePerBatch*MaxBatchBytes when that is larger, so a full batch
	// (12.5% of the memtable) stays under badger's 15% transaction limit.
	minMemTableSize  = 32 << 20
	memTablePerBatch = 8

	// inMemoryMaxValue is badger's default value threshold, the largest
	// value it accepts in memory.
	inMemoryMaxValue = 1 << 20
)

// Options configures Open. The zero value is not valid: set Dir or InMemory.
type Options struct {
	// Dir is the data directory; required unless InMemory.
	Dir string
	// InMemory runs badger without disk (tests). Dir must then be empty.
	// Badger needs in-memory values under 1 MiB, so in this mode a record
	// or metadata of more than 1 MiB - 6 bytes fails with ErrTooLarge.
	InMemory bool
	// NoSync turns badger's SyncWrites off: appends are much faster, but an
	// acknowledgement is then not durable against power loss (it still
	// survives a crash of the process alone). For benchmarks and tests.
	NoSync bool
	// MaxBatchBytes caps one group-commit transaction, counting for each
	// stored entry its key, its framed value and 100 bytes of badger
	// overhead. A single Append larger than this fails with ErrTooLarge.
	// 0 means DefaultMaxBatchBytes; at most MaxMaxBatchBytes.
	MaxBatchBytes int
	// ReadOnly opens the store without changing it: badger's read-only
	// mode (a shared lock, so it fails with ErrLocked while a hub has the
	// directory open, and with ErrUnclean on a store whose hub crashed),
	// no upgrade, no journal or marks written; Append fails with
	// ErrReadOnly. For `hubd log verify`.
	ReadOnly bool
	// OnDamage says what Open does when acknowledged records are missing:
	// refuse (RefuseDamaged, the zero value) or mark the affected sessions
	// and open (MarkDamaged).
	OnDamage DamagePolicy
	// MinFreeBytes is the free space kept on the data directory's file
	// system: an append that would leave less than this (plus its own
	// size) fails with ErrDiskFull and writes nothing. 0 means
	// DefaultMinFreeBytes; a negative value turns the check off. It should
	// leave room for badger to flush its memtables (up to 5 × 32 MiB)
	// and compact.
	MinFreeBytes int64
	// OnSpace, if set, is called when appends start or stop being refused
	// for lack of space, with the measurement. It runs on the committer
	// goroutine: it must return quickly and must not call the Log.
	OnSpace func(Space)
	// OnFailure, if set, is called once, when the log's storage fails
	// (see ErrStorageFailed), with the error every write is refused with
	// from then on. It may run on the committer goroutine or on one of
	// badger's: it must return quickly and must not call the Log.
	OnFailure func(error)
	// Logger receives the package's and badger's messages (badger's at
	// warning level and above). The zero value logs nothing, like
	// zerolog.Nop().
	Logger zerolog.Logger
}

// Validate reports whether the options can be used by Open. Its errors wrap
// ErrInvalid.
func (o Options) Validate() error {
	switch {
	case o.InMemory && o.Dir != "":
		return fmt.Errorf("%w: Dir %q set together with InMemory", ErrInvalid, o.Dir)
	case !o.InMemory && o.Dir == "":
		return fmt.Errorf("%w: Dir is required unless InMemory", ErrInvalid)
	case o.InMemory && o.ReadOnly:
		return fmt.Errorf("%w: ReadOnly set together with InMemory", ErrInvalid)
	case o.OnDamage > MarkDamaged:
		return fmt.Errorf("%w: OnDamage %d", ErrInvalid, o.OnDamage)
	case o.MaxBatchBytes < 0 || o.MaxBatchBytes > MaxMaxBatchBytes:
		return fmt.Errorf("%w: MaxBatchBytes %d outside [0, %d]", ErrInvalid, o.MaxBatchBytes, MaxMaxBatchBytes)
	}
	return nil
}

// WriteBytes is what MaxBatchBytes charges for one session's write of
// entries (records or metadata) holding these many bytes of data: the
// least MaxBatchBytes that takes such an Append.
func WriteBytes(data ...int) int {
	n := headEntrySize
	for _, d := range data {
		n += entrySize(recordKeyLen, d)
	}
	return n
}

// maxBatchBytes is MaxBatchBytes with the default applied.
func (o Options) maxBatchBytes() int {
	if o.MaxBatchBytes == 0 {
		return DefaultMaxBatchBytes
	}
	return o.MaxBatchBytes
}

// limits are the request limits these options imply. In memory, badger
// must keep every value in the LSM tree: it refuses one longer than its
// value threshold (1 MiB by default) and panics on one of exactly that
// length, so framed values stay strictly below it.
func (o Options) limits() limits {
	lim := limits{batch: o.maxBatchBytes()}
	if o.InMemory {
		lim.value = inMemoryMaxValue - 1 - frameHeaderLen
	}
	return lim
}

// badgerOptions sizes badger for a small (2-core, modest memory) machine,
// with the checksum of every table block verified when it is read (badger
// then skips a bad block rather than decode it; the heads and the seq
// density checks turn what goes missing into an error).
func (o Options) badgerOptions() badger.Options { return o.badgerOptionsWatched(nil) }

// badgerOptionsWatched is badgerOptions with badger's messages of failed
// background work reported to st (nil: only logged).
func (o Options) badgerOptionsWatched(st *storage) badger.Options {
	memTable := int64(minMemTableSize)
	if m := int64(memTablePerBatch) * int64(o.maxBatchBytes()); m > memTable {
		memTable = m
	}
	return badger.DefaultOptions(o.Dir).
		WithInMemory(o.InMemory).
		WithReadOnly(o.ReadOnly).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithSyncWrites(!o.NoSync).
		WithDetectConflicts(false). // one writer: the committer
		WithMemTableSize(memTable).
		WithNumMemtables(4).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithBlockCacheSize(16 << 20).
		WithLogger(badgerLogger{o.Logger, st}) // not WithLoggingLevel: it replaces the logger
}

// badgerLogger bridges badger's logger to zerolog, and tells the storage
// watcher of the messages that mean a failure of badger's background
// work, which badger otherwise only logs (a failed memtable flush is
// retried every second for ever).
type badgerLogger struct {
	l  zerolog.Logger
	st *storage // nil: not watched
}

func msg(format string, args []any) string {
	return strings.TrimSpace(fmt.Sprintf(format, args...))
}

// Errorf logs at error level.
func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error().Str("from", "badger").Msg(msg(f, a))
	b.watch(false, f, a)
}

// Warningf logs at warning level.
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn().Str("from", "badger").Msg(msg(f, a))
	b.watch(true, f, a)
}

// watch fails the storage for a message that means badger's background
// work failed.
func (b badgerLogger) watch(warning bool, f string, a []any) {
	if b.st == nil {
		return
	}
	if err := badgerFailure(warning, f, a); err != nil {
		b.st.fail(err)
	}
}

// Infof drops badger's informational messages.
func (badgerLogger) Infof(string, ...any) {}

// Debugf drops badger's debug messages.
func (badgerLogger) Debugf(string, ...any) {}
