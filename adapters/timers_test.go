package adapters_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newTimedMachine opens a workflow a → b → c session with the given
// expectations, TTL and invite timeout, with bob auto-accepting and carol
// invited.
func newTimedMachine(t *testing.T, exps []session.Expectation, ttl, invite time.Duration) *adapters.Machine {
	t.Helper()
	graph, _ := json.Marshal(transition.Sequence("a", "b", "c"))
	meta := &session.Meta{Type: session.Type{Kind: "workflow", Version: 1}, Creator: "a",
		Participants: []session.Participant{{Name: "a"}, {Name: "b", AutoAccept: true}, {Name: "c"}},
		Knobs:        map[string]json.RawMessage{"graph": graph}, Expectations: exps, TTL: ttl, InviteTimeout: invite, CreatedAt: t0}
	a, _ := registry(t).Lookup(meta.Type)
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		t.Fatal(err)
	}
	m.Apply(&session.Envelope{Seq: 1, Type: session.EventInvite, Payload: session.Invite{Invitees: meta.Invitees()}, AcceptedAt: t0})
	return m
}

// fire applies the envelopes due at now and returns their types and reasons.
func fire(m *adapters.Machine, now time.Time) []string {
	var got []string
	for _, e := range m.Due(now) {
		e.Seq, e.AcceptedAt = m.Seq+1, now
		all, _ := m.Apply(e)
		for _, x := range all {
			s := string(x.Type)
			switch p := x.Payload.(type) {
			case session.Violation:
				s += ":" + p.Expectation + ":" + string(p.Action)
			case session.Ended:
				s += ":" + p.Reason
			}
			got = append(got, s)
		}
	}
	return got
}

func TestTimers(t *testing.T) {
	warn := session.Expectation{Name: session.TurnWithin, Within: 120 * time.Second, Action: session.ActionWarn}
	closeIt := session.Expectation{Name: session.TurnWithin, Within: 600 * time.Second, Action: session.ActionAutoClose}
	acks := session.Expectation{Name: session.AcksWithin, Within: 30 * time.Second, Action: session.ActionNotify}

	t.Run("invite: acks_within notifies once, invite timeout expires", func(t *testing.T) {
		m := newTimedMachine(t, []session.Expectation{acks}, 0, 60*time.Second)
		if at, ok := m.Next(); !ok || !at.Equal(t0.Add(30*time.Second)) {
			t.Fatalf("next = %v %v", at, ok)
		}
		if got := fire(m, t0.Add(29*time.Second)); len(got) != 0 {
			t.Fatalf("fired early: %v", got)
		}
		if got := fire(m, t0.Add(30*time.Second)); len(got) != 1 || got[0] != "expectation_violated:acks_within:notify" {
			t.Fatalf("at the threshold: %v", got)
		}
		if got := fire(m, t0.Add(59*time.Second)); len(got) != 0 {
			t.Fatalf("fired twice: %v", got)
		}
		got := fire(m, t0.Add(60*time.Second))
		if len(got) != 1 || got[0] != "session_expired:invite_timeout" || m.Life.State != session.StateExpired {
			t.Fatalf("invite timeout: %v, state %v", got, m.Life.State)
		}
		if _, ok := m.Next(); ok {
			t.Fatal("an ended session has no timers")
		}
	})

	t.Run("turn_within warns once per turn, then auto-closes", func(t *testing.T) {
		m := newTimedMachine(t, []session.Expectation{warn, closeIt}, 0, 0)
		ack := &session.Envelope{Seq: m.Seq + 1, From: "c", Type: session.EventInviteAck, AcceptedAt: t0.Add(time.Second)}
		if all, _ := m.Apply(ack); len(all) != 2 || m.Life.State != session.StateOpen {
			t.Fatalf("the last ack opens the session: %d envelopes, %v", len(all), m.Life.State)
		}
		opened := t0.Add(time.Second)
		if got := fire(m, opened.Add(120*time.Second)); len(got) != 1 || got[0] != "expectation_violated:turn_within:warn" {
			t.Fatalf("warn: %v", got)
		}
		if got := fire(m, opened.Add(300*time.Second)); len(got) != 0 {
			t.Fatalf("warned twice: %v", got)
		}
		// a turn starts a new period: the warning can fire again
		turn := &session.Envelope{Seq: m.Seq + 1, From: "a", Type: session.EventText, Payload: session.Text{Text: "x"}, AcceptedAt: opened.Add(400 * time.Second)}
		m.Apply(turn)
		if got := fire(m, opened.Add(520*time.Second)); len(got) != 1 {
			t.Fatalf("warn after a new turn: %v", got)
		}
		got := fire(m, opened.Add(1000*time.Second))
		if len(got) != 2 || got[1] != "session_closed:expectation_violated:turn_within" || m.Life.State != session.StateClosed {
			t.Fatalf("auto_close: %v, %v", got, m.Life.State)
		}
	})

	t.Run("ttl expires whatever the state", func(t *testing.T) {
		m := newTimedMachine(t, nil, time.Hour, 0)
		if got := fire(m, t0.Add(time.Hour)); len(got) != 1 || got[0] != "session_expired:ttl_expired" {
			t.Fatalf("ttl: %v", got)
		}
	})

	t.Run("replayed violations are not due again", func(t *testing.T) {
		m := newTimedMachine(t, []session.Expectation{acks}, 0, 0)
		fire(m, t0.Add(time.Minute))
		ds := m.Deadlines()
		if len(ds) != 0 {
			t.Fatalf("deadlines after firing: %+v", ds)
		}
	})
}
