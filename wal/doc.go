// Package wal is hubd's write-ahead log: an append-only log of opaque
// records per session, stored in badger (v4) with synchronous writes and
// group commit.
//
// The caller (the hub) owns sequence numbers and encodes records; wal frames,
// stores, orders and checks them. It imports nothing of hubd.
//
// # What an acknowledgement promises
//
// All writes of one Append call go into one badger transaction, possibly
// shared with other concurrent Append calls (group commit). With NoSync
// false (the default):
//
//   - Append returned nil: the transaction was committed and badger's
//     write-ahead files were synced (msync/fsync) before the return, so every
//     record and metadata of the call survives kill -9 of the process, an OS
//     crash or power loss, provided the disk honours flushes. Records acked
//     earlier are durable too: transactions are committed one at a time in
//     order. Reads that start after the return see the writes.
//   - Append returned ErrGap, ErrNoMeta, ErrInvalid, ErrTooLarge, ErrClosed
//     or the context's error: nothing of that call was written, and no other
//     call's outcome changed (the rest of its group still commits).
//   - Append returned any other error (it wraps badger's commit error): the
//     outcome is unknown. Badger replays a transaction all or nothing, so
//     after reopening, the whole call, together with the other calls of its
//     group, is either present or absent; before that, reads may see any of
//     it. The committer forgets the cached last seqs of the sessions
//     involved and reloads them from the store, so a retry of the same seqs
//     fails with ErrGap if they did land.
//   - A crash while Append is in flight leaves that call, after reopening,
//     entirely present or entirely absent.
//
// With NoSync true an acknowledgement survives a crash of the process (the
// data is in the kernel's page cache) but not of the machine.
//
// # Context and Close
//
// If ctx is done before the committer has taken the request, Append returns
// ctx.Err() and the request is never written. Once taken, Append waits for
// the real outcome whatever ctx does, so its result is always the truth.
// Close stops accepting appends (ErrClosed), lets the committer drain every
// queued request (each gets its real result), waits for reads in flight and
// closes badger. Any method called once Close has begun returns ErrClosed.
// Close waits for scans in progress, so a scan callback must not call it.
//
// # Concurrency
//
// All methods are safe for concurrent use. One committer goroutine writes:
// it takes every queued request (across all sessions, oldest first, up to
// MaxBatchBytes), checks each against the sessions' last seqs (kept in
// memory, loaded on first touch by a reverse seek on the session's record
// keys), stages the valid ones into one transaction, commits it with one
// sync and then answers each caller. A rejected request does not affect the
// others. Seqs are checked, not assigned: concurrent appends to one session
// must be ordered by the caller, or all but one fail with ErrGap. Scans read
// one consistent snapshot and may run alongside appends; they may see a
// transaction whose Append calls have not returned yet.
//
// # On-disk format (version 2)
//
// Keys are fixed-width: one kind byte, the 16 raw bytes of the session UUID,
// and for records the seq as 8 bytes big-endian, so badger's key order is
// kind, then session, then seq. No key has a TTL and none is ever deleted.
//
//	kind 0x00  format   0x00 | 16 zero bytes          (17 bytes)
//	kind 0x01  metadata 0x01 | session                (17 bytes)
//	kind 0x02  record   0x02 | session | seq (BE u64) (25 bytes), seq >= 1
//
// Every value is framed:
//
//	frame version (1 byte, = 1) | CRC-32C (4 bytes, BE) | data
//
// where the CRC-32C (Castagnoli) covers the key, the frame version byte and
// the data, so a value under the wrong key is detected as well as a damaged
// one. The format record's data is "hubd-wal" followed by the store format
// version as a big-endian uint32. Open writes it into an empty store and
// fails with ErrFormat when a non-empty store lacks it, or with a
// *FormatError (matching ErrFormat) when it holds another version.
//
// The store format version says what the data means to the hub, though wal
// itself treats data as opaque:
//
//	1  records hold the hub's hand-written binary envelope codec (first
//	   byte 0x01) and metadata its strict JSON (first byte '{').
//	2  records hold the hub's deterministic protobuf of hubpb.Envelope and
//	   metadata that of hubpb.SessionMeta, so new fields and payloads need
//	   no new version.
//
// The keys and frames are the same in both. [Migrate] converts a store of
// version 1 value by value (`hubd log migrate` does it with the hub's
// decoder of version 1) and writes version 2 last, so an interrupted
// migration leaves a store that Open refuses and a rerun finishes.
//
// A session's seqs are dense from 1 and its metadata is written in the same
// transaction as its first record. Readers check both frames and density:
// a bad key or value is ErrCorrupt (naming session and seq, wrapping the
// cause), a missing seq is ErrGap.
//
// # Sizing
//
// Badger is tuned for a small machine: 2 compactors, 32 MiB memtables
// (larger when MaxBatchBytes needs it), 4 of them, a 16 MiB block cache,
// values under 1 MiB kept in the LSM tree, conflict detection off, its
// logging bridged to the zerolog Logger at warning level and above.
package wal
