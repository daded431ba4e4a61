// Package jetstream is hubd's write-ahead log on NATS JetStream, for
// several hubd nodes sharing one session space: an append-only log of
// opaque records per session, in P partition streams, every append fenced
// so that a deposed writer can never write. It offers the methods of the
// hub's Log (Append, Scan, ScanRange, Metas) with the promises of package
// wal, plus what a node that owns some partitions needs (Own, Disown,
// Hydrate, Locate). Like wal it imports nothing of hubd: the caller owns sequence
// numbers and encodes records and metadata; the only thing it must tell
// the log about them is a session's tree root (Options.Root).
//
// # Layout (format version 1)
//
// Sessions are placed by tree: partition k = FNV-1a-32(root's 16 bytes)
// mod P, the root being the metadata's root session (the session itself
// for a root). One tree is one partition, so the hub's atomic writes (a
// child's open with its record in the parent, a close with the parent's
// result, a budget closing a tree) are one stream's atomic batch. P is
// fixed when the streams are created (each stream's metadata records it;
// Open refuses another: ErrConfig).
//
//	stream    HUB_P00 … HUB_P{P-1}      subjects hub.p<k>.>
//	metadata  hub.p<k>.m.<session-uuid>  one message: Nats-Msg-Id <session>/meta
//	records   hub.p<k>.s.<session-uuid>  one message per record: Nats-Msg-Id <session>/<seq>
//	tombstone hub.p<k>.g.<session-uuid>  once deleted: Nats-Msg-Id <session>/gone, or
//	                                     <session>/erased (after the first, for an erasure)
//
// Every stream: file storage, Replicas (3; 1 on a single server), limits
// retention with no limit at all (no MaxAge, MaxMsgs, MaxBytes or
// per-subject limit: the streams remove nothing by themselves),
// MaxMsgSize 1 MiB, a Duplicates window of 2 minutes, AllowAtomicPublish.
// Only Delete removes messages (a stream created with deny_purge and
// deny_delete, as earlier versions of this log made them, keeps them:
// JetStream never lifts those settings).
// The session's uuid is in canonical lowercase form. A session's metadata
// travels with its first record: the metadata message is published in the
// same atomic batch, just before it, on its own subject, so Metas reads
// metadata without reading records.
//
// Every payload is framed as in wal:
//
//	frame version (1 byte, = 1) | CRC-32C (4 bytes, BE) | data
//
// where the CRC-32C (Castagnoli) covers the session's 16 bytes, the seq
// (8 bytes BE, 0 for metadata), the kind byte (0x01 metadata, 0x02
// record), the frame version and the data: a payload under another
// subject or seq is detected as well as a damaged one. Readers check the
// subject, the Nats-Msg-Id against it, the frame, and density: a bad
// message is ErrCorrupt (naming session, seq and stream seq), a missing
// seq ErrGap.
//
// # Fencing
//
// Every append carries, on each session's first message, the header
// Nats-Expected-Last-Subject-Sequence: the stream seq of the session's
// last record as this log last read or wrote it (0 for a new session; 0
// too on the metadata subject, so a session is created once). JetStream
// checks it at the stream leader against the stored subject before it
// accepts the message, so an append based on a stale view of a session
// is refused (ErrFenced) — a deposed owner's record, timer firing or
// close alike — and the session's history stays one line. The log keeps
// each session's last (seq, stream seq), learned from its own acks, its
// reads and Hydrate; when it does not know it, it reads it
// (GetLastMsgForSubject) and the append must continue it (ErrGap
// otherwise). A refusal makes the log forget what it knew of the
// sessions of that append.
//
// # Atomic batches
//
// An append of one message is one publish. Anything larger (a session's
// first write, several records, several sessions of a tree) is one
// JetStream atomic batch (ADR-50: nats-server 2.12 and later; used here
// with 2.15.2): messages with Nats-Batch-Id and Nats-Batch-Sequence,
// published without waiting, the last with Nats-Batch-Commit: 1 as a
// request whose answer is the batch's ack. The stream stores all of it,
// contiguously, or none of it. Constraints the log respects: one
// expected-last-subject-sequence per subject per batch (a session's later
// records in the batch carry none: the first one's fence covers them);
// Nats-Msg-Id is allowed, and a batch holding one already stored is
// refused entire (err 10201); at most 1000 messages per batch (the
// server's max_batch_size; MaxBatchMessages), at most 50 batches open at
// once per stream by default (max_batch_inflight_per_stream: a refusal,
// err 10210, is retried), a batch not committed within 10 s is
// abandoned.
//
// # What an acknowledgement promises
//
//   - Append returned nil: the stream leader committed the message or the
//     whole batch through Raft, so a quorum of replicas (2 of 3) stored it;
//     with `sync_interval: always` each of them fsynced it (for R>1 the
//     server syncs the Raft log on flush) before the answer. It survives
//     kill -9 of any or all servers, power loss and the loss of a minority
//     of replicas, provided disks honour flushes. Reads that start after
//     the return see it, from any node (reads are served by the stream
//     leader).
//   - Append returned ErrGap, ErrNoMeta, ErrInvalid, ErrTooLarge,
//     ErrNotOwner, ErrClosed or the context's error: nothing was sent
//     (ErrNotOwner for an append disowned while it was retried: nothing of
//     it had landed when the stream was read back, and nothing more is
//     sent).
//   - Append returned ErrFenced: JetStream refused it, or a read-back found
//     another writer's message where its first would go. Nothing of the
//     call is written, and no attempt of it can land later: the session's
//     tail has moved past its fence.
//   - Append returned ErrUnavailable or any other error: the outcome is
//     unknown. The call is atomic, so a later read shows all of it or none.
//     An attempt still in flight may land later, but only onto the tail it
//     expected: once anyone appends after reading the session, it can no
//     longer land. The log forgets the sessions' tails, so its next append
//     reads them (and a retry of the same seqs fails with ErrGap if they
//     did land).
//
// Publishes are retried, with the same Nats-Msg-Ids (dedupe within the
// Duplicates window) and a fresh batch id, after timeouts (AttemptTimeout
// each, for AppendTimeout in all: a stream without a leader does not
// answer; measured 5-6 s for a kill -9 of the leader, 0.3 s for a
// graceful shutdown) and transient refusals. An answer that leaves the
// outcome open (a duplicate ack, a batch refused as a duplicate, a fence
// refused on a retry, the deadline) is settled by reading the first
// message on the append's first subject after its fence: the append's own
// (same Nats-Msg-Id and payload) means it landed, entire; another
// writer's means ErrFenced; none means unknown.
//
// # Context, Close and concurrency
//
// All methods are safe for concurrent use. Appends to one session are
// serialized in the log (a later one waits for the earlier's answer, then
// checks its seqs: ErrGap if they were taken); appends to different
// sessions are in flight together, each answered by JetStream's own ack,
// which is this log's group commit: the stream leader batches concurrent
// proposals and syncs. If ctx ends before an append holds its sessions,
// it returns ctx.Err() and sends nothing; after that it waits for the real
// outcome, bounded by AppendTimeout. Close stops accepting calls and waits
// for those in progress; it does not close the connection.
//
// # Ownership
//
// Append writes only partitions the log owns: all of them with
// Options.OwnAll (one hub on JetStream), else those given by Own (a node
// holding their leases, internal/cluster); Disown stops appends to a
// partition at once (ErrNotOwner) and forgets its sessions' tails. An
// append being retried when its partition is disowned sends no further
// attempt, even once the partition is owned again, and settles what it
// sent by reading the stream: its own message there means it landed, none
// means ErrNotOwner. Settle waits for those appends: a node that hands a
// lease back (a rebalance, a drain) calls it before, so that nothing it
// sent lands after the next owner's read. A node that loses its lease
// without handing it back (paused, cut off) may still have an attempt
// land between the new owner's read (Hydrate) and that owner's first
// append to the session; the fence refuses that append (ErrFenced), and
// the new owner learns the history then. So that no such write is
// acknowledged, Options.Holds says whether the lease is still valid by
// the node's clock, and an append acknowledged once it is not fails with
// ErrLapsed (it landed; a retry finds it). Reads need no ownership: any
// node reads any partition.
//
// # Deleting sessions
//
// Delete (retention and erasure) first writes a session's tombstone on
// its own subject (expected last subject sequence 0: once; an erasure's
// follows a removal's), then removes its metadata and records, each
// message overwritten in the stream's files (JetStream's secure delete),
// so no byte of them stays in the message blocks and a session purged,
// then erased, leaves nothing behind either. A crash
// between the steps leaves the tombstone with messages behind it:
// Hydrate reads a partition's tombstones before its messages, hands on
// nothing of a deleted session, and removes what was left. The tombstone
// holds what the caller gives (the hub's: when, why, the archive file);
// Tombstone reads it from any node. Space comes back as JetStream
// removes emptied message blocks and compacts the others. On R3 streams
// the Raft logs hold recent writes until JetStream compacts them after a
// snapshot: an erasure is complete on disk once that happened.
//
// # Reads
//
// Scan reads a session's tail (one request), then its records from the
// nearest remembered position at or before from (every 64th seq's stream
// seq is remembered) with single-message gets, switching to an ordered
// consumer after 32 messages. Hydrate reads a whole partition with one
// ordered consumer (300k messages/s measured) and primes every session's
// tail, which is how a new owner loads a partition. Metas reads the
// metadata subjects of every partition; ScanRange reads the records of
// every partition and holds the range's in memory to deliver them session
// by session in id order, as hub.Log requires: fine for one hub's start,
// wasteful for a node that loads partitions, which should use Hydrate. A
// read that stalls (its stream's leader moved) is resumed on a new
// consumer after the last message delivered.
//
// # Connection
//
// Give the log a connection with the reconnect buffer disabled
// (nats.ReconnectBufSize(-1)) and every server's URL: a publish made while
// the client reconnects then fails at once and is retried, instead of
// being buffered and sent once reconnected, possibly long after its
// Append gave up (harmless to the history, the fence holding, but an
// unknown outcome that settles late).
//
// # External NATS clusters
//
// Configure every server with `jetstream { sync_interval: always }` (the
// default, two minutes, can lose acknowledged writes on a coordinated
// power loss), a max_payload of at least MaxMsgSize (1 MiB, the default),
// and, for many concurrent session opens in one partition, a higher
// `max_batch_inflight_per_stream`. Run R3 across failure domains.
package jetstream
