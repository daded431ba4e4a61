package metrics

import (
	"context"
	"sync"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// typeIndex says a session's type for the labels of the hooks, which are
// given session ids only. A hub with TypeOf answers directly; otherwise
// the index keeps the type of every session it was told of: those listed
// when the metrics are attached (hydrated ones) and those opened since
// (the Opened hook, which comes after the hook of the session's first
// envelopes: those wait for it). A session it does not know is labelled
// "unknown".
type typeIndex struct {
	mu      sync.RWMutex
	direct  typedHub
	byID    map[session.ID]string
	names   map[string]string // one copy of each type name
	waiting map[session.ID]*waiting
}

// waiting counts the envelopes of a session written before its type was
// known.
type waiting struct{ all, agents int }

// maxWaiting bounds the sessions whose envelopes wait for their type; past
// it they are counted as "unknown" at once.
const maxWaiting = 4096

func (x *typeIndex) init() {
	x.byID, x.names, x.waiting = map[session.ID]string{}, map[string]string{}, map[session.ID]*waiting{}
}

// wait keeps an envelope of a session whose type is not known yet, to be
// counted when it is (release); false when it cannot wait.
func (x *typeIndex) wait(id session.ID, agent bool) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byID == nil {
		return false
	}
	w := x.waiting[id]
	if w == nil {
		if len(x.waiting) >= maxWaiting {
			return false
		}
		w = &waiting{}
		x.waiting[id] = w
	}
	w.all++
	if agent {
		w.agents++
	}
	return true
}

// release returns and forgets the counts of a session's waiting envelopes.
func (x *typeIndex) release(id session.ID) (all, agents int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if w := x.waiting[id]; w != nil {
		delete(x.waiting, id)
		return w.all, w.agents
	}
	return 0, 0
}

// add records a session's type (unless the hub answers directly).
func (x *typeIndex) add(id session.ID, typ string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byID == nil {
		return
	}
	name, ok := x.names[typ]
	if !ok {
		name = typ
		x.names[typ] = typ
	}
	x.byID[id] = name
}

// get returns a session's type, or "".
func (x *typeIndex) get(id session.ID) string {
	x.mu.RLock()
	direct, typ := x.direct, x.byID[id]
	x.mu.RUnlock()
	if direct != nil {
		typ, _ = direct.TypeOf(id)
	}
	return typ
}

// use makes the index ask the hub and forget what it kept.
func (x *typeIndex) use(h typedHub) {
	x.mu.Lock()
	x.direct, x.byID, x.names, x.waiting = h, nil, nil, nil
	x.mu.Unlock()
}

// fill indexes every session of h.
func (x *typeIndex) fill(h Hub) {
	eachSession(h, func(id session.ID, typ string, _ session.State) { x.add(id, typ) })
}

// eachSession calls f for every session of h, by pages of listings.
func eachSession(h Hub, f func(id session.ID, typ string, state session.State)) {
	var after session.ID
	for {
		infos, next, err := h.List(context.Background(), "", true, feed.Filter{After: after, Limit: 1000})
		if err != nil {
			return
		}
		for _, info := range infos {
			id, err := session.ParseID(info.GetMeta().GetSessionId())
			if err != nil {
				continue
			}
			st, _ := session.ParseState(info.GetState())
			f(id, info.GetMeta().GetType(), st)
		}
		if next.IsZero() {
			return
		}
		after = next
	}
}
