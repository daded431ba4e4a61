package hub

import (
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
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
	// Closed ends every subscription and watch: the hub has stopped
	// (in-flight changes are finished; nothing is committed after).
	Closed()
}

// Tail is what a consumer keeps beside one session (the feed: the tail of
// its view items), built by folding the session's envelopes.
type Tail interface {
	// Add folds the session's next envelope.
	Add(e *hubpb.Envelope)
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

// Turn is a session's current turn: the envelope that began it and who is
// expected to speak.
type Turn struct {
	Trigger  *hubpb.Envelope
	Expected []string
}

// ID returns the session's id.
func (s *Session) ID() session.ID { return s.id }

// Meta returns the session's metadata; it never changes and must not be
// changed.
func (s *Session) Meta() *hubpb.SessionMeta { return s.meta }

// Call returns the session's place in its call tree, as stamped on its
// envelopes; it never changes and must not be changed.
func (s *Session) Call() *hubpb.Call { return s.call }

// Root returns the id of the root of the session's tree.
func (s *Session) Root() session.ID { return s.tree.root }

// Parent returns the session's parent as this hub serves it: nil for a
// root, or for a child whose parent this hub does not hold with it (one
// loaded from the log after it ended). It never changes once the session
// is served.
func (s *Session) Parent() *Session { return s.parent }

// State returns the session's lifecycle state as of its last commit. Read
// before LastSeq, an ended state comes with the seq of the end.
func (s *Session) State() session.State { return session.State(s.state.Load()) }

// LastSeq returns the seq of the session's last commit (0 while its open
// is being written).
func (s *Session) LastSeq() uint64 { return s.lastSeq.Load() }

// Listing returns what a listing says of the session: metadata, state,
// last seq and close reason.
func (s *Session) Listing() *hubpb.SessionInfo { return listing(s) }

// Turn returns the session's current turn as of its last commit, nil
// when nobody is expected to speak.
func (s *Session) Turn() *Turn { return s.turn.Load() }

// Questions returns the session's pending questions for answerer ("":
// all), as of its last commit.
func (s *Session) Questions(answerer string) []*hubpb.PendingQuestion {
	p := s.questions.Load()
	if p == nil {
		return nil
	}
	var out []*hubpb.PendingQuestion
	for _, q := range *p {
		if answerer == "" || q.GetEnvelope().GetQuestion().GetAnswerer() == answerer {
			out = append(out, q)
		}
	}
	return out
}

// Tail returns the consumer's tail beside the session (nil without one).
// A session reloaded from its log after a failed write gets a new one.
func (s *Session) Tail() Tail {
	t, _ := s.tail.Load().(Tail)
	return t
}

// Decode reads one of the session's stored envelopes (a record of the
// log), with its call stamped.
func (s *Session) Decode(data []byte) (*hubpb.Envelope, error) { return s.decode(data) }
