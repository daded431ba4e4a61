// Package hub is hubd's engine: it owns every session's state, serialises
// each session's sends, writes them to the write-ahead log, runs the
// expectation timers, delivers envelopes to subscribers, and rebuilds every
// session from the log when it starts.
//
// # The send path
//
// Every change to a session, whether an agent's send, an invite ack, a close
// or a timer's firing, takes the same path, in this order, while holding
// the session (one at a time per session; other sessions proceed in
// parallel):
//
//  1. identify: the sender is the caller's authenticated agent, never a
//     field of the payload; an idempotent retry (same sender, same client
//     message id) is answered with its original seq and writes nothing;
//  2. validate: the lifecycle allows it, the sender is a participant, the
//     shape is right, the size is within the limit, the adapter accepts it;
//     a rejection writes nothing;
//  3. stamp: seq = last + 1, a time-ordered id, the hub's clock;
//  4. fold: the adapter machine applies it and decides what follows (a
//     close, the open after the last ack), each follow-up stamped too;
//  5. append: the envelope and its follow-ups are written to the log in one
//     atomic, durable write. This is the commit point: a close is never
//     logged apart from the envelope that caused it;
//  6. deliver: subscribers' queues get what they may see, in seq order,
//     and the expected next speaker is told it is its turn, with the
//     envelope that triggered it (queuing never waits for a subscriber);
//  7. acknowledge: the caller gets the seq and time.
//
// Nobody hears of an envelope before it is durable; the next speaker may
// hear of it before the sender's acknowledgement arrives.
//
// The fold of step 4 runs before the append on the live state; if the
// append fails, nothing is acknowledged and the session is marked failed:
// its state is rebuilt from the log before it accepts anything else (or
// by the scheduler a second later), so memory never runs ahead of what is
// durable. An append that failed but landed (a replicated log's timeout
// after the write) is delivered by that rebuild, as step 6 would have:
// nobody waits for a turn the log holds. ctx bounds the wait for the
// session; once validation has passed, the write goes through whatever ctx
// does (a caller that gave up can retry with its client message id and get
// the original seq).
//
// # Concurrency
//
// A session is owned by whoever holds its one-slot lock; there is no
// goroutine per session, so an idle session costs only its memory. Timers
// share one scheduler (a heap of next deadlines and one clock timer).
// Subscribers pull their deliveries; a sender only appends to their bounded
// queues and never waits for them.
//
// # Hydrate
//
// New rebuilds every session by folding its log (no agent is called), then
// re-arms its timers from the folded state; timers that fell due while the
// hub was down fire at once, and those that fired before the crash are in
// the log and do not fire again. A session whose log is corrupt or whose
// type is not served is quarantined and reported; the others serve.
package hub
