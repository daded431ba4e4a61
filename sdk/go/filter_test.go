package sdkgo_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// asked records the sessions a session filter was asked about.
type asked struct {
	mu      sync.Mutex
	ids     []string
	changed chan struct{} // a token after each add
}

func (a *asked) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// await waits until the filter was asked about every one of ids, or ctx
// ends, and returns what it was asked about.
func (a *asked) await(ctx context.Context, ids []string) []string {
	for {
		got := a.get()
		if containsAll(got, ids) {
			return got
		}
		select {
		case <-a.changed:
		case <-ctx.Done():
			return got
		}
	}
}

func (a *asked) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ids)
}

// TestServeSessionFilter: an agent serving with WithSessionFilter acts in
// the sessions the filter keeps only. Sessions another client opened with
// it (one inviting it, one where it speaks first, before it serves and
// while it does) get no acknowledgement, no reply and no handler call;
// the filter is asked once per session, with the session's labels.
func TestServeSessionFilter(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob, person := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob"), dial(t, h.Addr(), "person")
	labels := map[string]string{"run": "ours"}

	invited, err := person.OpenWorkflow(ctx, agentsdk.Sequence("person", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	first := openFirst(t, ctx, person, "bob")

	filtered := asked{changed: make(chan struct{}, 1)}
	keep := func(s *agentsdk.Session) bool {
		filtered.add(s.ID())
		return s.GetMeta().GetLabels()["run"] == "ours"
	}
	var handled calls
	serve(t, ctx, []*agentsdk.Client{alice, bob}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(_ context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			handled.add("%s in %s", c.Name(), turn.SessionID)
			return agentsdk.ReplyText("from " + c.Name()), nil
		}
	}, agentsdk.WithSessionFilter(keep))

	later := openFirst(t, ctx, person, "bob")
	ours, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.Invited("bob"), Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	turns, reason := transcript(t, ctx, alice, ours.ID())
	if want := []string{"alice: from alice", "bob: from bob"}; !slices.Equal(turns, want) || reason != "sequence_complete" {
		t.Fatalf("turns %q reason %q", turns, reason)
	}

	// Serve has seen the other sessions once the filter was asked about
	// them.
	foreign := []string{invited.ID(), first.ID(), later.ID()}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	serving := filtered.await(wctx, foreign)
	if !containsAll(serving, foreign) {
		t.Fatalf("the filter was asked about %v, not about every one of %v", serving, foreign)
	}
	for _, id := range append(foreign, ours.ID()) {
		// alice and bob each ask once about theirs, bob alone about the
		// others.
		if n, want := occurrences(serving, id), map[bool]int{true: 2, false: 1}[id == ours.ID()]; n != want {
			t.Errorf("the filter was asked %d times about %s: %v", n, id, serving)
		}
	}
	for _, id := range foreign {
		log, err := person.ReadLog(ctx, id, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			if e.GetFrom() == "bob" {
				t.Errorf("bob acted in %s, a session its filter refused: %s", id, js(t, e))
			}
		}
	}
	if got := handled.get(); !slices.Equal(got, []string{"alice in " + ours.ID(), "bob in " + ours.ID()}) {
		t.Errorf("handler calls %q", got)
	}
	// Left alone, the invite is still open to another client named bob.
	if s, err := person.GetSession(ctx, invited.ID()); err != nil || s.GetState() != agentsdk.StatePending {
		t.Errorf("the refused invite: %v, %v", s.GetState(), err)
	}
}

// openFirst opens, as c, a workflow session in which first, auto-accepted,
// speaks first.
func openFirst(t *testing.T, ctx context.Context, c *agentsdk.Client, first string) *agentsdk.Session {
	t.Helper()
	s, err := c.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence(first, c.Name()), Participants: agentsdk.AutoAccepted(first)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func occurrences(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
