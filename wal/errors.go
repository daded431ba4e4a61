package wal

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns that matches one of these
// wraps it with %w and adds detail (session, seq, sizes), so test with
// errors.Is.
var (
	// ErrClosed is returned by every method called after Close has begun, and
	// by Close itself after the first call.
	ErrClosed = errors.New("wal: log closed")

	// ErrCorrupt reports a stored key or value that fails its frame or
	// checksum check. The message names the session and seq when known; the
	// wrapped chain carries the cause.
	ErrCorrupt = errors.New("wal: corrupt entry")

	// ErrGap reports a sequence that is not dense. On Append: a write whose
	// first seq is not the session's last stored seq + 1, or whose records
	// are not consecutive; nothing of that request is written. On read: a
	// session's stored seqs skip a number (a hole in the log).
	ErrGap = errors.New("wal: sequence gap")

	// ErrNotFound is returned by Meta for a session that has no metadata.
	ErrNotFound = errors.New("wal: not found")

	// ErrFormat is returned by Open when a non-empty store has no format
	// version record, or has one for a different format version (then as a
	// *FormatError), and by Migrate for a store it cannot convert.
	ErrFormat = errors.New("wal: unsupported store format")

	// ErrTooLarge is returned by Append for a single request whose encoded
	// size exceeds Options.MaxBatchBytes: it could never fit a transaction.
	ErrTooLarge = errors.New("wal: request too large")

	// ErrNoMeta is returned by Append for a write that starts a session
	// (first record seq 1) without metadata.
	ErrNoMeta = errors.New("wal: first record of a session without metadata")

	// ErrDamaged reports a store that lost data it had acknowledged, or
	// whose files are damaged: Open returns a *DamageError (matching it)
	// when it finds new damage and Options.OnDamage is RefuseDamaged, and
	// on a store whose MANIFEST is missing; Append and Scan return it for
	// a session marked damaged (see [Log.Damaged]).
	ErrDamaged = errors.New("wal: store damaged")

	// ErrDiskFull is returned by Append when the free space of the data
	// directory's file system is below Options.MinFreeBytes (plus the size
	// of the batch): nothing of the call was written, and appends succeed
	// again by themselves once space is freed. Open returns it when the
	// store cannot even flush what it replays. Reads are not affected.
	ErrDiskFull = errors.New("wal: disk full")

	// ErrStorageFailed is returned by Append, PutIndex and Close once the
	// log cannot make a commit durable on its storage: the data directory
	// was removed or replaced, the journal's active segment was unlinked,
	// a journal write or sync failed (an I/O error, a read-only file
	// system), badger's commit failed, or badger's background work
	// (memtable flush, compaction) failed. It is final for the life of
	// the Log: nothing more is written, and only reopening, after an
	// operator has repaired the storage, clears it. The commit that
	// found it was not acknowledged; every one acknowledged before is in
	// the synced journal. See [Log.Failure].
	ErrStorageFailed = errors.New("wal: storage failed")

	// ErrReadOnly is returned by Append on a log opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("wal: log opened read-only")

	// ErrLocked is returned by Open when another process (a running hub)
	// holds the directory.
	ErrLocked = errors.New("wal: data directory in use by another process")

	// ErrUnclean is returned by a read-only Open of a store that was not
	// closed cleanly (its hub crashed or was killed): badger must replay
	// and truncate its memtable log before reading it, which a read-only
	// open cannot do. Open it read-write once, or open a copy.
	ErrUnclean = errors.New("wal: store was not closed cleanly")

	// ErrInvalid reports invalid Options or a malformed Append request: an
	// empty Write, a seq of 0, or Meta given for a session that already
	// has records. Nothing of such a request is written.
	ErrInvalid = errors.New("wal: invalid argument")
)

// FormatError is the error of Open for a store whose format record names a
// version other than the one this build reads. It matches ErrFormat with
// errors.Is; errors.As gives the versions, and [FormatError.Migratable]
// says whether [Migrate] converts the store.
type FormatError struct {
	Dir  string // the store's directory
	Have uint32 // the store's format version
	Want uint32 // the format version this build reads
}

// Error says which versions differ and, for a store Migrate converts, the
// command that does it.
func (e *FormatError) Error() string {
	msg := fmt.Sprintf("%v: store has format version %d, this build reads %d", ErrFormat, e.Have, e.Want)
	if e.Migratable() {
		msg += fmt.Sprintf("; stop the hub and run `hubd log migrate --data %s` to convert it", e.Dir)
	}
	return msg
}

// Is reports whether target is ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// Migratable reports whether Migrate converts a store of version Have to
// the version this build reads: an older version from 1 on.
func (e *FormatError) Migratable() bool {
	return e.Have >= 1 && e.Have < formatVersion && e.Want == formatVersion
}
