package hub

import (
	"github.com/hubd/hubd/hubpb"
)

// What the write side publishes. The hub owns every session's state and
// changes it under the session's tree lock; a reader of the hub (its feed,
// package hub/feed: subscriptions, delivery, views, reads and listings)
// never takes that lock and never sees the hub's indexes. It reads:
//
//   - each commit, as a Commit handed to its Consumer in the order the
//     log took them (per tree), once the write is durable and the
//     sessions' published state (below) is up to date;
//   - each session's published state (Session's methods): its metadata
//     and place in its tree, which never change, and its state, last seq,
//     turn and pending questions as of its last commit;
//   - a Tail of its own beside each session, told every envelope the
//     session folds, from the log at load or at commit;
//   - the log itself (Hub.Log), and the hub's answers about its sessions
//     (Hub.Lookup, Hub.Info, ...), which copy what they return.

// Consumer reads what the hub publishes: the hub's feed. The hub calls it
// from the goroutine of the write or the load, so none of its methods may
// block (a slow reader is the consumer's to cut off).
type Consumer interface {
	// Tail returns what the consumer keeps beside a session built from
	// meta (nil: nothing). The hub tells it every envelope the session
	// folds, in seq order, while it holds the session's lock.
	Tail(meta *hubpb.SessionMeta) Tail
	// Committed takes one durable write, while the hub holds its tree's
	// lock: a tree's commits arrive one at a time, in the log's order.
	// The sessions' published state already includes it.
	Committed(c *Commit)
	// Moved ends, with why, the subscriptions of agents and the watches
	// of the sessions gone (and of their trees): a cluster node loaded
	// sessions of theirs, or gave its partition away. A load calls it
	// with the hub's index locked, as the sessions appear, so a
	// subscription made afterwards is the one that catches up on them.
	Moved(agents []string, gone []*Session, why error)
	// Delta takes a delta of session s the hub accepted (stamped, never
	// logged), while the hub holds its tree's lock: it comes between the
	// commits of its session in the order the hub took them. It must not
	// block.
	Delta(s *Session, d *hubpb.Delta)
	// Closed ends every subscription and watch: the hub has stopped
	// (in-flight changes are finished; nothing is committed after).
	Closed()
}

// Commit is one durable write as the hub publishes it: the envelopes of
// each session of one tree the write touched, session by session in the
// order it applied them.
type Commit struct {
	Parts []Part
}

// Part is one session's share of a commit.
type Part struct {
	Session *Session
	// Envelopes are what the log took for it, in seq order, each with its
	// call stamped. Every reader shares them: never change one.
	Envelopes []*hubpb.Envelope
	// Turn is the turn the part began (its trigger is one of Envelopes),
	// with who is expected now; nil when it began none or nobody may
	// speak.
	Turn *Turn
}

// noConsumer is the consumer of a hub without a feed: it keeps nothing
// and delivers nothing.
type noConsumer struct{}

func (noConsumer) Tail(*hubpb.SessionMeta) Tail { return nil }

func (noConsumer) Committed(*Commit) {}

func (noConsumer) Moved([]string, []*Session, error) {}

func (noConsumer) Closed() {}

func (noConsumer) Delta(*Session, *hubpb.Delta) {}
