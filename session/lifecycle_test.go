package session_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

var allStates = []session.State{session.StatePending, session.StateOpen, session.StateClosed, session.StateExpired}

func TestStateText(t *testing.T) {
	names := []string{"PENDING", "OPEN", "CLOSED", "EXPIRED"}
	for i, s := range allStates {
		if s.String() != names[i] {
			t.Errorf("State %d String() = %q, want %q", s, s.String(), names[i])
		}
		for _, in := range []string{names[i], strings.ToLower(names[i]), names[i][:1] + strings.ToLower(names[i][1:])} {
			got, err := session.ParseState(in)
			if err != nil || got != s {
				t.Errorf("ParseState(%q) = %v, %v; want %v", in, got, err, s)
			}
		}
		b, err := s.MarshalText()
		if err != nil || string(b) != names[i] {
			t.Errorf("MarshalText() = %s, %v", b, err)
		}
		var back session.State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("UnmarshalText(%s) = %v, %v", b, back, err)
		}
	}
	if got := session.State(0).String(); got != "State(0)" {
		t.Errorf("State(0).String() = %q", got)
	}
	if got := session.State(9).String(); got != "State(9)" {
		t.Errorf("State(9).String() = %q", got)
	}
	for _, bad := range []string{"", "OPENED", "State(1)", "1"} {
		_, err := session.ParseState(bad)
		wantErr(t, err, session.ErrMalformed, "PENDING, OPEN, CLOSED, EXPIRED")
	}
	var s session.State
	wantErr(t, s.UnmarshalText([]byte("nope")), session.ErrMalformed)
	if !session.StateClosed.Ended() || !session.StateExpired.Ended() || session.StateOpen.Ended() || session.StatePending.Ended() || session.State(0).Ended() {
		t.Error("Ended is wrong")
	}
}

func TestStep(t *testing.T) {
	p, o, c, e := session.StatePending, session.StateOpen, session.StateClosed, session.StateExpired
	allowed := map[[2]session.State]bool{{p, o}: true, {p, c}: true, {p, e}: true, {o, c}: true, {o, e}: true}
	states := append([]session.State{0}, allStates...)
	states = append(states, 9)
	for _, from := range states {
		for _, to := range states {
			err := session.Step(from, to)
			if allowed[[2]session.State{from, to}] {
				if err != nil {
					t.Errorf("Step(%v, %v) = %v, want nil", from, to, err)
				}
				continue
			}
			wantErr(t, err, session.ErrBadTransition, from.String(), to.String())
		}
	}
}

func TestEndType(t *testing.T) {
	for _, tt := range []struct{ reason, want string }{
		{session.ReasonTTLExpired, session.EventExpired},
		{session.ReasonInviteTimeout, session.EventExpired},
		{session.ReasonSequenceComplete, session.EventClosed},
		{session.ReasonMaxTurns, session.EventClosed},
		{session.ReasonFinished, session.EventClosed},
		{session.ReasonExplicitClose, session.EventClosed},
		{session.ReasonInviteRejected, session.EventClosed},
		{session.ReasonExpectationViolated("x"), session.EventClosed},
		{"a graph's own reason", session.EventClosed},
		{"", session.EventClosed},
	} {
		if got := session.EndType(tt.reason); got != tt.want {
			t.Errorf("EndType(%q) = %s, want %s", tt.reason, got, tt.want)
		}
	}
	if got := session.ReasonExpectationViolated("turn_within"); got != "expectation_violated:turn_within" {
		t.Errorf("ReasonExpectationViolated = %q", got)
	}
}

// step is one envelope offered to a lifecycle: Admit, then Fold when it is
// admitted.
type step struct {
	t    string
	from string
	p    any   // the payload (see with)
	err  error // nil: admitted
}

func runLifecycle(t *testing.T, l *session.Lifecycle, steps []step) {
	t.Helper()
	for i, s := range steps {
		err := l.Admit(s.t, s.from)
		if s.err == nil && err != nil || s.err != nil && !errors.Is(err, s.err) {
			t.Fatalf("step %d: Admit(%s, %q) in %v = %v, want %v", i, s.t, s.from, l.State, err, s.err)
		}
		if err == nil {
			l.Fold(with(&hubpb.Envelope{Type: s.t, From: s.from, AcceptedAt: session.Stamp(at(i))}, s.p))
		}
	}
}

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

func invite(names ...string) *hubpb.Invite { return &hubpb.Invite{Invitees: names} }

func ended(reason string) *hubpb.Ended { return &hubpb.Ended{Reason: reason} }

func TestLifecycleOpenThenClose(t *testing.T) {
	var l session.Lifecycle
	runLifecycle(t, &l, []step{
		{t: session.EventInvite, p: invite("bob", "carol")}, // 0
		{t: session.EventInvite, p: invite(), err: session.ErrBadTransition},
		{t: session.EventText, from: "alice", err: session.ErrNotOpen},
		{t: session.EventPacket, from: "bob", err: session.ErrNotOpen},
		{t: session.EventQuestion, from: "alice", err: session.ErrNotOpen},
		{t: customType, from: "alice", err: session.ErrNotOpen},
		{t: session.EventContextSet, from: "alice"}, // any time
		{t: session.EventInviteAck, from: "dave", err: session.ErrBadTransition},
		{t: session.EventInviteAck, from: "alice", err: session.ErrBadTransition}, // the creator has no invite
		{t: session.EventInviteAck, from: "bob"},
		{t: session.EventInviteAck, from: "bob", err: session.ErrBadTransition}, // twice
	})
	want := session.Lifecycle{State: session.StatePending, Awaiting: []string{"carol"}, Created: at(0)}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("after bob's ack: %+v, want %+v", l, want)
	}
	runLifecycle(t, &l, []step{
		{t: session.EventInviteReject, from: "bob", err: session.ErrBadTransition}, // already acked
		{t: session.EventInviteAck, from: "carol"},
		{t: session.EventOpened}, // index 2 of this run
	})
	want = session.Lifecycle{State: session.StateOpen, Created: at(0), Opened: at(2)}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("after open: %+v, want %+v", l, want)
	}
	runLifecycle(t, &l, []step{
		{t: session.EventOpened, err: session.ErrBadTransition},
		{t: session.EventInvite, p: invite(), err: session.ErrBadTransition},
		{t: session.EventInviteAck, from: "carol", err: session.ErrBadTransition},
		{t: session.EventText, from: "alice", p: &hubpb.Text{Text: "hi"}},
		{t: session.EventPacket, from: "bob", p: &hubpb.Packet{}},
		{t: customType, from: "carol"},
		{t: session.EventViolation, p: &hubpb.Violation{Expectation: session.TurnWithin}},
		{t: session.EventClosed, p: ended(session.ReasonExplicitClose)}, // index 7
	})
	want = session.Lifecycle{State: session.StateClosed, Reason: session.ReasonExplicitClose, Created: at(0), Opened: at(2), Ended: at(7)}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("after close: %+v, want %+v", l, want)
	}
	assertAllClosed(t, &l)
}

// assertAllClosed checks an ended lifecycle refuses everything, from agents
// and from the hub.
func assertAllClosed(t *testing.T, l *session.Lifecycle) {
	t.Helper()
	for _, ty := range append(allTypes, customType) {
		for _, from := range []string{"", "alice", "bob"} {
			err := l.Admit(ty, from)
			wantErr(t, err, session.ErrClosed, l.State.String(), l.Reason)
		}
	}
}

func TestLifecycleRejected(t *testing.T) {
	var l session.Lifecycle
	runLifecycle(t, &l, []step{
		{t: session.EventInvite, p: invite("bob", "carol")},
		{t: session.EventInviteReject, from: "zed", err: session.ErrBadTransition},
		{t: session.EventInviteReject, from: "bob", p: ended("busy")},
		// The hub closes in the same write.
		{t: session.EventClosed, p: ended(session.ReasonInviteRejected)},
	})
	if l.State != session.StateClosed || l.Reason != session.ReasonInviteRejected || l.Awaiting != nil || !l.Opened.IsZero() {
		t.Fatalf("lifecycle %+v", l)
	}
	assertAllClosed(t, &l)
}

func TestLifecycleExpired(t *testing.T) {
	for _, reason := range []string{session.ReasonInviteTimeout, session.ReasonTTLExpired} {
		var l session.Lifecycle
		steps := []step{{t: session.EventInvite, p: invite("bob")}}
		if reason == session.ReasonTTLExpired {
			steps = append(steps, step{t: session.EventInviteAck, from: "bob"}, step{t: session.EventOpened})
		}
		steps = append(steps, step{t: session.EndType(reason), p: ended(reason)})
		runLifecycle(t, &l, steps)
		if l.State != session.StateExpired || l.Reason != reason || !l.Ended.Equal(at(len(steps)-1)) {
			t.Fatalf("%s: lifecycle %+v", reason, l)
		}
		assertAllClosed(t, &l)
	}
}

func TestLifecycleNoInvitees(t *testing.T) {
	var l session.Lifecycle
	runLifecycle(t, &l, []step{
		{t: session.EventInvite, p: invite()},
		{t: session.EventInviteAck, from: "bob", err: session.ErrBadTransition},
		{t: session.EventOpened},
	})
	if l.State != session.StateOpen || l.Awaiting != nil {
		t.Fatalf("lifecycle %+v", l)
	}
}

func TestLifecycleOpenBeforeInvite(t *testing.T) {
	var l session.Lifecycle
	wantErr(t, l.Admit(session.EventOpened, ""), session.ErrBadTransition)
	wantErr(t, l.Admit(session.EventInviteAck, "bob"), session.ErrBadTransition)
	if err := l.Admit(session.EventInvite, ""); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycleFoldDoesNotAlias(t *testing.T) {
	inv := invite("bob", "carol")
	var l session.Lifecycle
	l.Fold(with(&hubpb.Envelope{Type: session.EventInvite}, inv))
	l.Fold(&hubpb.Envelope{Type: session.EventInviteAck, From: "bob"})
	if !reflect.DeepEqual(inv.GetInvitees(), []string{"bob", "carol"}) {
		t.Errorf("folding an ack changed the invite's payload: %v", inv.GetInvitees())
	}
}

// Fold without a time leaves the times zero (a nil Timestamp is not the
// Unix epoch).
func TestLifecycleFoldWithoutTime(t *testing.T) {
	var l session.Lifecycle
	l.Fold(with(&hubpb.Envelope{Type: session.EventInvite}, invite()))
	l.Fold(&hubpb.Envelope{Type: session.EventOpened})
	if !l.Created.IsZero() || !l.Opened.IsZero() {
		t.Errorf("lifecycle %+v, want zero times", l)
	}
}

func TestLifecycleJSON(t *testing.T) {
	l := session.Lifecycle{State: session.StateOpen, Created: t0, Opened: t0.Add(time.Second)}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"state":"OPEN","created":"2026-01-02T03:04:05.000000006Z","opened":"2026-01-02T03:04:06.000000006Z"}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var back session.Lifecycle
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, l) {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}
