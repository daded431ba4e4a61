// Package bus is the cluster's NATS bus: a NATS server with JetStream
// run inside the hubd process (StartNATS), so that the hubd processes
// are the whole deployment, and what keeps the bus for nodes only.
//
// Whoever may publish on the bus could read and write every partition
// stream (wal/jetstream) and take the leases (internal/cluster). Two
// layers keep others out:
//
//   - Credentials (Creds): one NATS user nkey, in a file every node holds
//     (`hubd serve --nats-creds`, made by `hubd cluster creds`). An
//     embedded server accepts that user alone; a client with none or
//     with others is refused at connect. Its routes are authenticated
//     with a password derived from the same seed. The user's
//     NodePermissions allow what a node publishes and subscribes to and
//     nothing else; on a NATS cluster of your own, hubd gets an account of
//     its own (NATSAccount), so other users reach none of its subjects.
//     The same seed derives the nodes' CA for the calls between nodes
//     (Creds.Derive; internal/cluster), so that holding the file is what
//     makes a node.
//   - TLS (TLS): off loopback, the embedded server's clients use TLS and
//     its routes mutual TLS, verified against the nodes' CA. A node
//     connects to its own embedded server in-process (InProcess).
//
// Without credentials (a development cluster, every address on loopback
// and the hub's clients unauthenticated; or `--insecure-nats`), none of
// this applies: whoever reaches NATS acts as a node.
//
// StartNATS runs the server with `sync_interval: always` semantics
// (server.Options.SyncAlways): every acknowledged write is fsynced. For
// an external NATS cluster, set `jetstream { sync_interval: always }` in
// every server's configuration: with the two-minute default an
// acknowledged write can be lost when machines lose power together.
//
// It imports nothing of hubd's, so that the log's own tests
// (wal/jetstream, through internal/natstest) run their servers with it.
package bus
