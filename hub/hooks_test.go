package hub_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestHooks checks every observer hook is called with what happened.
func TestHooks(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	note := func(k string) {
		mu.Lock()
		seen[k]++
		mu.Unlock()
	}
	e := newEnv(t, func(c *hub.Config) {
		c.Hooks = hub.Hooks{
			Accepted:      func(env *hubpb.Envelope) { note("accepted:" + env.GetType()) },
			Rejected:      func(_ session.ID, from, _ string, err error) { note("rejected:" + from) },
			Opened:        func(m *hubpb.SessionMeta) { note("opened:" + m.GetCreator()) },
			Closed:        func(_ session.ID, st session.State, reason string) { note("closed:" + st.String() + ":" + reason) },
			TimerFired:    func(_ session.ID, env *hubpb.Envelope) { note("timer:" + env.GetType()) },
			SessionFailed: func(session.ID, error) { note("failed") },
		}
	})
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b", session.Expect(session.MaxSilence, time.Minute, session.ActionAutoClose))
	if _, err := e.hub.Send(ctx, "c", id, textEnv("x")); err == nil {
		t.Fatal("a stranger's send was accepted")
	}
	e.log.failNth(1)
	if _, err := e.hub.Send(ctx, "a", id, textEnv("x")); err == nil {
		t.Fatal("a failed append was acknowledged")
	}
	e.clock.Advance(time.Minute)
	var got []string
	for k, n := range seen {
		got = append(got, k+"="+string(rune('0'+n)))
	}
	sort.Strings(got)
	want := "accepted:expectation_violated=1 accepted:session_closed=1 accepted:session_invite=1 accepted:session_opened=1 " +
		"closed:CLOSED:expectation_violated:max_silence=1 failed=1 opened:a=1 rejected:a=1 rejected:c=1 " +
		"timer:expectation_violated=1 timer:session_closed=1"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("hooks:\n got %s\nwant %s", g, want)
	}
}
