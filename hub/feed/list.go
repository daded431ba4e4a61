package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Filter selects sessions in List. Zero fields match everything.
type Filter struct {
	State session.State
	// Quarantined selects the quarantined sessions only (listed with
	// state QUARANTINED; see hub.Hub.Quarantined): those found damaged so
	// far.
	Quarantined bool
	Creator     string
	Participant string
	Labels      map[string]string // every label must match
	After       session.ID        // page after this id (ids sort by creation)
	Limit       int               // default 100, at most 1000
}

// StateQuarantined is the state a listing gives a quarantined session.
const StateQuarantined = "QUARANTINED"

// List returns the sessions matching flt that agent may see (those it
// takes part in, or all for an operator), oldest first, and the id to pass
// as After for the next page (zero when there is none). Each has the
// metadata, state, last seq and close reason; Get has the rest. Live
// sessions are listed from memory, ended ones through the index in the
// log (each loaded on demand), so a page costs what it walks, not what
// the log holds.
func (f *Feed) List(ctx context.Context, agent string, operator bool, flt Filter) ([]*hubpb.SessionInfo, session.ID, error) {
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	if flt.Quarantined {
		out, next := f.listQuarantined(agent, operator, flt, limit)
		return out, next, nil
	}
	if f.h.Partitioned() {
		out, next := f.listResident(agent, operator, flt, limit)
		return out, next, nil
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
		info, err := f.listed(ctx, agent, operator, flt, id, meta)
		if info == nil || err != nil {
			return err
		}
		return add(id, info)
	}
	log := f.h.Log()
	var err error
	if operator {
		err = log.MetasFrom(ctx, flt.After, func(raw [16]byte, b []byte) error {
			return visit(session.ID(raw), func() (*hubpb.SessionMeta, error) { return session.UnmarshalMeta(b) })
		})
	} else {
		err = f.h.MemberOf(ctx, agent, flt.After, func(id session.ID) error {
			return visit(id, func() (*hubpb.SessionMeta, error) {
				b, err := log.Meta(ctx, id)
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

// listed returns the listing's line of session id if it matches flt and
// agent may see it (nil otherwise); meta reads its stored metadata.
func (f *Feed) listed(ctx context.Context, agent string, operator bool, flt Filter, id session.ID,
	meta func() (*hubpb.SessionMeta, error)) (*hubpb.SessionInfo, error) {
	if qm, ok := f.h.Quarantine(id); ok && qm != nil {
		if flt.State == 0 && (operator || session.IsParticipant(qm, agent)) && flt.matchesMeta(qm) {
			return quarantinedInfo(id, qm), nil
		}
		return nil, nil
	}
	s, ok := f.h.Live(id)
	if !ok {
		m, err := meta()
		if err == nil && (!flt.matchesMeta(m) || (flt.State != 0 && !flt.State.Ended())) {
			return nil, nil
		}
		if s, err = f.h.Ended(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, hub.ErrQuarantined) && flt.State == 0 {
				// Found damaged by this read: listed as such, to whoever
				// the walk found it for (its metadata may not decode).
				qm, _ := f.h.Quarantine(id)
				if qm == nil && (flt.Creator != "" || flt.Participant != "" || len(flt.Labels) > 0) {
					return nil, nil
				}
				return quarantinedInfo(id, qm), nil
			}
			return nil, nil
		}
	}
	if !flt.matches(s.ID(), s.State(), s.Meta()) {
		return nil, nil
	}
	return s.Listing(), nil
}

// listResident is List for a cluster node's hub (hub.Config.Partitioned),
// which keeps every session of its partitions in memory.
func (f *Feed) listResident(agent string, operator bool, flt Filter, limit int) ([]*hubpb.SessionInfo, session.ID) {
	type hit struct {
		id   session.ID
		s    *hub.Session // nil for a quarantined one
		meta *hubpb.SessionMeta
	}
	who := agent
	if operator {
		who = ""
	}
	var hits []hit
	for _, s := range f.h.Sessions(who) {
		if s.LastSeq() > 0 && flt.matches(s.ID(), s.State(), s.Meta()) { // nothing of a session mid-open is written yet
			hits = append(hits, hit{s.ID(), s, s.Meta()})
		}
	}
	if flt.State == 0 { // a filter on the state matches no quarantined session
		for id, meta := range f.h.QuarantinedMetas() { //hubd:orderless sorted below
			if (operator || session.IsParticipant(meta, agent)) && flt.matches(id, 0, meta) {
				hits = append(hits, hit{id, nil, meta})
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return compareIDs(a.id, b.id) })
	var out []*hubpb.SessionInfo
	var next session.ID
	for i, x := range hits {
		if len(out) == limit {
			next = hits[i-1].id
			break
		}
		if x.s == nil {
			out = append(out, &hubpb.SessionInfo{Meta: x.meta, State: StateQuarantined})
			continue
		}
		out = append(out, x.s.Listing())
	}
	return out, next
}

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
// metadata names it) that match flt's other fields, in id order.
func (f *Feed) listQuarantined(agent string, operator bool, flt Filter, limit int) ([]*hubpb.SessionInfo, session.ID) {
	metas := f.h.QuarantinedMetas()
	var ids []session.ID
	for id := range f.h.Quarantined() { //hubd:orderless sorted below
		meta := metas[id]
		switch {
		case !flt.After.IsZero() && compareIDs(id, flt.After) <= 0,
			meta == nil && (!operator || flt.Creator != "" || flt.Participant != "" || len(flt.Labels) > 0),
			meta != nil && (!operator && !session.IsParticipant(meta, agent) || !flt.matchesMeta(meta)):
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
		out[i] = quarantinedInfo(id, metas[id])
	}
	return out, next
}

// matchesMeta is matches on what the metadata says (not the state).
func (flt Filter) matchesMeta(m *hubpb.SessionMeta) bool {
	switch {
	case flt.Creator != "" && m.GetCreator() != flt.Creator,
		flt.Participant != "" && !session.IsParticipant(m, flt.Participant):
		return false
	}
	for k, v := range flt.Labels { //hubd:orderless all must match
		if got, ok := m.GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// matches reports whether the session with id, state and metadata m is
// one flt selects (past After).
func (flt Filter) matches(id session.ID, state session.State, m *hubpb.SessionMeta) bool {
	switch {
	case !flt.After.IsZero() && compareIDs(id, flt.After) <= 0,
		flt.State != 0 && state != flt.State:
		return false
	}
	return flt.matchesMeta(m)
}
