// Package feed is the hub's read side: it delivers each commit of a hub to
// the subscriptions and watches that may see it, keeps what views need,
// and answers every read of the hub's sessions (views, the log, listings,
// pending turns and questions, a session's state, tree and deadlines).
//
// # What it owns
//
// The subscriptions (an agent's: Subscribe; a session's or a tree's:
// Watch), their bounded queues, the streams each agent holds
// (MaxStreamsPerAgent, TakeStream) and the bytes they hold unread
// (SubscriberBufferBytes, AgentBufferBytes, TotalBufferBytes); and beside
// every session, its view cache (the tail of its view items and who may
// see how many of each speaker's), which makes a view, and so a turn
// notice carrying one, cost a copy rather than a read of the log.
//
// # What it reads, and may not touch
//
// The feed owns no write state: it never changes a session, writes to the
// log or takes a session's lock, and it cannot see the hub's indexes. It
// is the hub's hub.Consumer (hub.Config.Feed; Open wires the two) and
// learns of sessions only through what package hub publishes:
//
//   - each commit (hub.Commit), handed to Committed under the tree's lock
//     once it is durable: a session's envelopes arrive in seq order, and
//     delivering them only appends to bounded queues, never waits;
//   - each session's published state (hub.Session: its metadata and call,
//     and its state, last seq, turn and pending questions as of its last
//     commit), read without a lock;
//   - the hub's answers (Lookup, Sessions, MemberOf, Children, Info,
//     Tree, Timers, ...), which copy what they return, and the log
//     (hub.Hub.Log), read only;
//   - the Tail beside each session (its view cache), which the hub folds
//     every envelope into, from the log at load or at commit.
//
// The hub imports nothing of the feed (arch_test.go holds both arrows), so
// a change to delivery, views or listings is made here, against those
// published types, without holding the write side in one's head.
//
// # Ordering
//
// A subscription (or a watch) is registered for deliveries before it reads
// what its sessions published: a commit published earlier is in what it
// reads and is caught up on from the log; one published later is
// delivered live as well, and Subscription.filter hands each seq out once.
// The hub publishes a session's state before it hands the commit to
// Committed, and its last seq before its state, so an ended state always
// comes with the end's seq.
//
// Lock order: the hub's index lock, then the feed's (a partition load ends
// subscriptions as its sessions appear: Moved), then a subscription's. The
// feed never calls the hub while holding its own lock.
package feed
