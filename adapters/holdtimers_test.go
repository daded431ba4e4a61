package adapters_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// step applies an envelope at t0+at and fails the test if the machine
// would not admit it.
func step(t *testing.T, m *adapters.Machine, at time.Duration, e *hubpb.Envelope) {
	t.Helper()
	e.SessionId, e.Seq, e.AcceptedAt = scenarioSession, m.Seq+1, session.Stamp(t0.Add(at))
	if err := m.Admit(e); err != nil {
		t.Fatalf("%s from %q at +%v: %v", e.GetType(), e.GetFrom(), at, err)
	}
	m.Apply(e)
}

func text(from, s string) *hubpb.Envelope {
	return &hubpb.Envelope{From: from, Type: session.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
}

func question(from, id string) *hubpb.Envelope {
	return &hubpb.Envelope{From: from, Type: session.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: id, Text: "go?", Answerer: "person"}}}
}

func answer(id string) *hubpb.Envelope {
	return &hubpb.Envelope{From: "person", Type: session.EventAnswer, Payload: &hubpb.Envelope_Answer{Answer: &hubpb.Answer{
		QuestionId: id, Text: "yes"}}}
}

// deadlines prints the machine's deadlines as name@seconds-since-t0 from
// seconds-since-t0.
func deadlines(m *adapters.Machine) string {
	var out []string
	for _, d := range m.Deadlines() {
		name := "end"
		if d.Index >= 0 {
			name = m.Meta.GetExpectations()[d.Index].GetName()
		}
		out = append(out, name+"@"+d.At.Sub(t0).String()+"/since "+d.Since.Sub(t0).String())
	}
	return strings.Join(out, " ")
}

// A held turn is not a stalled turn: turn_within, reply_within and
// max_silence do not run while a turn is held, and count a whole period
// from the release; partial results of an await-all delegation release
// nothing. Once the holder speaks, the release leaves no trace in the
// state (a log with a hold released and followed by a turn folds to what
// it always folded to).
func TestHeldTurnTimers(t *testing.T) {
	turn := session.Expect(session.TurnWithin, 120*time.Second, session.ActionWarn)
	reply := session.Expect(session.ReplyWithin, 60*time.Second, session.ActionNotify)
	silence := session.Expect(session.MaxSilence, 90*time.Second, session.ActionNotify)
	m := newTimedMachine(t, []*hubpb.Expectation{turn, reply, silence}, 0, 0)
	step(t, m, 0, &hubpb.Envelope{From: "c", Type: session.EventInviteAck})
	step(t, m, 10*time.Second, text("a", "over to b"))
	if got := fire(m, t0.Add(130*time.Second)); len(got) != 3 {
		t.Fatalf("before the hold: %v", got)
	}
	step(t, m, 140*time.Second, question("b", "q1"))
	if got := deadlines(m); got != "" {
		t.Fatalf("deadlines while held: %s", got)
	}
	if got := fire(m, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("fired while held: %v", got)
	}
	step(t, m, time.Hour, answer("q1"))
	want := "reply_within@1h1m0s/since 1h0m0s max_silence@1h1m30s/since 1h0m0s turn_within@1h2m0s/since 1h0m0s"
	if got := deadlines(m); got != want {
		t.Fatalf("after the release:\n got %s\nwant %s", got, want)
	}
	if got := fire(m, t0.Add(time.Hour+119*time.Second)); !slices.Equal(got, []string{
		"expectation_violated:reply_within:notify", "expectation_violated:max_silence:notify"}) {
		t.Fatalf("within the turn's period: %v", got)
	}
	if got := fire(m, t0.Add(time.Hour+120*time.Second)); !slices.Equal(got, []string{"expectation_violated:turn_within:warn"}) {
		t.Fatalf("at the end of the turn's period: %v", got)
	}
	step(t, m, time.Hour+150*time.Second, text("b", "done"))
	if b, _ := json.Marshal(m); strings.Contains(string(b), "resumed_at") {
		t.Fatalf("a turn after the release leaves it in the state: %s", b)
	}
}

// A blocking delegation awaiting all its children holds the turn until
// the last result; the period starts at that result.
func TestHeldTurnTimersAwaitAll(t *testing.T) {
	turn := session.Expect(session.TurnWithin, 2*time.Second, session.ActionAutoClose)
	m := newTimedMachine(t, []*hubpb.Expectation{turn}, 0, 0)
	step(t, m, 0, &hubpb.Envelope{From: "c", Type: session.EventInviteAck})
	x, y := "0192f0c4-8f4e-7a2b-9c3d-000000000001", "0192f0c4-8f4e-7a2b-9c3d-000000000002"
	step(t, m, time.Second, &hubpb.Envelope{Type: session.EventDelegation, Payload: &hubpb.Envelope_Delegation{Delegation: &hubpb.Delegation{
		ChildSessionIds: []string{x, y}, Delegator: "a", Mode: session.ModeBlocking, Await: session.AwaitAll}}})
	result := func(child string) *hubpb.Envelope {
		return &hubpb.Envelope{Type: session.EventDelegationResult, Audience: session.Only("a"),
			Payload: &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{
				ChildSessionId: child, Reason: session.ReasonFinished, State: "CLOSED"}}}
	}
	step(t, m, 5*time.Second, result(x))
	if got := deadlines(m); got != "" {
		t.Fatalf("one of two results released the turn: %s", got)
	}
	step(t, m, 9*time.Second, result(y))
	if got := deadlines(m); got != "turn_within@11s/since 9s" {
		t.Fatalf("after the last result: %s", got)
	}
	if got := fire(m, t0.Add(10*time.Second)); len(got) != 0 {
		t.Fatalf("fired before the period from the release: %v", got)
	}
	// the holder asks right after: a second hold pauses again
	step(t, m, 10*time.Second, question("a", "q2"))
	step(t, m, 20*time.Second, answer("q2"))
	if got := deadlines(m); got != "turn_within@22s/since 20s" {
		t.Fatalf("after the second release: %s", got)
	}
	if got := fire(m, t0.Add(22*time.Second)); !slices.Equal(got, []string{
		"expectation_violated:turn_within:auto_close", "session_closed:expectation_violated:turn_within"}) {
		t.Fatalf("the holder's silence after the release: %v", got)
	}
}
