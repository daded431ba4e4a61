// Package adapters is the contract between the hub and the session types,
// in the manner of database/sql/driver: one small package of interfaces,
// effects and protocol errors, implemented by the packages beneath it
// (workflow, conversation, discussion, consulting) and consumed by the hub.
//
// An [Adapter] is a session type (a kind and a version, e.g. "workflow@1"):
// it validates a session's metadata at open and returns the session's
// initial [State]. A State validates a send against itself, folds an
// accepted envelope into itself and says who is expected next. The hub
// carries out what a fold decides (an [Outcome]) after the write-ahead log
// has made the envelope durable.
//
// Invariant: adapters are pure. They read no clock (time arrives as the
// envelope's AcceptedAt), draw no randomness, do no I/O, start no goroutine
// and never depend on map iteration order. Fold never fails for an envelope
// that Validate accepted: a broken invariant is a bug, not an error. So
// re-folding a session's log from its first record always rebuilds exactly
// the live state, which is what hydrate and audits rely on.
package adapters
