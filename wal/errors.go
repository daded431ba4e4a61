package wal

import "errors"

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
	// version record, or has one for a different format version.
	ErrFormat = errors.New("wal: unsupported store format")

	// ErrTooLarge is returned by Append for a single request whose encoded
	// size exceeds Options.MaxBatchBytes: it could never fit a transaction.
	ErrTooLarge = errors.New("wal: request too large")

	// ErrNoMeta is returned by Append for a write that starts a session
	// (first record seq 1) without metadata.
	ErrNoMeta = errors.New("wal: first record of a session without metadata")

	// ErrInvalid reports invalid Options or a malformed Append request: an
	// empty Write, a seq of 0, or Meta given for a session that already
	// has records. Nothing of such a request is written.
	ErrInvalid = errors.New("wal: invalid argument")
)
