package adapters_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// duration returns the stored form of d, nil for 0 (none).
func duration(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// newTimedMachine opens a workflow a → b → c session with the given
// expectations, TTL and invite timeout, with b auto-accepting and c
// invited. Time is data: every envelope carries the time it is accepted at.
func newTimedMachine(t *testing.T, exps []*hubpb.Expectation, ttl, invite time.Duration) *adapters.Machine {
	t.Helper()
	meta := &hubpb.SessionMeta{SessionId: scenarioSession, Type: "workflow@1", Creator: "a",
		Participants: []*hubpb.Participant{{Name: "a"}, {Name: "b", AutoAccept: true}, {Name: "c"}},
		Knobs:        map[string]*structpb.Value{"graph": graphKnob(t, transition.Sequence("a", "b", "c"))},
		Expectations: exps, Ttl: duration(ttl), InviteTimeout: duration(invite), CreatedAt: session.Stamp(t0)}
	a, _ := registry(t).Lookup(session.Type{Kind: "workflow", Version: 1})
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		t.Fatal(err)
	}
	m.Apply(&hubpb.Envelope{Seq: 1, Type: session.EventInvite, AcceptedAt: session.Stamp(t0),
		Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: session.Invitees(meta)}}})
	return m
}

// fire applies the envelopes due at now and returns their types and reasons.
func fire(m *adapters.Machine, now time.Time) []string {
	var got []string
	for _, e := range m.Due(now) {
		e.Seq, e.AcceptedAt = m.Seq+1, session.Stamp(now)
		all, _ := m.Apply(e)
		for _, x := range all {
			s := x.GetType()
			if v := x.GetViolation(); v != nil {
				s += ":" + v.GetExpectation() + ":" + v.GetAction()
			}
			if end := x.GetEnded(); end != nil {
				s += ":" + end.GetReason()
			}
			got = append(got, s)
		}
	}
	return got
}

func TestTimers(t *testing.T) {
	warn := session.Expect(session.TurnWithin, 120*time.Second, session.ActionWarn)
	closeIt := session.Expect(session.TurnWithin, 600*time.Second, session.ActionAutoClose)
	acks := session.Expect(session.AcksWithin, 30*time.Second, session.ActionNotify)

	t.Run("invite: acks_within notifies once, invite timeout expires", func(t *testing.T) {
		m := newTimedMachine(t, []*hubpb.Expectation{acks}, 0, 60*time.Second)
		if at, ok := m.Next(); !ok || !at.Equal(t0.Add(30*time.Second)) {
			t.Fatalf("next = %v %v", at, ok)
		}
		if got := fire(m, t0.Add(29*time.Second)); len(got) != 0 {
			t.Fatalf("fired early: %v", got)
		}
		if got := fire(m, t0.Add(30*time.Second)); !slices.Equal(got, []string{"expectation_violated:acks_within:notify"}) {
			t.Fatalf("at the threshold: %v", got)
		}
		if got := fire(m, t0.Add(59*time.Second)); len(got) != 0 {
			t.Fatalf("fired twice: %v", got)
		}
		got := fire(m, t0.Add(60*time.Second))
		if !slices.Equal(got, []string{"session_expired:invite_timeout"}) || m.Lifecycle.State != session.StateExpired {
			t.Fatalf("invite timeout: %v, state %v", got, m.Lifecycle.State)
		}
		if _, ok := m.Next(); ok {
			t.Fatal("an ended session has no timers")
		}
	})

	t.Run("turn_within warns once per turn, then auto-closes", func(t *testing.T) {
		m := newTimedMachine(t, []*hubpb.Expectation{warn, closeIt}, 0, 0)
		ack := &hubpb.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: session.Stamp(t0.Add(time.Second))}
		if all, _ := m.Apply(ack); len(all) != 2 || m.Lifecycle.State != session.StateOpen {
			t.Fatalf("the last ack opens the session: %d envelopes, %v", len(all), m.Lifecycle.State)
		}
		opened := t0.Add(time.Second)
		if got := fire(m, opened.Add(120*time.Second)); !slices.Equal(got, []string{"expectation_violated:turn_within:warn"}) {
			t.Fatalf("warn: %v", got)
		}
		if got := fire(m, opened.Add(300*time.Second)); len(got) != 0 {
			t.Fatalf("warned twice: %v", got)
		}
		// a turn starts a new period: the warning can fire again
		turn := &hubpb.Envelope{Seq: m.Seq + 1, From: "a", Type: session.EventText, AcceptedAt: session.Stamp(opened.Add(400 * time.Second)),
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "x"}}}
		m.Apply(turn)
		if got := fire(m, opened.Add(520*time.Second)); len(got) != 1 {
			t.Fatalf("warn after a new turn: %v", got)
		}
		got := fire(m, opened.Add(1000*time.Second))
		if len(got) != 2 || got[1] != "session_closed:expectation_violated:turn_within" || m.Lifecycle.State != session.StateClosed {
			t.Fatalf("auto_close: %v, %v", got, m.Lifecycle.State)
		}
	})

	t.Run("a warning goes to the violators, a notice to everyone", func(t *testing.T) {
		m := newTimedMachine(t, []*hubpb.Expectation{warn}, 0, 0)
		m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: session.Stamp(t0)})
		due := m.Due(t0.Add(120 * time.Second))
		if len(due) != 1 || !slices.Equal(due[0].GetAudience().GetNames(), []string{"a"}) || !slices.Equal(due[0].GetViolation().GetViolators(), []string{"a"}) {
			t.Fatalf("warn: %v", due)
		}
		if err := session.CheckEnvelope(due[0]); err != nil {
			t.Errorf("a due violation does not check: %v", err)
		}
		m = newTimedMachine(t, []*hubpb.Expectation{acks}, 0, 0)
		due = m.Due(t0.Add(30 * time.Second))
		if len(due) != 1 || due[0].GetAudience() != nil || !slices.Equal(due[0].GetViolation().GetViolators(), []string{"c"}) {
			t.Fatalf("notify: %v", due)
		}
	})

	t.Run("reply_within and max_silence", func(t *testing.T) {
		reply := session.Expect(session.ReplyWithin, 60*time.Second, session.ActionNotify)
		silence := session.Expect(session.MaxSilence, 90*time.Second, session.ActionNotify)
		m := newTimedMachine(t, []*hubpb.Expectation{reply, silence}, 0, 0)
		m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: session.Stamp(t0)})
		// no turn yet: nobody owes a reply; silence counts from the open
		if at, ok := m.Next(); !ok || !at.Equal(t0.Add(90*time.Second)) {
			t.Fatalf("next = %v %v", at, ok)
		}
		m.Apply(&hubpb.Envelope{Seq: m.Seq + 1, From: "a", Type: session.EventText, AcceptedAt: session.Stamp(t0.Add(10 * time.Second)),
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "x"}}})
		due := m.Due(t0.Add(70 * time.Second))
		if len(due) != 1 || due[0].GetViolation().GetExpectation() != session.ReplyWithin ||
			!slices.Equal(due[0].GetViolation().GetViolators(), []string{"b", "c"}) {
			t.Fatalf("reply_within: %v", due)
		}
		due = m.Due(t0.Add(100 * time.Second))
		if len(due) != 2 || due[1].GetViolation().GetExpectation() != session.MaxSilence ||
			!slices.Equal(due[1].GetViolation().GetViolators(), []string{"a", "b", "c"}) {
			t.Fatalf("max_silence: %v", due)
		}
	})

	t.Run("ttl expires whatever the state", func(t *testing.T) {
		m := newTimedMachine(t, nil, time.Hour, 0)
		if got := fire(m, t0.Add(time.Hour)); !slices.Equal(got, []string{"session_expired:ttl_expired"}) {
			t.Fatalf("ttl: %v", got)
		}
	})

	t.Run("replayed violations are not due again", func(t *testing.T) {
		m := newTimedMachine(t, []*hubpb.Expectation{acks}, 0, 0)
		fire(m, t0.Add(time.Minute))
		if ds := m.Deadlines(); len(ds) != 0 {
			t.Fatalf("deadlines after firing: %+v", ds)
		}
	})
}
