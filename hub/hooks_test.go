package hub_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
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
			Accepted:      func(env *session.Envelope) { note("accepted:" + string(env.Type)) },
			Rejected:      func(_ session.ID, from string, _ session.EventType, err error) { note("rejected:" + from) },
			Opened:        func(m *session.Meta) { note("opened:" + m.Creator) },
			Closed:        func(_ session.ID, st session.State, reason string) { note("closed:" + st.String() + ":" + reason) },
			TimerFired:    func(_ session.ID, env *session.Envelope) { note("timer:" + string(env.Type)) },
			SessionFailed: func(session.ID, error) { note("failed") },
		}
	})
	ctx := context.Background()
	o, err := e.hub.Open(ctx, "a", hub.OpenRequest{Type: session.Type{Kind: "conversation", Version: 1},
		Participants: []session.Participant{{Name: "b", AutoAccept: true}},
		Expectations: []session.Expectation{{Name: session.MaxSilence, Within: time.Minute, Action: session.ActionAutoClose}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Send(ctx, "c", o.Meta.ID, &session.Envelope{Type: session.EventText, Payload: session.Text{Text: "x"}}); err == nil {
		t.Fatal("a stranger's send was accepted")
	}
	e.log.failNth(1)
	if _, err := e.hub.Send(ctx, "a", o.Meta.ID, &session.Envelope{Type: session.EventText, Payload: session.Text{Text: "x"}}); err == nil {
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
