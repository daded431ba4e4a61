// Package cluster is what lets several hubd nodes share one session space
// on NATS JetStream: partition leases, the table of who owns what, and an
// embedded NATS server so a deployment needs nothing but hubd.
//
// # Leases
//
// Sessions are hashed by tree into P partitions (wal/jetstream). A node
// serves partition k only while it holds k's lease: key p<k> in the KV
// bucket hub_owners (R3, file storage, TTL = the lease, history 1), whose
// value is {node_id, grpc_addr, epoch}.
//
//   - Acquire: kv.Create(p<k>), which succeeds only if the key does not
//     exist (never written, deleted, or expired). The creating revision is
//     the lease's epoch, written into the value at once; epochs of one
//     partition only grow. OnAcquire(ctx, k, epoch) follows; ctx ends when
//     the lease does.
//   - Renew: kv.Update(p<k>, value, lastRevision) every TTL/3. It fails if
//     anyone else wrote the key since (after an expiry, a Create) or it
//     expired; a refused renewal, or one unanswered once the lease's
//     validity (0.9 TTL by this node's clock) has passed, drops the
//     partition at once:
//     Holds(k) turns false and OnLose(k) runs. The watch of the bucket
//     drops it as soon as it sees the key expire or change hands, even
//     before the next renewal.
//   - Expire: the bucket's TTL removes a key not renewed for TTL and leaves
//     a marker (LimitMarkerTTL), which every node's watch sees: the
//     partition is free and a live node creates it.
//   - Release: on rebalance and on Close, OnLose(k) runs first (the node
//     stops serving), then the key is deleted at the node's last revision,
//     so a peer takes the partition at once instead of after a TTL: a
//     rolling restart moves partitions in well under a lease.
//
// Holds(k) is also false once the last successful renewal is older than
// 0.9 TTL by the node's own monotonic clock (a paused process), so a write
// path that checks it stops writing before the lease can have expired on
// the server. None of this is trusted for safety: the log's fence
// (wal/jetstream.ErrFenced) refuses every write of a deposed owner that
// did not notice. Leases are what make the writer usually right; the fence
// is what makes a wrong one harmless.
//
// # Spread
//
// Every live node keeps a membership key in hub_nodes (same settings),
// refreshed every TTL/3, so N is known from a watch. Each node aims at
// ceil(P/N) partitions with no coordinator: above that it releases its
// least preferred ones, below it acquires free ones, most preferred first,
// preference being rendezvous hashing of (node, partition). A free
// partition whose preferred live node is another is left to that node for
// one renewal period, so a cold start places partitions without churn and
// a dead node's partitions go to their next preferred nodes.
//
// An observer (Config.Observer) keeps no membership key and acquires
// nothing: it only watches the leases, for a node that routes calls
// without serving any partition.
//
// # Callbacks
//
// Each partition's callbacks run in order in its own goroutine: OnAcquire
// may hydrate for as long as it needs while leases are renewed, and
// OnLose runs after it (its context already done). OnLose must return
// promptly: until it does, a released partition is not handed back.
//
// # Calls between nodes
//
// ServeCalls answers the calls other nodes send this one on NATS core
// request/reply, subject <prefix>.<node id> ("hubd.node.n1"), and Call
// sends one: a gRPC method, the client's identity as the asking node
// authenticated it, the request's bytes; the answer is the reply's bytes
// or a google.rpc.Status, with the partitions the answering node served
// throughout (what a gathered listing covers). A call or answer over the
// server's max_payload goes in parts, in order. A node nobody serves
// answers at once (NATS "no responders": ErrUnreachable); one that does
// not answer in time is the caller's context's error. The identity a call
// carries is believed once the call proves it comes from a node (below);
// internal/server/route.go says what the calls are for.
//
// # The bus is for nodes only
//
// Whoever may publish on the cluster's subjects could otherwise call any
// node as any agent or as operator, read and write every partition
// stream, and take the leases. Three layers keep them out:
//
//   - Credentials (Creds): one NATS user nkey, in a file every node holds
//     (`hubd serve --nats-creds`, made by `hubd cluster creds`). An
//     embedded server accepts that user alone; a client with none or
//     with others is refused at connect. Its routes are authenticated
//     with a password derived from the same seed. The user's
//     NodePermissions allow what a node publishes and subscribes to and
//     nothing else; on a NATS cluster of your own, hubd gets an account of
//     its own (NATSAccount), so other users reach none of its subjects.
//   - TLS (TLS): off loopback, the embedded server's clients use TLS and
//     its routes mutual TLS, verified against the nodes' CA. A node
//     connects to its own embedded server in-process (InProcess).
//   - A proof on every call between nodes and on its answer (NodeProof):
//     an HMAC-SHA256, keyed by a secret derived from the credentials, over
//     the subject, the reply subject, every header that names the caller
//     or the call, a digest of the body, a time and a nonce. A call
//     without a valid one, outside a 60 s window of the receiver's clock,
//     or replayed, is answered refused and never runs.
//
// Why a signature rather than node-to-node gRPC over mutual TLS: the
// calls already travel on NATS (node subjects, parts, "no responders"
// for a node that is gone, all measured in docs/SCALING.md), and the
// secret is one the nodes must share anyway; gRPC between nodes would add
// a second transport, its ports, and certificates naming every node's
// gRPC address, even for a development cluster on loopback. The proof
// does not depend on how NATS is configured: a NATS account given by
// mistake to someone else still cannot make a node believe an identity.
// It costs a few microseconds a message (BenchmarkNodeProof). It is all
// Calls know of authentication (sign and check), so node-to-node mutual
// TLS can replace it without touching the rest. It does not hide the
// calls: that is TLS's part. Whoever holds the credentials is a node.
//
// Without credentials (a development cluster, every NATS address on
// loopback and the hub's clients unauthenticated; or `--insecure-nats`),
// none of this applies: whoever reaches NATS acts as a node.
//
// # Embedded NATS
//
// StartNATS runs a NATS server with JetStream inside the process, routes
// to the other nodes' servers, and `sync_interval: always` semantics
// (server.Options.SyncAlways): every acknowledged write is fsynced. For an
// external NATS cluster, set `jetstream { sync_interval: always }` in every
// server's configuration: with the two-minute default an acknowledged
// write can be lost when machines lose power together.
package cluster
