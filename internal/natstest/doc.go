// Package natstest runs embedded NATS servers with JetStream for tests: one
// server (streams of one replica) or a cluster of several in the test's
// process on loopback, each with its own ports and store directory, shut
// down by t.Cleanup. Servers are started with internal/bus.StartNATS,
// the helper hubd itself uses, so they fsync every write (SyncAlways).
//
// A cluster is started the way the scale-out design measured it: ports
// pre-allocated on 127.0.0.1 (FreePorts picks them below the kernel's
// ephemeral range), routes to every server, then ReadyForConnections. A
// port taken before its server listens fails that start at once
// (bus.ErrNATSStart) and the cluster starts again on new ports.
// JetStream answers only once a meta leader is elected (about two
// seconds on a small machine): code that creates
// streams or buckets must retry with short per-attempt timeouts, as
// wal/jetstream.Open and internal/cluster.Start do.
//
// Servers run without authentication unless given the nodes' credentials
// (WithCreds, WriteCreds) and TLS (WithTLS, WriteTLS: a throwaway CA and
// a certificate for 127.0.0.1), as `hubd serve --embed-nats` runs them;
// Connect then connects as the nodes do. RunServerConf takes a
// nats-server configuration for what the embedded servers do not set up
// (accounts of other users beside hubd's).
package natstest
