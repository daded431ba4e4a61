package hub

import (
	"context"
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
