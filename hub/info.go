package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// info returns s's metadata and state as agent may read them (all of it
// for an operator), taking its lock.
func (h *Hub) info(ctx context.Context, s *Session, agent string, operator bool) (*hubpb.SessionInfo, error) {
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
func (h *Hub) infoLocked(s *Session, agent string, operator bool) *hubpb.SessionInfo {
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
func openChildren(s *Session) []string {
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
func listing(s *Session) *hubpb.SessionInfo {
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

// TypeOf returns the type of session id ("workflow@1"), for observers: it
// takes no session's lock, so a hook may call it (the metrics label what
// the hooks report with it).
func (h *Hub) TypeOf(id session.ID) (string, bool) {
	h.reg.mu.RLock()
	s, ok := h.reg.sessions[id]
	h.reg.mu.RUnlock()
	if !ok {
		if s, ok = h.reg.cache.peek(id); !ok {
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
	h.reg.mu.RLock()
	for _, s := range h.reg.sessions { //hubd:orderless counting
		counts[key{s.meta.GetType(), session.State(s.state.Load())}]++
	}
	h.reg.mu.RUnlock()
	for k, n := range counts { //hubd:orderless the caller does not depend on the order
		f(k.typ, k.state, n)
	}
}
