package hub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// delegationFlow is a delegation's life, step by step: a blocking
// delegation of two children (one opens at once, one waits for its
// invitee), a background one of a child, then the children's turns and
// ends, each of which posts a result to the parent. With retry, each step
// is retried once after a failure (with the same client message id: a
// retry of a delegation whose answer was lost must answer as a
// duplicate).
func delegationFlow(ctx context.Context, h *served, parent session.ID, retry bool) []error {
	var errs []error
	try := func(what string, f func() error) {
		err := f()
		if err != nil && retry {
			err = f()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	var blocking, background []string
	try("delegate", func() error {
		r, err := h.Delegate(ctx, "a", &hubpb.DelegateRequest{SessionId: parent.String(), ClientMsgId: "d1",
			Children: []*hubpb.OpenRequest{
				{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}, Task: "sum it up"},
				{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "d"}}},
			}})
		if err == nil {
			blocking = nil
			for _, k := range r.GetChildren() {
				blocking = append(blocking, k.GetMeta().GetSessionId())
			}
		}
		return err
	})
	if len(blocking) != 2 {
		return errs
	}
	try("accept", func() error { _, err := h.AckInvite(ctx, "d", session.MustParseID(blocking[1])); return err })
	try("child turn", func() error {
		_, err := h.Send(ctx, "c", session.MustParseID(blocking[0]), textEnv("done"))
		return err
	})
	for _, id := range blocking {
		try("child close", func() error {
			_, err := h.CloseSession(ctx, "a", false, session.MustParseID(id), "finished")
			if errors.Is(err, session.ErrClosed) {
				return nil
			}
			return err
		})
	}
	try("background", func() error {
		r, err := h.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1", ParentSessionId: parent.String(), IdempotencyKey: "bg1",
			Participants: []*hubpb.Participant{{Name: "e", AutoAccept: true}}})
		if err == nil {
			background = []string{r.GetSession().GetMeta().GetSessionId()}
		}
		return err
	})
	for _, id := range background {
		try("background close", func() error {
			_, err := h.CloseSession(ctx, "a", false, session.MustParseID(id), "finished")
			if errors.Is(err, session.ErrClosed) {
				return nil
			}
			return err
		})
	}
	return errs
}

// checkChildren checks that every session the hub lists with a parent is
// named by a delegation record in its parent's log, serves (not
// quarantined) and, once ended, has its result in the parent.
func checkChildren(t *testing.T, h *served, parent session.ID, when string) {
	t.Helper()
	ctx := context.Background()
	es, _, err := h.ReadLog(ctx, "", true, parent, 1, 1000)
	if err != nil {
		t.Fatalf("%s: reading the parent: %v", when, err)
	}
	delegated, results := map[string]int{}, map[string]int{}
	for _, e := range es {
		for _, id := range e.GetDelegation().GetChildSessionIds() {
			delegated[id]++
		}
		if r := e.GetDelegationResult(); r != nil {
			results[r.GetChildSessionId()]++
		}
	}
	list, _, err := h.List(ctx, "operator", true, feed.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, info := range list {
		id := info.GetMeta().GetSessionId()
		if info.GetMeta().GetParentSessionId() == "" {
			continue
		}
		kids = append(kids, id)
		if info.GetState() == feed.StateQuarantined {
			t.Errorf("%s: child %s is quarantined", when, id)
		}
		if delegated[id] != 1 {
			t.Errorf("%s: child %s (%s) exists, and %d delegation records of the parent name it", when, id, info.GetState(), delegated[id])
		}
		got, err := h.Get(ctx, "operator", true, session.MustParseID(id)) // reloads what a failed append left
		if err != nil {
			t.Errorf("%s: child %s does not serve: %v", when, id, err)
			continue
		}
		ended := got.GetState() == "CLOSED" || got.GetState() == "EXPIRED"
		if ended != (results[id] == 1) || results[id] > 1 {
			t.Errorf("%s: child %s is %s, and the parent holds %d results of it", when, id, got.GetState(), results[id])
		}
	}
	for id := range delegated { //hubd:orderless checks
		if !slices.Contains(kids, id) {
			t.Errorf("%s: the parent's delegation names %s, which the hub does not list", when, id)
		}
	}
	if q := h.Quarantined(); len(q) > 0 {
		t.Errorf("%s: quarantined: %v", when, q)
	}
}

// TestDelegationAtomicUnderFaults: a child's open and the delegation
// record that names it are one write or neither. The flow of a delegation
// is run with its nth append failing (nothing written), and again with it
// landing but reported failed (a replicated log's timeout after the
// write), for every append of the flow, with and without the caller's
// retries: no child ever exists without the record, before and after a
// restart, and none is quarantined.
func TestDelegationAtomicUnderFaults(t *testing.T) {
	ctx := context.Background()
	counted := newEnv(t, nil)
	parent := openConversation(t, counted.hub, "a", "b")
	before := appendsOf(counted)
	if errs := delegationFlow(ctx, counted.hub, parent, true); len(errs) > 0 {
		t.Fatalf("the flow without faults: %v", errs)
	}
	checkChildren(t, counted.hub, parent, "without faults")
	n := appendsOf(counted) - before
	if n < 7 {
		t.Fatalf("the flow made %d appends", n)
	}
	for _, c := range []struct {
		mode  string
		retry bool
	}{{"fail", true}, {"lose", true}, {"fail", false}, {"lose", false}} {
		mode := c.mode
		if !c.retry {
			mode += "-once"
		}
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%s-%d", mode, i), func(t *testing.T) {
				e := newEnv(t, nil)
				parent := openConversation(t, e.hub, "a", "b")
				if c.mode == "fail" {
					e.log.failNth(i)
				} else {
					e.log.loseNth(i)
				}
				errs := delegationFlow(ctx, e.hub, parent, c.retry)
				if len(errs) > 0 {
					t.Logf("flow: %v", errs)
				}
				checkChildren(t, e.hub, parent, "live")
				e.restart()
				checkChildren(t, e.hub, parent, "after a restart")
				if strings.Contains(fmt.Sprint(errs), "QUARANTINED") {
					t.Errorf("a step was answered QUARANTINED: %v", errs)
				}
			})
		}
	}
}

// appendsOf is how many appends e's log was asked for.
func appendsOf(e *env) int {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	return e.log.appends
}

// TestOpenLostAnswer: an open whose append landed but was reported failed
// serves once retried with its idempotency key (answered as existing),
// and one whose append failed opens anew on the retry; neither is ever
// quarantined, before or after a restart.
func TestOpenLostAnswer(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"fail", "lose"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, nil)
			req := &hubpb.OpenRequest{Type: "conversation@1", IdempotencyKey: "k1",
				Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}}
			if mode == "fail" {
				e.log.failNth(1)
			} else {
				e.log.loseNth(1)
			}
			if _, err := e.hub.Open(ctx, "a", req); !errors.Is(err, hub.ErrSessionFailed) {
				t.Fatalf("open with a failed append: %v", err)
			}
			o, err := e.hub.Open(ctx, "a", req)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if o.GetExisting() != (mode == "lose") || o.GetSession().GetState() != "OPEN" {
				t.Errorf("retry answered existing %v, state %s", o.GetExisting(), o.GetSession().GetState())
			}
			id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
			for _, when := range []string{"live", "after a restart"} {
				if when != "live" {
					e.restart()
				}
				if _, err := e.hub.Send(ctx, "a", id, textEnv("hello")); err != nil {
					t.Errorf("%s: send: %v", when, err)
				}
				list, _, err := e.hub.List(ctx, "a", false, feed.Filter{})
				if err != nil || len(list) != 1 || list[0].GetState() != "OPEN" {
					t.Errorf("%s: a lists %v (%v), want the one session open", when, list, err)
				}
				if q := e.hub.Quarantined(); len(q) > 0 {
					t.Errorf("%s: quarantined: %v", when, q)
				}
			}
		})
	}
}

// TestOpenLostAnswerUntouched: an open whose append failed is settled by
// the hub itself a second later when nobody retries it: served (its
// invitee told) when it landed, forgotten when it did not.
func TestOpenLostAnswerUntouched(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"fail", "lose"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, nil)
			sub, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if mode == "fail" {
				e.log.failNth(1)
			} else {
				e.log.loseNth(1)
			}
			if _, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1",
				Participants: []*hubpb.Participant{{Name: "b"}}}); !errors.Is(err, hub.ErrSessionFailed) {
				t.Fatalf("open with a failed append: %v", err)
			}
			e.clock.Advance(time.Second)
			live, _ := e.hub.Resident()
			if want := map[string]int{"fail": 0, "lose": 1}[mode]; live != want {
				t.Errorf("%d sessions live a second later, want %d", live, want)
			}
			if mode == "lose" {
				d, err := sub.Next(ctx)
				if err != nil || d.GetEnvelope().GetType() != session.EventInvite {
					t.Errorf("the invitee was told %v (%v), want the invite", d, err)
				}
			}
		})
	}
}
