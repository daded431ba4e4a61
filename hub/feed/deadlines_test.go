package feed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/session"
)

// TestDeadlines: a session's pending timers, earliest first, move with its
// turns, are for its participants and operators, and are gone once it
// ends.
func TestDeadlines(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "alice", "bob",
		session.Expect(session.MaxSilence, time.Hour, session.ActionAutoClose),
		session.Expect(session.TurnWithin, time.Minute, session.ActionWarn))
	got, err := e.hub.Deadlines(ctx, "bob", false, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != session.TurnWithin || got[0].Action != session.ActionWarn || !got[0].At.Equal(epoch.Add(time.Minute)) ||
		got[1].Name != session.MaxSilence || got[1].Action != session.ActionAutoClose || !got[1].At.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("deadlines %+v", got)
	}
	e.clock.Advance(30 * time.Second)
	if _, err := e.hub.Send(ctx, "alice", id, textEnv("hi")); err != nil {
		t.Fatal(err)
	}
	got, err = e.hub.Deadlines(ctx, "ops", true, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].At.Equal(epoch.Add(90*time.Second)) || !got[0].Since.Equal(epoch.Add(30*time.Second)) || len(got[0].Violators) != 1 || got[0].Violators[0] != "bob" {
		t.Errorf("after a turn: %+v", got)
	}
	if _, err := e.hub.Deadlines(ctx, "mallory", false, id); !errors.Is(err, hub.ErrPermissionDenied) {
		t.Errorf("mallory: %v", err)
	}
	if _, err := e.hub.CloseSession(ctx, "alice", false, id, "done"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.hub.Deadlines(ctx, "alice", false, id); err != nil || len(got) != 0 {
		t.Errorf("after the close: %+v, %v", got, err)
	}
}
