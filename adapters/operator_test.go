package adapters_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// steer admits and applies an operator action with timer change tc at
// time at.
func steer(t *testing.T, m *adapters.Machine, tc *hubpb.TimerChange, at time.Time) {
	t.Helper()
	e := &hubpb.Envelope{Seq: m.Seq + 1, Type: session.EventOperator, AcceptedAt: session.Stamp(at),
		Payload: &hubpb.Envelope_OperatorAction{OperatorAction: &hubpb.OperatorAction{Operator: "ops", Reason: "test",
			Action: &hubpb.OperatorAction_Timer{Timer: tc}}}}
	if err := m.Admit(e); err != nil {
		t.Fatal(err)
	}
	m.Apply(e)
}

// TestOperatorTimers: extending an expectation's running period moves its
// deadline by the sum of the extensions; cancelling it leaves no deadline
// for that period, and the next period counts as usual.
func TestOperatorTimers(t *testing.T) {
	m := newTimedMachine(t, []*hubpb.Expectation{{Name: session.TurnWithin, Action: session.ActionWarn, Within: durationpb.New(time.Minute)}}, 0, 0)
	ack := &hubpb.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: session.Stamp(t0)}
	m.Apply(ack)
	if d := m.Deadlines(); len(d) != 1 || !d[0].At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("deadlines at open: %+v, want turn_within at %v", d, t0.Add(time.Minute))
	}
	steer(t, m, &hubpb.TimerChange{Name: session.TurnWithin, Extend: durationpb.New(5 * time.Minute)}, t0.Add(10*time.Second))
	steer(t, m, &hubpb.TimerChange{Name: session.TurnWithin, Extend: durationpb.New(time.Minute)}, t0.Add(20*time.Second))
	if d := m.Deadlines(); len(d) != 1 || !d[0].At.Equal(t0.Add(7*time.Minute)) {
		t.Fatalf("deadlines after two extensions: %+v, want turn_within at %v", d, t0.Add(7*time.Minute))
	}
	if got := m.Due(t0.Add(2 * time.Minute)); len(got) != 0 {
		t.Fatalf("due before the extended deadline: %v", got)
	}
	steer(t, m, &hubpb.TimerChange{Name: session.TurnWithin, Cancel: true}, t0.Add(30*time.Second))
	if d := m.Deadlines(); len(d) != 0 {
		t.Fatalf("deadlines after cancel: %+v, want none", d)
	}
	turn := &hubpb.Envelope{Seq: m.Seq + 1, From: "a", Type: session.EventText, AcceptedAt: session.Stamp(t0.Add(time.Hour)),
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi"}}}
	m.Apply(turn)
	if d := m.Deadlines(); len(d) != 1 || !d[0].At.Equal(t0.Add(time.Hour+time.Minute)) {
		t.Fatalf("deadlines after the next turn: %+v, want turn_within at %v (extension gone with its period)", d, t0.Add(time.Hour+time.Minute))
	}
}

// TestOperatorReleaseDelegation: releasing a blocking delegation's hold
// begins the delegator's turn; the child's later result grants nothing.
func TestOperatorReleaseDelegation(t *testing.T) {
	m := newTimedMachine(t, nil, 0, 0)
	m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: session.Stamp(t0)})
	child := "0192f0c4-8f4e-7a2b-9c3d-4e5f60718299"
	m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, Type: session.EventDelegation, AcceptedAt: session.Stamp(t0),
		Payload: &hubpb.Envelope_Delegation{Delegation: &hubpb.Delegation{Delegator: "a", Mode: session.ModeBlocking,
			ChildSessionIds: []string{child}}}})
	if got := m.Expected(); len(got) != 0 {
		t.Fatalf("expected while held: %v", got)
	}
	e := &hubpb.Envelope{Seq: m.Seq + 1, Type: session.EventOperator, AcceptedAt: session.Stamp(t0),
		Payload: &hubpb.Envelope_OperatorAction{OperatorAction: &hubpb.OperatorAction{Operator: "ops", Reason: "child stuck",
			Action: &hubpb.OperatorAction_ReleaseResult{ReleaseResult: "use the cached answer"}}}}
	if err := m.Admit(e); err != nil {
		t.Fatal(err)
	}
	if _, out := m.Apply(e); out.Trigger != e {
		t.Fatalf("release began no turn: %+v", out)
	}
	if got := m.Expected(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("expected after release: %v, want a", got)
	}
	_, out := m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, Type: session.EventDelegationResult, AcceptedAt: session.Stamp(t0),
		Payload: &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{ChildSessionId: child}}})
	if out.Trigger != nil {
		t.Fatalf("the late result began a turn: %+v", out)
	}
}
