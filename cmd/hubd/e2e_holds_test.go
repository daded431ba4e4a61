package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestE2EHeldTurnOutlivesTurnWithin runs the real binary with two
// sequence(alice, bob) sessions under turn_within 2s auto_close: in one
// alice asks a person a question, in the other she delegates, blocking, to
// a child. Both holds last longer than turn_within; the answer (given with
// hubd questions answer) and the child's result release them, each session
// stays open, and its next turns work: a held turn is not a stalled turn.
func TestE2EHeldTurnOutlivesTurnWithin(t *testing.T) {
	const within, hold = 2 * time.Second, 2500 * time.Millisecond
	d := startDaemon(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, bob, research := dialAs(t, d.addr, "alice"), dialAs(t, d.addr, "bob"), dialAs(t, d.addr, "research")
	open := func() string {
		s, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"),
			Participants: agentsdk.AutoAccepted("bob"),
			Expectations: []*hubpb.Expectation{agentsdk.Expect("turn_within", within, "auto_close")}})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID()
	}
	asked, delegated := open(), open()
	q := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "Ship it?", Answerer: "person", Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}}}}}
	if _, err := alice.Send(ctx, asked, q); err != nil {
		t.Fatal(err)
	}
	tasks, err := alice.Delegate(ctx, delegated, agentsdk.DelegateOptions{Children: []agentsdk.OpenOptions{{
		Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("research"), Task: "look it up"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The binary's clock is the real one: for the holds to outlast
	// turn_within by the hub's own clock, real time must pass. One bounded
	// wait; the log's timestamps below check that it did.
	<-time.After(hold)
	if code, out, errs := hubd(t, "questions", "answer", "q1", "yes", "--as", "person", "--hub", d.addr); code != 0 {
		t.Fatalf("questions answer: exit %d\n%s%s", code, out, errs)
	}
	if _, err := research.SendPacket(ctx, tasks[0].ID, agentsdk.NewPacket("found").Finish("", "found it")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{asked, delegated} {
		s, err := alice.GetSession(ctx, id)
		if err != nil || s.GetState() != agentsdk.StateOpen {
			t.Fatalf("session %s after its hold was released: %v, %v (%s)", id, s.GetState(), err, s.GetCloseReason())
		}
		if _, err := alice.SendText(ctx, id, "on it"); err != nil {
			t.Fatalf("alice's turn after the release: %v", err)
		}
		if ack, err := bob.SendText(ctx, id, "done"); err != nil || ack.GetCloseReason() != "sequence_complete" {
			t.Fatalf("bob's turn: %v, %v", ack, err)
		}
		checkHeldLog(t, alice, id, hold)
	}
}

// checkHeldLog checks a session's log: the hold (question or delegation)
// was released at least hold after it began, by the hub's timestamps, and
// no expectation was violated.
func checkHeldLog(t *testing.T, c *agentsdk.Client, id string, hold time.Duration) {
	t.Helper()
	es, err := c.ReadLog(context.Background(), id, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var began, released time.Time
	var types []string
	for _, e := range es {
		types = append(types, e.GetType())
		switch e.GetType() {
		case agentsdk.EventQuestion, agentsdk.EventDelegation:
			began = e.GetAcceptedAt().AsTime()
		case agentsdk.EventAnswer, agentsdk.EventDelegationResult:
			released = e.GetAcceptedAt().AsTime()
		case agentsdk.EventViolation:
			t.Errorf("session %s: %v", id, e.GetViolation())
		}
	}
	if began.IsZero() || released.Sub(began) < hold {
		t.Errorf("session %s: held from %v to %v, want at least %v: %v", id, began, released, hold, types)
	}
	if got := fmt.Sprint(types[len(types)-3:]); got != "[text text session_closed]" {
		t.Errorf("session %s ends %s", id, got)
	}
}

// TestE2EOpenChildrenOfAClosedParent closes a parent whose turn waits on a
// child (the child closes parent_closed with it): hubd sessions show lists
// no open child and no hold for the parent, before and after a restart of
// the binary on the same data directory.
func TestE2EOpenChildrenOfAClosedParent(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user, main := dialAs(t, d.addr, "user"), dialAs(t, d.addr, "main")
	p, err := user.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("main"), Task: "acme?"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := main.Delegate(ctx, p.ID(), agentsdk.DelegateOptions{Children: []agentsdk.OpenOptions{{
		Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("research"), Task: "find acme news"}}})
	if err != nil {
		t.Fatal(err)
	}
	if info := showSession(t, d.addr, p.ID()); len(info.GetOpenChildren()) != 1 || len(info.GetHolds()) != 1 {
		t.Fatalf("before the close: open children %v, holds %v", info.GetOpenChildren(), info.GetHolds())
	}
	if _, err := user.CloseSession(ctx, p.ID(), "enough"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		info := showSession(t, d.addr, p.ID())
		if info.GetState() != agentsdk.StateClosed || len(info.GetOpenChildren()) != 0 || len(info.GetHolds()) != 0 {
			t.Errorf("%s: %s, open children %v, holds %v", when, info.GetState(), info.GetOpenChildren(), info.GetHolds())
		}
		if child := showSession(t, d.addr, tasks[0].ID); child.GetCloseReason() != "parent_closed" {
			t.Errorf("%s: the child is %s %s", when, child.GetState(), child.GetCloseReason())
		}
	}
	check("after the close")
	d.stop(syscall.SIGTERM)
	d = startDaemon(t, data, "")
	check("after a restart")
}

// showSession runs hubd sessions show as an operator.
func showSession(t *testing.T, addr, id string) *hubpb.SessionInfo {
	t.Helper()
	code, out, errs := hubd(t, "sessions", "show", id, "--hub", addr, "--output", "json")
	info := &hubpb.SessionInfo{}
	if err := hubpb.UnmarshalJSON([]byte(out), info); code != 0 || err != nil {
		t.Fatalf("sessions show %s: exit %d, %v\n%s%s", id, code, err, out, errs)
	}
	return info
}
