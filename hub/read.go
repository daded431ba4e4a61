package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Get returns a session's metadata and current state. Only its participants
// (or an operator) may read it.
func (h *Hub) Get(ctx context.Context, agent string, operator bool, id session.ID) (*hubpb.SessionInfo, error) {
	s, err := h.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, err
	}
	return h.info(ctx, s, agent, operator)
}

// info returns s's metadata and state as agent may read them (all of it
// for an operator), taking its lock.
func (h *Hub) info(ctx context.Context, s *sess, agent string, operator bool) (*hubpb.SessionInfo, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	return h.infoLocked(s, agent, operator), nil
}

// infoLocked returns s's metadata and state as agent may read them: the
// context variables it may read (adapters.Summary.MayRead; all of them
// for an operator). The caller holds s's lock.
func (h *Hub) infoLocked(s *sess, agent string, operator bool) *hubpb.SessionInfo {
	sum := s.m.Turns.Summary()
	info := listing(s)
	info.Turn, info.Expected, info.LastRule = int64(sum.Turn), s.m.Expected(), s.m.LastRule
	info.Usage = proto.CloneOf(sum.Usage)
	info.Context = make(map[string]*structpb.Value, len(sum.Context))
	for _, k := range slices.Sorted(maps.Keys(sum.Context)) {
		if !operator && !sum.MayRead(k, agent) {
			continue
		}
		v, err := session.JSONValue(sum.Context[k])
		if err != nil {
			// Context values are canonical JSON folded from checked
			// envelopes: this is a broken invariant.
			panic(fmt.Sprintf("hub: context %q of session %v: %v", k, s.id, err))
		}
		info.Context[k] = v
	}
	if r, ok := s.m.Turns.(adapters.Router); ok {
		active, handoffs, sup := r.Routing()
		info.ActiveAgent, info.Handoffs, info.Supervisor = active, int64(handoffs), sup
	}
	if !s.m.Lifecycle.State.Ended() {
		info.Holds = holdsOf(s.m.Calls.Holds) // an end releases every hold
	}
	info.TreeUsage, info.Responder, info.OpenChildren = treeUsage(s), s.m.Calls.Responder, openChildren(s)
	return info
}

// openChildren returns the ids of s's children that are still pending or
// open. A child's result takes it off Calls.Children, but the children
// that end with s (parent_closed, budget_exceeded) post no result to it:
// they stay there, for its tree usage, and are not open.
func openChildren(s *sess) []string {
	var out []string
	for _, c := range s.m.Calls.Children {
		if k := s.kid(c.ID); k != nil && !session.State(k.state.Load()).Ended() {
			out = append(out, c.ID)
		}
	}
	return out
}

// holdsOf returns the wire form of the machine's holds.
func holdsOf(hs []*adapters.Hold) []*hubpb.Hold {
	var out []*hubpb.Hold
	for _, x := range hs {
		out = append(out, &hubpb.Hold{Holder: x.Holder, Kind: x.Kind, EnvelopeId: x.Envelope, Children: x.Children,
			Await: x.Await, Done: x.Done, QuestionId: x.Question, Answerer: x.Answerer, Since: session.Stamp(x.Since)})
	}
	return out
}

// listing returns what a listing says of s: metadata, state, last seq and
// close reason. It needs no lock.
func listing(s *sess) *hubpb.SessionInfo {
	info := &hubpb.SessionInfo{Meta: s.meta, State: session.State(s.state.Load()).String(), Seq: s.lastSeq.Load()}
	if r := s.reason.Load(); r != nil {
		info.CloseReason = *r
	}
	return info
}

// Snapshot returns a session's whole folded state as deterministic JSON
// (adapters.Machine.MarshalJSON), for audits and for checking that a replay
// of its log gives the live state. Only an operator may read it.
func (h *Hub) Snapshot(ctx context.Context, id session.ID) (json.RawMessage, error) {
	s, err := h.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	return json.Marshal(s.m)
}

func (h *Hub) readable(ctx context.Context, agent string, operator bool, id session.ID) (*sess, error) {
	s, err := h.lookupFor(ctx, id, agent, operator)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(s.meta, agent) {
		return nil, fmt.Errorf("%q is not a participant of session %v and may not read it: %w", agent, id, ErrPermissionDenied)
	}
	return s, nil
}

// TypeOf returns the type of session id ("workflow@1"), for observers: it
// takes no session's lock, so a hook may call it (the metrics label what
// the hooks report with it).
func (h *Hub) TypeOf(id session.ID) (string, bool) {
	h.mu.RLock()
	s, ok := h.sessions[id]
	h.mu.RUnlock()
	if !ok {
		if s, ok = h.cache.peek(id); !ok {
			return "", false
		}
	}
	return s.meta.GetType(), true
}

// CountSessions calls f once for each session type and state the hub
// holds live sessions in (open or pending: ended sessions are in the log,
// not in memory), with how many, in no particular order (for metrics).
// It takes no session's lock.
func (h *Hub) CountSessions(f func(typ string, state session.State, n int)) {
	type key struct {
		typ   string
		state session.State
	}
	counts := map[key]int{}
	h.mu.RLock()
	for _, s := range h.sessions { //hubd:orderless counting
		counts[key{s.meta.GetType(), session.State(s.state.Load())}]++
	}
	h.mu.RUnlock()
	for k, n := range counts { //hubd:orderless the caller does not depend on the order
		f(k.typ, k.state, n)
	}
}

// Filter selects sessions in List. Zero fields match everything.
type Filter struct {
	State session.State
	// Quarantined selects the quarantined sessions only (listed with
	// state QUARANTINED; see Hub.Quarantined): those found damaged so far.
	Quarantined bool
	Creator     string
	Participant string
	Labels      map[string]string // every label must match
	After       session.ID        // page after this id (ids sort by creation)
	Limit       int               // default 100, at most 1000
}

// List returns the sessions matching f that agent may see (those it takes
// part in, or all for an operator), oldest first, and the id to pass as
// After for the next page (zero when there is none). Each has the
// metadata, state, last seq and close reason; Get has the rest. Live
// sessions are listed from memory, ended ones through the index in the
// log (each loaded on demand), so a page costs what it walks, not what
// the log holds.
func (h *Hub) List(ctx context.Context, agent string, operator bool, f Filter) ([]*hubpb.SessionInfo, session.ID, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	if f.Quarantined {
		out, next := h.listQuarantined(agent, operator, f, limit)
		return out, next, nil
	}
	if h.cfg.Partitioned {
		return h.listResident(agent, operator, f, limit)
	}
	var out []*hubpb.SessionInfo
	var next, last session.ID
	add := func(id session.ID, info *hubpb.SessionInfo) error {
		if len(out) == limit {
			next = last
			return errStop
		}
		out, last = append(out, info), id
		return nil
	}
	visit := func(id session.ID, meta func() (*hubpb.SessionMeta, error)) error {
		if qm, ok := h.quarantinedMetaOf(id); ok {
			if f.State == 0 && (operator || session.IsParticipant(qm, agent)) && f.matchesMeta(qm) {
				return add(id, quarantinedInfo(id, qm))
			}
			return nil
		}
		s, ok := h.live(id)
		if !ok {
			m, err := meta()
			if err == nil && (!f.matchesMeta(m) || (f.State != 0 && !f.State.Ended())) {
				return nil
			}
			if s, err = h.loadEnded(ctx, id); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if errors.Is(err, ErrQuarantined) && f.State == 0 {
					// Found damaged by this read: listed as such, to whoever
					// the walk found it for (its metadata may not decode).
					qm, _ := h.quarantinedMetaOf(id)
					if qm == nil && (f.Creator != "" || f.Participant != "" || len(f.Labels) > 0) {
						return nil
					}
					return add(id, quarantinedInfo(id, qm))
				}
				return nil
			}
		}
		if !f.matches(s) {
			return nil
		}
		return add(id, listing(s))
	}
	var err error
	if operator {
		err = h.wal.MetasFrom(ctx, f.After, func(raw [16]byte, b []byte) error {
			return visit(session.ID(raw), func() (*hubpb.SessionMeta, error) { return session.UnmarshalMeta(b) })
		})
	} else {
		err = h.memberOf(ctx, agent, f.After, func(id session.ID) error {
			return visit(id, func() (*hubpb.SessionMeta, error) {
				b, err := h.wal.Meta(ctx, id)
				if err != nil || b == nil {
					return nil, fmt.Errorf("no metadata: %v", err)
				}
				return session.UnmarshalMeta(b)
			})
		})
	}
	if err != nil && !errors.Is(err, errStop) {
		return nil, session.ID{}, fmt.Errorf("listing sessions: %w", err)
	}
	return out, next, nil
}

// listResident is List for a cluster node's hub (Config.Partitioned),
// which keeps every session of its partitions in memory.
func (h *Hub) listResident(agent string, operator bool, f Filter, limit int) ([]*hubpb.SessionInfo, session.ID, error) {
	h.mu.RLock()
	var pool map[session.ID]*sess
	if operator {
		pool = h.sessions
	} else {
		pool = h.byAgent[agent]
	}
	var hits []*sess
	for _, s := range pool { // sorted below
		if s.lastSeq.Load() > 0 && f.matches(s) { // nothing of a session mid-open is written yet
			hits = append(hits, s)
		}
	}
	hits = append(hits, h.quarantinedListed(agent, operator, f)...)
	h.mu.RUnlock()
	slices.SortFunc(hits, func(a, b *sess) int { return compareIDs(a.id, b.id) })
	var out []*hubpb.SessionInfo
	var next session.ID
	for i, s := range hits {
		if len(out) == limit {
			next = hits[i-1].id
			break
		}
		if s.m == nil {
			out = append(out, &hubpb.SessionInfo{Meta: s.meta, State: StateQuarantined})
			continue
		}
		out = append(out, listing(s))
	}
	return out, next, nil
}

// StateQuarantined is the state a listing gives a quarantined session.
const StateQuarantined = "QUARANTINED"

// quarantinedInfo is a listing's line of a quarantined session: its
// stored metadata, or its id alone when that does not decode.
func quarantinedInfo(id session.ID, meta *hubpb.SessionMeta) *hubpb.SessionInfo {
	if meta.GetSessionId() != id.String() {
		meta = &hubpb.SessionMeta{SessionId: id.String()} // none, or one naming another session
	}
	return &hubpb.SessionInfo{Meta: meta, State: StateQuarantined}
}

// listQuarantined is List of the quarantined sessions (Filter.Quarantined):
// those agent may see (an operator all, a participant those whose stored
// metadata names it) that match f's other fields, in id order.
func (h *Hub) listQuarantined(agent string, operator bool, f Filter, limit int) ([]*hubpb.SessionInfo, session.ID) {
	h.mu.RLock()
	var ids []session.ID
	for id := range h.quarantined { //hubd:orderless sorted below
		meta := h.quarantinedMeta[id]
		switch {
		case !f.After.IsZero() && compareIDs(id, f.After) <= 0,
			meta == nil && (!operator || f.Creator != "" || f.Participant != "" || len(f.Labels) > 0),
			meta != nil && (!operator && !session.IsParticipant(meta, agent) || !f.matchesMeta(meta)):
			continue
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	var next session.ID
	if len(ids) > limit {
		ids, next = ids[:limit], ids[limit-1]
	}
	out := make([]*hubpb.SessionInfo, len(ids))
	for i, id := range ids {
		out[i] = quarantinedInfo(id, h.quarantinedMeta[id])
	}
	h.mu.RUnlock()
	return out, next
}

// quarantinedMetaOf returns the stored metadata of a quarantined session
// whose metadata decodes.
func (h *Hub) quarantinedMetaOf(id session.ID) (*hubpb.SessionMeta, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	m, ok := h.quarantinedMeta[id]
	return m, ok
}

// quarantinedListed returns the quarantined sessions (with metadata that
// decodes) agent may see that match f, as stand-ins without a machine
// (mu held). A filter on the state matches none of them.
func (h *Hub) quarantinedListed(agent string, operator bool, f Filter) []*sess {
	var out []*sess
	for id, meta := range h.quarantinedMeta { //hubd:orderless sorted by the caller
		if !operator && !session.IsParticipant(meta, agent) {
			continue
		}
		s := &sess{id: id, meta: meta}
		if f.State == 0 && f.matches(s) {
			out = append(out, s)
		}
	}
	return out
}

// matchesMeta is matches on what the metadata says (not the state).
func (f Filter) matchesMeta(m *hubpb.SessionMeta) bool {
	switch {
	case f.Creator != "" && m.GetCreator() != f.Creator,
		f.Participant != "" && !session.IsParticipant(m, f.Participant):
		return false
	}
	for k, v := range f.Labels { //hubd:orderless all must match
		if got, ok := m.GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (f Filter) matches(s *sess) bool {
	switch {
	case !f.After.IsZero() && compareIDs(s.id, f.After) <= 0,
		f.State != 0 && session.State(s.state.Load()) != f.State,
		f.Creator != "" && s.meta.GetCreator() != f.Creator,
		f.Participant != "" && !session.IsParticipant(s.meta, f.Participant):
		return false
	}
	for k, v := range f.Labels { //hubd:orderless all must match
		if got, ok := s.meta.GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// The caps of one read: a ReadLog answers at most MaxReadItems envelopes
// and, past its first, no more than MaxReadBytes of them (their stored
// size), after reading at most maxReadScan records (those the caller may
// not see count too); it says where the next page begins. A view holds at
// most MaxReadItems items and MaxReadBytes of text: older ones are counted,
// as a window's are.
const (
	MaxReadItems = 1000
	MaxReadBytes = 2 << 20
	maxReadScan  = 16 * MaxReadItems
)

// ReadLog returns up to limit envelopes of a session from seq from (what
// agent may see of them; everything for an operator), within the read
// caps, and the seq to read from next: 0 when the page reached the end of
// the log.
func (h *Hub) ReadLog(ctx context.Context, agent string, operator bool, id session.ID, from uint64, limit int) ([]*hubpb.Envelope, uint64, error) {
	s, err := h.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 || limit > MaxReadItems {
		limit = MaxReadItems
	}
	from = max(from, 1)
	var out []*hubpb.Envelope
	var next uint64
	size, scanned := 0, 0
	err = h.wal.Scan(ctx, id, from, func(seq uint64, data []byte) error {
		if len(out) == limit || scanned == maxReadScan || (len(out) > 0 && size+len(data) > MaxReadBytes) {
			next = seq
			return errStop
		}
		scanned++
		e, err := s.decode(data)
		if err != nil {
			return err
		}
		if operator || session.Visible(e, agent) {
			out = append(out, e)
			size += len(data)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, 0, fmt.Errorf("reading session %v from seq %d: %w", id, from, err)
	}
	return out, next, nil
}
