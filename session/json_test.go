package session_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/session"
)

func marshalEnv(t testing.TB, e *session.Envelope) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return b
}

func unmarshalEnv(b []byte) (*session.Envelope, error) {
	var e session.Envelope
	err := json.Unmarshal(b, &e)
	return &e, err
}

func TestJSONRoundTrip(t *testing.T) {
	for _, e := range samples() {
		b := marshalEnv(t, e)
		got, err := unmarshalEnv(b)
		if err != nil {
			t.Fatalf("%s: Unmarshal(%s): %v", e.Type, b, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: round trip of %s:\n got %#v\nwant %#v", e.Type, b, got, e)
		}
		// The JSON and binary forms carry the same fields.
		bin, err := session.DecodeEnvelope(encode(t, got))
		if err != nil || !reflect.DeepEqual(bin, e) {
			t.Errorf("%s: JSON then binary: %#v, %v", e.Type, bin, err)
		}
	}
}

// The doc comment's example, both ways.
func TestJSONFlatForm(t *testing.T) {
	const doc = `{"seq":3,"from":"alice","type":"packet","body":"over to you","routing":{"kind":"handoff","tool":"transfer_to_bob"}}`
	e, err := unmarshalEnv([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := &session.Envelope{Seq: 3, From: "alice", Type: session.EventPacket,
		Payload: session.Packet{Body: "over to you", Routing: session.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"}}}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("got %#v", e)
	}
	if b := marshalEnv(t, e); string(b) != doc {
		t.Errorf("Marshal = %s\nwant      %s", b, doc)
	}

	tests := []struct {
		e    *session.Envelope
		json string
	}{
		{&session.Envelope{Type: session.EventOpened}, `{"type":"session_opened"}`},
		{&session.Envelope{Type: customType}, `{"type":"app.note"}`},
		{&session.Envelope{Type: customType, Payload: session.Custom{Data: []byte("hi")}}, `{"type":"app.note","data":"aGk="}`},
		{&session.Envelope{Type: session.EventText, Payload: session.Text{}}, `{"type":"text","text":""}`},
		{&session.Envelope{Type: session.EventPacket, Payload: session.Packet{}}, `{"type":"packet"}`},
		{&session.Envelope{Type: session.EventClosed, Payload: session.Ended{Reason: "max_turns"}, AcceptedAt: t0},
			`{"type":"session_closed","accepted_at":"2026-01-02T03:04:05.000000006Z","reason":"max_turns"}`},
		{&session.Envelope{Type: session.EventText, Payload: session.Text{Text: "x"}, Call: session.Call{Root: "r"}},
			`{"type":"text","call":{"root":"r"},"text":"x"}`},
	}
	for _, tt := range tests {
		if b := marshalEnv(t, tt.e); string(b) != tt.json {
			t.Errorf("Marshal(%#v) = %s, want %s", tt.e, b, tt.json)
		}
		got, err := unmarshalEnv([]byte(tt.json))
		if err != nil || !reflect.DeepEqual(got, tt.e) {
			t.Errorf("Unmarshal(%s) = %#v, %v", tt.json, got, err)
		}
	}
}

func TestJSONAudience(t *testing.T) {
	tests := []struct {
		in   string
		want session.Audience
		out  string // the audience part of the marshalled form
	}{
		{`{"type":"text","text":"x"}`, session.Everyone(), ``},
		{`{"type":"text","text":"x","audience":null}`, session.Everyone(), ``},
		{`{"type":"text","text":"x","audience":[]}`, session.Audience{Restricted: true, Names: []string{}}, `"audience":[]`},
		{`{"type":"text","text":"x","audience":["bob","carol"]}`, session.Only("bob", "carol"), `"audience":["bob","carol"]`},
	}
	for _, tt := range tests {
		e, err := unmarshalEnv([]byte(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if !reflect.DeepEqual(e.Audience, tt.want) {
			t.Errorf("%s: audience %#v, want %#v", tt.in, e.Audience, tt.want)
		}
		b := string(marshalEnv(t, e))
		if tt.out == "" && strings.Contains(b, "audience") || tt.out != "" && !strings.Contains(b, tt.out) {
			t.Errorf("%s marshals to %s, want %q in it", tt.in, b, tt.out)
		}
	}
	// A restricted audience with nil names is log-only, written [].
	b := marshalEnv(t, &session.Envelope{Type: session.EventOpened, Audience: session.Audience{Restricted: true}})
	if string(b) != `{"audience":[],"type":"session_opened"}` {
		t.Errorf("log-only audience = %s", b)
	}
}

func TestJSONContextCanonical(t *testing.T) {
	e, err := unmarshalEnv([]byte(`{"type":"context_set","set":{"o":{ "b" : 1.0, "a": [1e0, "x"] },"n":2.50,"s":"<"},"delete":["d"]}`))
	if err != nil {
		t.Fatal(err)
	}
	u := e.Payload.(session.ContextUpdate)
	if got := string(u.Set["o"]); got != `{"a":[1,"x"],"b":1}` {
		t.Errorf("o = %s", got)
	}
	if got := string(u.Set["n"]); got != `2.5` {
		t.Errorf("n = %s", got)
	}
	if got := string(u.Set["s"]); got != `"<"` {
		t.Errorf("s = %s", got)
	}
	if err := e.Check(); err != nil {
		t.Errorf("a decoded context_set does not check: %v", err)
	}
	p, err := unmarshalEnv([]byte(`{"type":"packet","body":"b","context_updates":{"set":{"k":1.0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Payload.(session.Packet).Context.Set["k"]); got != `1` {
		t.Errorf("packet context k = %s", got)
	}
	if err := p.Check(); err != nil {
		t.Errorf("a decoded packet does not check: %v", err)
	}
}

func TestJSONTimesUTC(t *testing.T) {
	for _, ts := range []string{"2026-01-02T04:04:05.000000006+01:00", "2026-01-02T03:04:05.000000006+00:00", "2026-01-02T03:04:05.000000006Z"} {
		e, err := unmarshalEnv([]byte(`{"type":"expectation_violated","accepted_at":"` + ts + `","expectation":"x","index":0,"action":"warn","since":"` + ts + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		since := e.Payload.(session.Violation).Since
		if e.AcceptedAt != t0 || since != t0 {
			t.Errorf("%s decodes to %v and %v, want %v (UTC)", ts, e.AcceptedAt, since, t0)
		}
	}
}

func TestJSONEventTypeSpellings(t *testing.T) {
	e, err := unmarshalEnv([]byte(`{"type":"EV_TEXT","text":"hi"}`))
	if err != nil || e.Type != session.EventText {
		t.Fatalf("EV_TEXT: %v, %v", e.Type, err)
	}
	e, err = unmarshalEnv([]byte(`{"type":"EV_SESSION_CLOSED","reason":"x"}`))
	if err != nil || e.Type != session.EventClosed || e.Payload != (session.Ended{Reason: "x"}) {
		t.Fatalf("EV_SESSION_CLOSED: %#v, %v", e, err)
	}
}

func TestJSONStrict(t *testing.T) {
	tests := []struct {
		in    string
		frags []string
	}{
		{`{"type":"text","text":"hi","body":"x"}`, []string{"body"}},
		{`{"type":"packet","body":"x","text":"hi"}`, []string{"text"}},
		{`{"type":"text","text":"hi","sender":"bob"}`, []string{"sender"}},
		{`{"type":"text","text":"hi","session_id":""}`, []string{"session_id"}},
		{`{"type":"session_opened","reason":"x"}`, []string{"carries no data", "reason"}},
		{`{"type":"session_invite_ack","text":"ok","extra":1}`, []string{"extra, text"}},
		{`{"type":"app.note","text":"x"}`, []string{"text"}},
		{`{"type":"packet","routing":{"kind":"text","bogus":1}}`, []string{"bogus"}},
		{`{"type":"packet","context_updates":{"set":{},"unset":[]}}`, []string{"unset"}},
		{`{"type":"question","question_id":"q","options":[{"id":"a","label":"A","color":"red"}]}`, []string{"color"}},
		{`{"type":"text","text":1}`, []string{"text"}},
		{`{"type":"text","text":"x","seq":"1"}`, []string{"seq"}},
		{`{"type":"text","text":"x","seq":-1}`, []string{"seq"}},
		{`{"type":"text","text":"x","session":"not-a-uuid"}`, nil},
		{`{"type":"text","text":"x","accepted_at":"yesterday"}`, nil},
		{`{"type":"text","text":"x","call":{"id":"a","extra":1}}`, []string{"extra"}},
		{`{"type":"text","text":"x","audience":"bob"}`, []string{"audience"}},
		{`{"type":"text","text":"x","audience":[1]}`, []string{"audience"}},
		{`{"type":"context_set","set":{"n":1e400}}`, []string{`"n"`}},
		{`{"type":"packet","context_updates":{"set":{"n":1e400}}}`, []string{`"n"`}},
		{`{"text":"no type"}`, []string{"empty"}},
		{`{"type":"","text":"x"}`, []string{"empty"}},
		{`{"type":"has space"}`, []string{"space"}},
		{`{"type":1}`, nil},
		{`[]`, nil},
		{`"text"`, nil},
		{`{"type":"text","text":"x"}}`, nil}, // trailing data: only through UnmarshalJSON directly
	}
	for _, tt := range tests {
		var e session.Envelope
		err := e.UnmarshalJSON([]byte(tt.in))
		if err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded: %#v", tt.in, e)
			continue
		}
		wantErr(t, err, session.ErrMalformed, tt.frags...)
	}
}

// Decoding resets the envelope: nothing of a previous value survives.
func TestJSONUnmarshalResets(t *testing.T) {
	e := samples()[1]
	if err := json.Unmarshal([]byte(`{"type":"text","text":"x"}`), e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, &session.Envelope{Type: session.EventText, Payload: session.Text{Text: "x"}}) {
		t.Errorf("got %#v", e)
	}
}

func TestJSONRoundTripTimesWithoutZone(t *testing.T) {
	e := header(session.EventText, session.Text{Text: "x"})
	e.AcceptedAt = time.Time{}
	got, err := unmarshalEnv(marshalEnv(t, e))
	if err != nil || !got.AcceptedAt.IsZero() || strings.Contains(string(marshalEnv(t, e)), "accepted_at") {
		t.Errorf("zero accepted_at: %v, %v", got.AcceptedAt, err)
	}
}

// Times the stored form cannot hold (Unix nanoseconds, 0 meaning none) are
// refused, so the JSON and binary forms always agree.
func TestJSONTimeRange(t *testing.T) {
	for _, in := range []string{
		`{"type":"text","text":"x","accepted_at":"0000-01-01T00:00:00Z"}`,
		`{"type":"text","text":"x","accepted_at":"1970-01-01T00:00:00Z"}`,
		`{"type":"text","text":"x","accepted_at":"2300-01-01T00:00:00Z"}`,
		`{"type":"expectation_violated","expectation":"turn_within","action":"warn","since":"1600-01-01T00:00:00Z"}`,
	} {
		var e session.Envelope
		if err := json.Unmarshal([]byte(in), &e); !errors.Is(err, session.ErrMalformed) {
			t.Errorf("%s: %v", in, err)
		}
	}
	var e session.Envelope
	if err := json.Unmarshal([]byte(`{"type":"text","text":"x","accepted_at":"2026-01-01T00:00:00Z"}`), &e); err != nil {
		t.Error(err)
	}
}
