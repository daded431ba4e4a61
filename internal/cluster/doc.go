// Package cluster is what lets several hubd nodes share one session space
// on NATS JetStream, in one room: the partition leases, the placement of
// sessions, the routing of every call and stream to the node that serves
// its session, and the calls between nodes. The log itself is
// wal/jetstream; the NATS bus the nodes share (an embedded server, its
// credentials and TLS) is cluster/bus. A hubd server (internal/server)
// becomes a node with Open, HubConfig and Serve, and routes with the
// node's Unary interceptor and its hubgrpc.Router methods.
//
// # Leases
//
// Sessions are hashed by tree into P partitions (wal/jetstream). A node
// serves partition k only while it holds k's lease: key p<k> in the KV
// bucket hub_owners (R3, file storage, TTL = the lease, history 1), whose
// value is {node_id, grpc_addr, node_addr, epoch}: who holds it, where
// clients reach that node, where the other nodes call it.
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
// # Placement
//
// Every live node keeps a membership key in hub_nodes (same settings),
// refreshed every TTL/3, so N is known from a watch. Each node aims at
// ceil(P/N) partitions with no coordinator: above that it releases its
// least preferred ones, below it acquires free ones, most preferred first,
// preference being rendezvous hashing of (node, partition). A free
// partition whose preferred live node is another is left to that node for
// one renewal period, so a cold start places partitions without churn and
// a dead node's partitions go to their next preferred nodes. A gateway
// (Config.Gateway, a LeaseConfig.Observer) keeps no membership key and
// acquires nothing: it only watches the leases, and routes.
//
// A tree lives in the partition of its root. A new root session is drawn
// where it is asked for (a UUIDv7 drawn until it lands in a partition the
// node serves); an open with an idempotency or thread key lands in the
// key's own partition, so that its retries and its thread's next sessions
// are found by the one node that serves it (place.go).
//
// Each partition's callbacks run in order in its own goroutine: OnAcquire
// hydrates the partition (its sessions folded with no effects, their
// timers re-armed from the log) for as long as it needs while leases are
// renewed, and OnLose, after it, drops the partition's sessions from the
// hub at once and waits for the appends in flight to settle (node.go).
//
// # Routing: the node asked routes, clients follow nothing
//
// Any node takes any call and stream for any session, and runs it on the
// node that serves the session:
//
//   - A unary call (gRPC or JSON) runs on the node asked; refused with
//     NOT_OWNER naming another node, it is forwarded there, which runs it
//     on the caller's behalf (the same request, the caller's identity) and
//     whose reply or status goes back unchanged (route.go). A call whose
//     partition has no owner at the moment, or whose owner cannot be
//     reached, waits for one within its deadline (up to 20 s) before
//     NOT_OWNER with no owner address says to retry shortly.
//   - A listing (ListSessions, ListQuestions, PendingTurns) is gathered
//     from every node holding a lease, complete or refused (gather.go).
//   - Subscribe, and an agent stream's subscription, deliver from every
//     node: the node asked subscribes its own hub and every other node's
//     node service for the client, merges the streams per session, and
//     reopens a node's part from the merged cursors when its partitions
//     move (feed.go).
//   - Watch runs where its session is served and follows it when it moves
//     (watch.go).
//   - An agent stream's sends and opens run as the Send and Open calls
//     they are, forwarded like any unary call.
//
// Why the nodes route rather than the clients: every client in every
// language stays as simple as a client of one hub (the three SDKs hold no
// cluster code, and grpcurl, curl on the JSON API or a browser work
// through any node), the lease table the routing needs is already on
// every node, and one place decides where a call runs. Before, routing was
// done twice (nodes forwarded unary calls, the SDKs followed NOT_OWNER for
// streams), and a plain client saw only the sessions of its own node on
// its streams. The cost is a hop between nodes for a call whose session
// another node serves, measured in docs/SCALING.md: a small part of a
// send, which waits for a quorum write anyway. NOT_OWNER remains the
// answer where it is meaningful: a node service asked for a session its
// node does not serve (the asking node follows it), and "retry shortly"
// once a partition has had no owner that answers for a call's deadline.
//
// # Calls between nodes
//
// Each node serves the Hub service a second time on a listener of its own
// (Config.NodeListen; its address, advertised in the lease and membership
// records, is node_addr), apart from its clients' (nodeservice.go). What that
// node service runs, it runs on its own hub: never gathered, forwarded or
// merged again. The caller's identity travels in the metadata
// hubd-node-agent and hubd-node-operator, which only the node service
// reads: on the clients' address they are nobody's.
//
// The node service believes that metadata because only a node can call
// it: with the cluster's credentials it speaks mutual TLS 1.3 only, and a
// caller must present a certificate signed by the nodes' CA (nodetls.go).
// That CA is derived from the credentials file every node holds (an
// Ed25519 key from bus.Creds.Derive, a self-signed certificate made the
// same on every node); each node signs a certificate for a key of its own,
// drawn at start, naming its node id, and checks the certificate of the
// node it calls names the node it meant. The trust model is the bus's:
// holding the credentials file is what makes a node. Whoever holds it can
// already read and write the log and take the leases, so a node
// certificate from an operator's CA would make the calls no safer than
// the log they write to, while tying node addresses to certificate names;
// one secret to hand out and rotate is the model. An agent, holding a
// token or a client certificate of the hub's own CA, reaches only the
// clients' address.
//
// Without credentials (a development cluster, every address on loopback
// and the hub's clients unauthenticated; or `--insecure-nats`), the node
// service speaks plain gRPC and takes any call: whoever reaches it acts
// as any agent, as whoever reaches the bus does.
package cluster
