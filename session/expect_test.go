package session_test

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func TestCheckExpectation(t *testing.T) {
	for _, name := range []string{session.TurnWithin, session.ReplyWithin, session.MaxSilence, session.AcksWithin} {
		for _, a := range []string{session.ActionWarn, session.ActionNotify, session.ActionAutoClose} {
			e := session.Expect(name, time.Nanosecond, a)
			if err := session.CheckExpectation(e); err != nil {
				t.Errorf("CheckExpectation(%v) = %v", e, err)
			}
		}
	}
	tests := []struct {
		e     *hubpb.Expectation
		frags []string
	}{
		{session.Expect("nap", time.Second, session.ActionWarn), []string{`unknown expectation "nap"`, "turn_within, reply_within, max_silence, acks_within"}},
		{session.Expect("", time.Second, session.ActionWarn), []string{`""`}},
		{session.Expect("TURN_WITHIN", time.Second, session.ActionWarn), []string{`"TURN_WITHIN"`}},
		{session.Expect(session.TurnWithin, time.Second, "shout"), []string{`expectation turn_within: unknown action "shout"`, "warn, notify, auto_close"}},
		{session.Expect(session.TurnWithin, time.Second, ""), []string{"action"}},
		{session.Expect(session.TurnWithin, 0, session.ActionWarn), []string{"within 0s must be positive"}},
		{session.Expect(session.TurnWithin, -time.Second, session.ActionWarn), []string{"-1s"}},
		{&hubpb.Expectation{Name: session.TurnWithin, Action: session.ActionWarn}, []string{"within"}},
		{&hubpb.Expectation{Name: session.TurnWithin, Action: session.ActionWarn, Within: &durationpb.Duration{Seconds: 1, Nanos: -1}}, []string{"within"}},
		{&hubpb.Expectation{Name: session.TurnWithin, Action: session.ActionWarn, Within: &durationpb.Duration{Seconds: math.MaxInt64}}, []string{"within"}},
		{nil, []string{"unknown expectation"}},
	}
	for _, tt := range tests {
		wantErr(t, session.CheckExpectation(tt.e), session.ErrMalformed, tt.frags...)
	}
}

func TestExpect(t *testing.T) {
	e := session.Expect(session.TurnWithin, 1500*time.Millisecond, session.ActionAutoClose)
	want := &hubpb.Expectation{Name: session.TurnWithin, Action: session.ActionAutoClose, Within: &durationpb.Duration{Seconds: 1, Nanos: 5e8}}
	if !proto.Equal(e, want) {
		t.Errorf("Expect = %v, want %v", e, want)
	}
}

func TestExpectationString(t *testing.T) {
	for _, tt := range []struct {
		e    *hubpb.Expectation
		want string
	}{
		{session.Expect(session.TurnWithin, 120*time.Second, session.ActionWarn), "turn_within(2m0s, warn)"},
		{session.Expect(session.AcksWithin, 1500*time.Millisecond, session.ActionAutoClose), "acks_within(1.5s, auto_close)"},
		{session.Expect(session.ReplyWithin, time.Nanosecond, session.ActionNotify), "reply_within(1ns, notify)"},
		{&hubpb.Expectation{Name: session.MaxSilence, Action: session.ActionWarn}, "max_silence(0s, warn)"},
	} {
		if got := session.ExpectationString(tt.e); got != tt.want {
			t.Errorf("ExpectationString = %q, want %q", got, tt.want)
		}
	}
}

// Thresholds are exact in the JSON form: a Duration string, not seconds as
// a float (1.001 s once came back as 1.000999999 s).
func TestExpectationJSON(t *testing.T) {
	for _, tt := range []struct {
		e    *hubpb.Expectation
		json string
	}{
		{session.Expect(session.TurnWithin, 120*time.Second, session.ActionWarn), `{"name":"turn_within","action":"warn","within":"120s"}`},
		{session.Expect(session.AcksWithin, 1500*time.Millisecond, session.ActionAutoClose), `{"name":"acks_within","action":"auto_close","within":"1.500s"}`},
		{session.Expect(session.MaxSilence, 1001*time.Millisecond, session.ActionNotify), `{"name":"max_silence","action":"notify","within":"1.001s"}`},
		{session.Expect(session.ReplyWithin, time.Nanosecond, session.ActionWarn), `{"name":"reply_within","action":"warn","within":"0.000000001s"}`},
	} {
		b, err := hubpb.MarshalJSON(tt.e)
		if err != nil || string(b) != tt.json {
			t.Errorf("MarshalJSON(%v) = %s, %v; want %s", tt.e, b, err, tt.json)
		}
		var back hubpb.Expectation
		if err := hubpb.UnmarshalJSON([]byte(tt.json), &back); err != nil || !proto.Equal(&back, tt.e) {
			t.Errorf("UnmarshalJSON(%s) = %v, %v; want %v", tt.json, &back, err, tt.e)
		}
	}
	// The old form with seconds as a number is refused.
	var e hubpb.Expectation
	if err := hubpb.UnmarshalJSON([]byte(`{"name":"turn_within","seconds":120,"action":"warn"}`), &e); err == nil {
		t.Error(`"seconds" accepted`)
	}
}
