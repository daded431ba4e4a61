// Package wal is hubd's write-ahead log: an append-only log of opaque
// records per session, stored in badger (v4), with group commit and a
// synced journal of every commit as its commit point.
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
//   - Append returned nil: the transaction was committed to badger and its
//     journal entry, which holds the transaction's data, was synced
//     (fdatasync, one per commit) before the return, so every record and
//     metadata of the call survives kill -9 of the process, an OS crash or
//     power loss, provided the disk honours flushes: what badger's unsynced
//     memtable log loses, Open writes again from the journal. Records acked
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
// Append also returns ErrDiskFull (the disk is below its reserve: nothing
// was written, and appends resume by themselves once space is freed) and
// ErrDamaged (the session is marked damaged: see below); nothing of that
// call was written either.
//
// # Storage that stops working
//
// The log's files are open descriptors, which go on taking writes after
// their directory is removed, and a write or fsync that failed once may
// "succeed" when retried over data the page cache dropped. So the log
// fails for good, refusing every later Append with ErrStorageFailed
// (reported once to Options.OnFailure, and by [Log.Failure]), at the
// first sign that it cannot make a commit durable: before and after each
// commit (and every second while idle) it checks that the data directory
// is still at its path and the one it opened (os.SameFile: device and
// inode) and that the journal's active segment is still linked into it;
// a failed journal write, sync or new segment, and a failed badger
// commit (but for a full disk), fail it; and so do the messages of
// badger's background work that mean it failed (a memtable flush, which
// badger retries for ever, a write, a compaction stopped by an error of
// the operating system), which badger otherwise only logs. The commit
// that finds the failure is answered with it, not acknowledged, even
// when its sync succeeded: its outcome is unknown.
//
// # Damage is detected, never served silently
//
// Badger keeps recent commits in its memtable log (*.mem, written on every
// commit, not synced) and replays it at open; a replay that meets a
// damaged, zeroed or truncated entry, or a missing file, silently drops
// what follows. So the log keeps a journal of its commits outside badger's
// files (journal.go: one entry per commit naming each session's seqs and
// holding the transaction's badger entries, written and synced at the
// same time as badger's commit, and the commit is answered only when both
// are done). Open first writes again every journalled commit none of whose
// sessions has reached its first record (the tail badger lost), then
// compares the journal with the store: a commit whose records are still
// missing lost acknowledged records, and Open either
// fails with a *DamageError listing each affected session from its first
// lost seq (Options.OnDamage RefuseDamaged, the default), or records a
// durable damage mark per session and opens (MarkDamaged): [Log.Damaged]
// lists them, and Append and Scan of a marked session fail with
// ErrDamaged. The last commit before a crash may have been in flight and
// never answered; it is not counted unless the journal says it was
// acknowledged (the next commit says so, or, after ackDelay (10 ms) of
// idleness, a marker). That is the one window of lag: a commit badger
// loses within 10 ms of a pause that precedes a crash is taken for one in
// flight. Journal segments are deleted once badger has flushed their
// commits into tables, and all of them at a clean Close.
//
// Badger verifies every table block's checksum when it reads it
// (ChecksumVerificationMode OnBlockRead); it then skips a bad block, and
// its iterators the rest of that table. Every session therefore has a
// head, its last seq, written in the same transaction as its records:
// scans check records against heads and density, so records a damaged
// block took are an error (ErrCorrupt or ErrGap naming session and seq),
// never a shorter session; the committer checks it too before it appends.
// [Log.Verify] reads everything (tables block by block, sessions by
// seeks) and reports each damaged table and session. [Log.Backup] writes
// a consistent snapshot of a log that is serving, and [Restore] loads it
// into a new directory, where it can be opened and verified.
//
// Before badger opens a directory, Open refuses a missing MANIFEST while
// data files exist (badger would start empty and delete every table), an
// unreadable MANIFEST and a table it lists that is gone, and moves into
// orphans/ the tables it does not list and empty memtable logs (badger
// would delete the first and cannot open with the second). With ReadOnly,
// Open changes nothing: it refuses a directory a running hub holds
// (ErrLocked) and one whose hub crashed, which badger can only read after
// replaying it (ErrUnclean; open a copy).
//
// # Disk full
//
// Badger writes through memory maps, so a full disk ends the process with
// SIGBUS. Before each commit the committer measures the free space of the
// data directory (statfs, about a microsecond) and refuses the whole batch
// with ErrDiskFull unless it leaves Options.MinFreeBytes (default 256 MiB,
// room for badger to flush its memtables and compact) plus twice the
// batch and a journal segment. Badger's memtable log files are
// preallocated (fallocate) up to what badger writes into them, where the
// file system allows. While the disk is below the reserve, Space reports
// it, OnSpace is called on each change, and the free space is measured
// every second so that appends resume by themselves. Open fails with
// ErrDiskFull when the memtable logs it must replay would not fit, and
// Close, in the same case, leaves badger unflushed (as a crash would)
// rather than die.
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
// [Log.Shutdown] is Close within a deadline: nothing acknowledged depends
// on the close (the journal holds it), so when the storage has failed, or
// fails during badger's flush, or the deadline passes, it leaves badger as
// a crash would and says the log was not closed cleanly.
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
// # On-disk format (version 3)
//
// Keys are fixed-width: one kind byte, the 16 raw bytes of the session UUID,
// and for records the seq as 8 bytes big-endian, so badger's key order is
// kind, then session, then seq; but for the caller's index (kind 0x05),
// whose keys are the caller's bytes (1 to 1024 of them). No key has a TTL.
// Keys are deleted only by the caller: its index keys, in the same
// transaction as the records they describe, and a whole session by
// [Log.DeleteSessions] (purge.go: a gone mark first, the deletions, then
// the session's tombstone; Open finishes one a crash interrupted, and
// neither writes a deleted session again from the journal nor reports
// its records lost).
//
//	kind 0x00  format   0x00 | 16 zero bytes          (17 bytes)
//	kind 0x01  metadata 0x01 | session                (17 bytes)
//	kind 0x02  record   0x02 | session | seq (BE u64) (25 bytes), seq >= 1
//	kind 0x03  head     0x03 | session                (17 bytes) -> last seq (BE u64)
//	kind 0x04  mark     0x04 | session                (17 bytes) -> from seq (BE u64) | cause
//	kind 0x05  index    0x05 | caller's key           (2 to 1025 bytes) -> caller's data
//	kind 0x06  gone     0x06 | session                (17 bytes) -> kind | done | when | archive | index keys
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
//	3  as 2, and every session with records has a head (its last seq,
//	   written with every commit); damage marks may exist.
//
// The keys and frames are the same in all. [Migrate] converts a store of
// version 1 value by value (`hubd log migrate` does it with the hub's
// decoder of version 1), then writes the heads and version 3 last, so an
// interrupted migration leaves a store that Open refuses and a rerun
// finishes. Open upgrades a store of version 2 by itself (heads, then the
// version), crash-safely; a release that reads version 2 refuses the
// upgraded store.
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
// values under 1 MiB kept in the LSM tree, conflict detection off, block
// checksums verified on read, its logging bridged to the zerolog Logger at
// warning level and above. MaxBatchBytes charges every write a head entry
// (130 bytes) on top of its records.
package wal
