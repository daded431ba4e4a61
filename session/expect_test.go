package session_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hubd/hubd/session"
)

func TestExpectationCheck(t *testing.T) {
	for _, name := range []string{session.TurnWithin, session.ReplyWithin, session.MaxSilence, session.AcksWithin} {
		for _, a := range []session.Action{session.ActionWarn, session.ActionNotify, session.ActionAutoClose} {
			e := session.Expectation{Name: name, Within: time.Nanosecond, Action: a}
			if err := e.Check(); err != nil {
				t.Errorf("%v.Check() = %v", e, err)
			}
		}
	}
	tests := []struct {
		e     session.Expectation
		frags []string
	}{
		{session.Expectation{Name: "nap", Within: time.Second, Action: session.ActionWarn}, []string{`"nap"`, "turn_within, reply_within, max_silence, acks_within"}},
		{session.Expectation{Name: "", Within: time.Second, Action: session.ActionWarn}, []string{`""`}},
		{session.Expectation{Name: session.TurnWithin, Within: time.Second, Action: "shout"}, []string{`"shout"`, "warn, notify, auto_close"}},
		{session.Expectation{Name: session.TurnWithin, Within: time.Second}, []string{"action"}},
		{session.Expectation{Name: session.TurnWithin, Action: session.ActionWarn}, []string{"positive"}},
		{session.Expectation{Name: session.TurnWithin, Within: -time.Second, Action: session.ActionWarn}, []string{"-1s"}},
	}
	for _, tt := range tests {
		wantErr(t, tt.e.Check(), session.ErrMalformed, tt.frags...)
	}
	e := session.Expectation{Name: session.TurnWithin, Within: 120 * time.Second, Action: session.ActionWarn}
	if got := e.String(); got != "turn_within(2m0s, warn)" {
		t.Errorf("String() = %q", got)
	}
	if got := e.CloseReason(); got != "expectation_violated:turn_within" {
		t.Errorf("CloseReason() = %q", got)
	}
}

func TestExpectationJSON(t *testing.T) {
	tests := []struct {
		e    session.Expectation
		json string
	}{
		{session.Expectation{Name: session.TurnWithin, Within: 120 * time.Second, Action: session.ActionWarn}, `{"name":"turn_within","seconds":120,"action":"warn"}`},
		{session.Expectation{Name: session.AcksWithin, Within: 1500 * time.Millisecond, Action: session.ActionAutoClose}, `{"name":"acks_within","seconds":1.5,"action":"auto_close"}`},
		{session.Expectation{Name: session.MaxSilence, Within: 1001 * time.Millisecond, Action: session.ActionNotify}, `{"name":"max_silence","seconds":1.001,"action":"notify"}`},
		{session.Expectation{Name: session.ReplyWithin, Within: time.Nanosecond, Action: session.ActionWarn}, `{"name":"reply_within","seconds":1e-9,"action":"warn"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.e)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tt.e, b, err, tt.json)
		}
		var back session.Expectation
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || back != tt.e {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tt.json, back, err, tt.e)
		}
	}
}

// Every millisecond threshold up to a minute survives the seconds form
// (decoding used to truncate: 1.001 s became 1.000999999 s).
func TestExpectationJSONMillis(t *testing.T) {
	for ms := 1; ms <= 60000; ms++ {
		e := session.Expectation{Name: session.TurnWithin, Within: time.Duration(ms) * time.Millisecond, Action: session.ActionWarn}
		b, _ := json.Marshal(e)
		var back session.Expectation
		if err := json.Unmarshal(b, &back); err != nil || back != e {
			t.Fatalf("%s decodes to %v, %v; want %v", b, back.Within, err, e.Within)
		}
	}
}

func TestExpectationJSONInvalid(t *testing.T) {
	for _, in := range []string{
		`{"name":"turn_within","seconds":120,"action":"warn","extra":1}`, // unknown field
		`{"name":"turn_within","within":120,"action":"warn"}`,
		`{"name":"turn_within","seconds":"120","action":"warn"}`,
		`{"name":"turn_within","seconds":1e300,"action":"warn"}`, // out of range
		`{"name":"turn_within","seconds":-1e300,"action":"warn"}`,
		`{"name":"turn_within","seconds":1e400,"action":"warn"}`,
		`[]`,
		`{"name":"turn_within","seconds":1,"action":"warn"}}`,
	} {
		var e session.Expectation
		// Call the method directly: json.Unmarshal would reject some of
		// these before it.
		wantErr(t, e.UnmarshalJSON([]byte(in)), session.ErrMalformed)
	}
	// Shape and meaning are separate: a zero threshold decodes, Check refuses.
	var e session.Expectation
	if err := json.Unmarshal([]byte(`{"name":"turn_within","seconds":0,"action":"warn"}`), &e); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Check(), session.ErrMalformed)
	// Missing fields decode to zero values.
	if err := json.Unmarshal([]byte(`{}`), &e); err != nil || e != (session.Expectation{}) {
		t.Errorf("{} = %v, %v", e, err)
	}
}
