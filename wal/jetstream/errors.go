package jetstream

import "errors"

// Sentinel errors. Every error the package returns that matches one of these
// wraps it with %w and adds detail (session, seq, partition, the server's
// description), so test with errors.Is. The first six mean what they mean
// in package wal.
var (
	// ErrClosed is returned by every method called after Close has begun.
	ErrClosed = errors.New("jetstream: log closed")

	// ErrCorrupt reports a stored message that fails its checks: a subject,
	// Nats-Msg-Id or frame that does not decode, a checksum mismatch, a
	// record whose id names another session or seq.
	ErrCorrupt = errors.New("jetstream: corrupt entry")

	// ErrGap reports a sequence that is not dense. On Append: a write whose
	// first seq is not the session's last stored seq + 1 (as this log last
	// read it), or whose records are not consecutive; nothing was sent. On
	// read: a session's stored seqs skip a number.
	ErrGap = errors.New("jetstream: sequence gap")

	// ErrTooLarge is returned by Append for a record or metadata larger
	// than MaxRecordBytes, or a request with more messages or bytes than
	// one atomic batch may hold.
	ErrTooLarge = errors.New("jetstream: request too large")

	// ErrNoMeta is returned by Append for a write that starts a session
	// (first record seq 1) without metadata.
	ErrNoMeta = errors.New("jetstream: first record of a session without metadata")

	// ErrInvalid reports invalid Options or a malformed Append request: an
	// empty Write, a seq of 0, Meta given for a session that already has
	// records, or writes that span two partitions (not one tree).
	ErrInvalid = errors.New("jetstream: invalid argument")

	// ErrFenced is returned by Append when JetStream refused a write's
	// expected last subject sequence: another writer appended to one of its
	// sessions since this log last read it (a new owner of the partition,
	// or a deposed one that had not yet noticed). Nothing of the call was
	// written. The caller has lost the partition unless its lease says
	// otherwise; if it still holds the lease, the other writer was a
	// deposed owner whose last write is now part of the history, and the
	// session must be reloaded from the log before it is written again.
	ErrFenced = errors.New("jetstream: fenced: another writer appended to the session")

	// ErrNotOwner is returned by Append for a partition this log does not
	// own (see Own): nothing was sent; or, for an append the partition was
	// disowned under (Disown) while it was retried, none of what was sent
	// had landed when the stream was read back, and nothing more is sent.
	ErrNotOwner = errors.New("jetstream: partition not owned by this node")

	// ErrDenied is returned by Delete for a partition whose stream was
	// created with deny_purge and deny_delete (as this log created them
	// before it deleted sessions): JetStream never lifts them, so its
	// sessions are kept for ever.
	ErrDenied = errors.New("jetstream: the partition stream denies purges and deletes")

	// ErrUnavailable is returned by Append when JetStream gave no answer
	// within Options.AppendTimeout (no stream leader, a partition of the
	// network): the outcome is unknown, as for any error that is not one
	// of the sentinels above. Reads return it when a request keeps timing
	// out.
	ErrUnavailable = errors.New("jetstream: no answer from JetStream")
	// ErrLapsed: the append landed, but its acknowledgement came after
	// this node's hold on the partition had lapsed by its clock
	// (Options.Holds): the next owner may have read the stream before it
	// landed, so it is not acknowledged. The log holds it; a retry with
	// the same idempotency key finds it there.
	ErrLapsed = errors.New("jetstream: acknowledged after the partition's lease lapsed")

	// ErrConfig is returned by Open when a partition stream exists with a
	// configuration this log cannot use: another partition count or
	// subject layout (hashing sessions with another count would misplace
	// them).
	ErrConfig = errors.New("jetstream: incompatible stream configuration")
)
