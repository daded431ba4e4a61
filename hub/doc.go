// Package hub is the write side of hubd's engine: it owns every session's
// state, serialises each tree's changes, writes them to the write-ahead
// log, runs the expectation timers, rebuilds every live session from the
// log when it starts, and publishes each commit to its reader, the feed
// (package hub/feed), which delivers it and answers reads.
//
// # The send path
//
// Every change to a session, whether an agent's send, an invite ack, a close
// or a timer's firing, takes the same path, in this order, while holding
// the session's tree (one change at a time per tree; other trees proceed
// in parallel):
//
//  1. identify: the sender is the caller's authenticated agent, never a
//     field of the payload; an idempotent retry (same sender, same client
//     message id) is answered with its original seq and writes nothing
//     (send.go);
//  2. validate: the lifecycle allows it, the sender is a participant, the
//     shape is right, the size is within the limit, the adapter accepts it;
//     a rejection writes nothing (send.go, adapters.Machine.Admit);
//  3. stamp: seq = last + 1, a time-ordered id, the hub's clock (plan.go);
//  4. fold: the adapter machine applies it and decides what follows (a
//     close, the open after the last ack), each follow-up stamped too, and
//     the plan settles what that decides across the tree (plan.go,
//     tree.go);
//  5. append: the envelopes of every session touched are written to the
//     log in one atomic, durable write. This is the commit point: a close is
//     never logged apart from the envelope that caused it (commit.go);
//  6. publish: each session's derived state and published state (state,
//     last seq, turn, questions), hooks and timers, then the commit is
//     handed to the consumer, which queues deliveries to the subscribers
//     that may see them and tells the expected speakers it is their turn
//     (queuing never waits for a subscriber); then the sessions that ended
//     leave the live indexes (after.go);
//  7. acknowledge: the caller gets the seq and time.
//
// Nobody hears of an envelope before it is durable; the next speaker may
// hear of it before the sender's acknowledgement arrives.
//
// The fold of step 4 runs before the append on the live state; if the
// append fails, nothing is acknowledged and the session is marked failed:
// its state is rebuilt from the log before it accepts anything else (or
// by the scheduler a second later), so memory never runs ahead of what is
// durable (reload.go). An append that failed but landed (a replicated
// log's timeout after the write) is published by that rebuild, as step 6
// would have: nobody waits for a turn the log holds. ctx bounds the wait
// for the session; once validation has passed, the write goes through
// whatever ctx does (a caller that gave up can retry with its client
// message id and get the original seq).
//
// # Rooms
//
// Hub has eight fields, each a room with its own state and lock, and the
// package's files are layered so that each uses only those below it
// (bench/shape counts the references that run back up):
//
//   - the sessions (sess.go): a Session's machine and what is derived from
//     it, guarded by its tree's one-slot lock; and what it publishes,
//     readable without the lock;
//   - the registry (registry.go, memory.go, index.go): the live sessions
//     by id, participant and key, the quarantined, the cache of ended
//     sessions, and the index kept in the log;
//   - the scheduler (scheduler.go, fire.go): one heap of next deadlines
//     and one clock timer; the id source (ids.go); the interner
//     (intern.go); the tracing (trace.go); the gate of calls in flight
//     (hub.go);
//   - the consumer (publish.go): the one reader of what the hub publishes.
//
// # What it publishes, and to whom
//
// The hub never imports its feed. It publishes, for whichever Consumer
// Config.Feed makes: each commit (Commit, to Consumer.Committed, under
// the tree's lock, after the session's published state); each session's
// published state (Session's exported methods, read without a lock); a
// Tail beside each session, told every envelope the session folds; and
// answers about its sessions that copy what they return (readers.go).
// Readers never see the registry's maps or take a session's lock
// themselves.
//
// # Concurrency
//
// A tree is owned by whoever holds its one-slot lock; there is no
// goroutine per session, so an idle session costs only its memory. Timers
// share one scheduler. Locks are ordered: a tree's lock, then the
// registry's (index changes), then the consumer's own; the consumer never
// calls the hub while it holds its own.
//
// # Hydrate
//
// New rebuilds every live session by folding its log (no agent is
// called), then re-arms its timers from the folded state; timers that fell
// due while the hub was down fire at once, and those that fired before the
// crash are in the log and do not fire again. A session whose log is
// corrupt or whose type is not served is quarantined and reported; the
// others serve.
package hub
