package hub

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// A hub in a cluster (Config.Partitioned) serves only some delegation
// trees: those of the partitions its node holds a lease on. It starts
// empty; LoadSessions gives it a partition's sessions (from the log, once
// the lease is held) and UnloadSessions takes them away (the lease is
// lost) at once. A call for a session it does not hold asks Config.Route
// who does, and answers NOT_OWNER with the owner's address.

// NotOwnerError is ErrNotOwner with where the session is served: a call
// for it goes there (the gRPC layer puts Addr into the ErrorInfo metadata
// as "owner_addr").
type NotOwnerError struct {
	Session   string // the session asked about; "" for a subscription
	Partition int    // -1 when unknown
	Node      string // the owner's node id; "" while no node holds it
	Addr      string // the owner's gRPC address; "" while no node holds it
	Why       string // what happened, for the message
}

// Error implements error; it ends with ErrNotOwner's text.
func (e *NotOwnerError) Error() string {
	msg := e.Why
	if msg == "" {
		msg = "session " + e.Session + " is not served here"
	}
	switch {
	case e.Addr != "":
		msg += fmt.Sprintf(": partition %d is served by node %s at %s", e.Partition, e.Node, e.Addr)
	case e.Partition >= 0 && e.Why == "":
		msg += fmt.Sprintf(": partition %d has no owner at the moment; retry shortly", e.Partition)
	}
	return msg + ": " + ErrNotOwner.Error()
}

// Unwrap returns ErrNotOwner.
func (e *NotOwnerError) Unwrap() error { return ErrNotOwner }

// ErrorMetadata is what the gRPC layer puts into the ErrorInfo.
func (e *NotOwnerError) ErrorMetadata() map[string]string {
	md := map[string]string{"owner_addr": e.Addr}
	if e.Node != "" {
		md["owner_node"] = e.Node
	}
	if e.Partition >= 0 {
		md["partition"] = strconv.Itoa(e.Partition)
	}
	return md
}

// A Loader hands LoadSessions the sessions of a partition: meta for each
// session before its records, record for each record of a session in seq
// order (sessions may interleave). Its byte slices are valid during the
// call only. An error from meta or record is returned as is. A session
// whose stored messages the loader finds damaged (a frame that fails its
// checksum, a gap) it reports to broken, with why, and skips its later
// messages: that session is quarantined and the others load. An error
// the loader returns (one it cannot pin on a session) fails the load.
type Loader func(meta func(id [16]byte, meta []byte) error, record func(id [16]byte, seq uint64, data []byte) error,
	broken func(id [16]byte, err error)) error

// routeTimeout bounds Config.Route for one call.
const routeTimeout = 5 * time.Second

// LoadSessions rebuilds the sessions load gives (a partition this node now
// owns) and starts serving them: they are folded with no effects, indexed
// and their timers re-armed from their state, so a firing the previous
// owner wrote is folded, not repeated. A session that does not rebuild
// (its metadata or a record does not decode or fold, or the loader found
// its messages damaged) is quarantined: it answers QUARANTINED and the
// others serve. Sessions already served are left as they are. The agents
// taking part in a loaded session have their subscriptions ended
// (NOT_OWNER): they resubscribe from their cursors and catch up on it. It
// returns how many sessions now serve.
func (h *Hub) LoadSessions(ctx context.Context, load Loader) (int, error) {
	if err := h.gate.enter(); err != nil {
		return 0, err
	}
	defer h.gate.leave()
	all := map[session.ID]*loading{}
	var order []session.ID
	served := func(id session.ID) bool {
		h.reg.mu.RLock()
		defer h.reg.mu.RUnlock()
		_, ok := h.reg.sessions[id]
		return ok
	}
	err := load(func(raw [16]byte, meta []byte) error {
		id := session.ID(raw)
		if _, dup := all[id]; dup || served(id) {
			return nil
		}
		l := &loading{}
		if l.s, l.err = h.start(ctx, meta, id); l.err != nil {
			l.meta = bytes.Clone(meta) // a quarantined session's participants are told why
		}
		all[id] = l
		order = append(order, id)
		return ctx.Err()
	}, func(raw [16]byte, seq uint64, data []byte) error {
		l := all[session.ID(raw)]
		if l != nil && l.err == nil {
			l.err = replay(l.s, seq, data)
		}
		return nil
	}, func(raw [16]byte, why error) {
		id := session.ID(raw)
		if served(id) {
			return
		}
		l := all[id]
		if l == nil { // damaged before its metadata was read
			l = &loading{}
			all[id] = l
			order = append(order, id)
		}
		if l.err == nil {
			l.err = fmt.Errorf("its stored messages are damaged: %w: %w", why, session.ErrCorrupt)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("hub: loading sessions: %w", err)
	}
	// Parents before children: ids are time-ordered.
	slices.SortFunc(order, compareIDs)
	// The agents' subscriptions end in the same critical section as the
	// sessions appear: none of them is handed a loaded session's envelope
	// without the catch-up a new subscription does first.
	why := &NotOwnerError{Partition: -1, Why: "sessions of yours were loaded on this node: resubscribe from your cursors"}
	h.reg.mu.Lock()
	n := h.installLocked(order, all)
	h.feed.Moved(agentsOf(order, all), nil, why)
	h.reg.mu.Unlock()
	for _, id := range order {
		if l := all[id]; l.err == nil && l.s != nil {
			h.sweepFor(l.s.meta) // a session with a retention of its own
		}
	}
	return n, nil
}

// UnloadSessions stops serving, at once, every session whose tree root
// drop names (a partition whose lease this node lost): they leave memory
// and the scheduler, their watches end and so do the subscriptions of the
// agents taking part in them, with why (NOT_OWNER: resubscribe from the
// cursors, on the new owner). The quarantined sessions of those trees are
// forgotten too: a call for one is routed to the new owner. A call
// already holding one of them finishes against the log, which refuses it
// once the partition is disowned. It returns how many sessions it
// dropped.
func (h *Hub) UnloadSessions(drop func(root session.ID) bool, why error) int {
	if why == nil {
		why = ErrNotOwner
	}
	h.reg.mu.Lock()
	var gone []*Session
	for _, s := range h.reg.sessions {
		root, err := session.ParseID(s.call.GetRoot())
		if err != nil || !drop(root) {
			continue
		}
		gone = append(gone, s)
		h.dropResidentLocked(s)
	}
	// The quarantined sessions of those trees are the new owner's to
	// answer for; one whose metadata never decoded is taken as its own
	// root.
	for id := range h.reg.quarantined { //hubd:orderless each is dropped alike
		root := id
		if m := h.reg.quarantinedMeta[id]; m != nil {
			if r, err := session.ParseID(m.GetRootSessionId()); err == nil {
				root = r
			}
		}
		if drop(root) {
			delete(h.reg.quarantined, id)
			delete(h.reg.quarantinedMeta, id)
		}
	}
	h.reg.mu.Unlock()
	agents := map[string]bool{}
	for _, s := range gone {
		for _, p := range s.meta.GetParticipants() {
			agents[p.GetName()] = true
		}
	}
	h.feed.Moved(slices.Sorted(maps.Keys(agents)), gone, why)
	return len(gone)
}

// dropResidentLocked takes session s out of the hub's memory (a
// partitioned hub's: UnloadSessions, a purge); the caller holds reg.mu.
func (h *Hub) dropResidentLocked(s *Session) {
	id := s.id
	s.gone.Store(true)
	delete(h.reg.sessions, id)
	for _, p := range s.meta.GetParticipants() {
		if m := h.reg.byAgent[p.GetName()]; m != nil {
			delete(m, id)
			if len(m) == 0 {
				delete(h.reg.byAgent, p.GetName())
			}
		}
	}
	if k := s.meta.GetOpenKey(); k != "" && h.reg.openKeys[openKey(s.meta.GetCreator(), k)] == id {
		delete(h.reg.openKeys, openKey(s.meta.GetCreator(), k))
	}
	if k := s.meta.GetThreadKey(); k != "" && h.reg.threads[openKey(s.meta.GetCreator(), k)] == s {
		delete(h.reg.threads, openKey(s.meta.GetCreator(), k))
	}
	delete(h.reg.askers, id)
	if !session.State(s.state.Load()).Ended() {
		if h.reg.openCount[s.meta.GetCreator()]--; h.reg.openCount[s.meta.GetCreator()] <= 0 {
			delete(h.reg.openCount, s.meta.GetCreator())
		}
		s.tree.live.Add(-1)
	}
	h.sched.remove(s)
}

// agentsOf returns the participants of the sessions that loaded.
func agentsOf(order []session.ID, all map[session.ID]*loading) []string {
	agents := map[string]bool{}
	for _, id := range order {
		if l := all[id]; l.err == nil && l.s != nil {
			for _, p := range l.s.meta.GetParticipants() {
				agents[p.GetName()] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(agents))
}

// Holds reports whether the hub holds session id in memory: in a cluster,
// whether its partition is served here (a partitioned hub keeps every
// session of its partitions, ended ones too). It takes no session's lock.
func (h *Hub) Holds(id session.ID) bool {
	_, ok := h.live(id)
	return ok
}

// route asks Config.Route about a session this hub does not hold: nil if
// no node serves it (it does not exist), else the error to answer.
func (h *Hub) route(id session.ID) error {
	if h.cfg.Route == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
	defer cancel()
	return h.cfg.Route(ctx, id)
}

// sessionID returns a new session's id: for a root, Config.NewRootID's
// (a cluster node picks one in a partition it serves, the partition of
// key when there is one), else NewID's.
func (h *Hub) sessionID(root bool, key string) (uuid.UUID, error) {
	if root && h.cfg.NewRootID != nil {
		return h.cfg.NewRootID(key)
	}
	return h.newID(), nil
}

// routeKey is the key NewRootID places a root open by: the opens a hub
// looks up together must be served by one node. A thread key links every
// session of the thread (and an idempotent retry of one carries it too);
// else the idempotency key dedupes retries. "" for neither.
func routeKey(creator string, req *hubpb.OpenRequest) string {
	switch {
	case req.GetThreadKey() != "":
		return "thread\x00" + creator + "\x00" + req.GetThreadKey()
	case req.GetIdempotencyKey() != "":
		return "open\x00" + creator + "\x00" + req.GetIdempotencyKey()
	}
	return ""
}
