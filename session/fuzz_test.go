package session_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hubd/hubd/session"
)

// FuzzDecodeEnvelope: decoding never panics, and whatever decodes is a fixed
// point: its encoding decodes to a DeepEqual envelope and encodes again to
// the same bytes.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, e := range samples() {
		b, _ := e.MarshalBinary()
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, e := range []*session.Envelope{{}, {Type: session.EventOpened}, {Type: customType, Payload: session.Custom{}}} {
		b, _ := e.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := session.DecodeEnvelope(b)
		if err != nil {
			return
		}
		b1, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary of a decoded envelope: %v", err)
		}
		e2, err := session.DecodeEnvelope(b1)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", b1, err)
		}
		sameEnvelope(t, "decode(encode(decode(x)))", e, e2) // NaNs: the bytes below are exact
		b2, _ := e2.MarshalBinary()
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%x\n%x", b1, b2)
		}
	})
}

// FuzzEnvelopeJSON: unmarshalling never panics, and what unmarshals
// marshals to a form that unmarshals to the same envelope (up to the
// equalities normalize documents) and marshals to the same bytes again.
func FuzzEnvelopeJSON(f *testing.F) {
	for _, e := range samples() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	for _, s := range []string{
		`{"type":"text","text":"hi"}`,
		`{"type":"EV_PACKET","body":"b","routing":{"kind":"handoff","tool":"t"},"context_updates":{"set":{"k":1.0},"delete":[]}}`,
		`{"type":"context_set","set":{"o":{"b":1,"a":[1e0]}}}`,
		`{"type":"x","data":""}`,
		`{"type":"text","text":"x","audience":[]}`,
		`{"type":"text","text":"x","audience":null}`,
		`{"type":"question","question_id":"q","options":[]}`,
		`{"type":"session_closed","reason":"r","accepted_at":"2026-01-02T03:04:05+01:00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e session.Envelope
		if err := json.Unmarshal(b, &e); err != nil {
			return
		}
		b1, err := json.Marshal(&e)
		if err != nil {
			t.Fatalf("Marshal of an unmarshalled envelope: %v", err)
		}
		var e2 session.Envelope
		if err := json.Unmarshal(b1, &e2); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b1, err)
		}
		sameEnvelope(t, "unmarshal(marshal(e))", &e, &e2)
		b2, _ := json.Marshal(&e2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%s\n%s", b1, b2)
		}
		// What the JSON form accepts, the binary form carries.
		bin, _ := e2.MarshalBinary()
		e3, err := session.DecodeEnvelope(bin)
		if err != nil {
			t.Fatalf("binary form of %s: %v", b1, err)
		}
		sameEnvelope(t, "binary(unmarshal(x))", &e2, e3)
	})
}

// FuzzCanonicalJSON: the canonical form is canonical (idempotent), valid
// JSON, and the same value.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`null`, `true`, `"a\u00e9<"`, `1`, `1.0`, `1e0`, `-0`, `-0.0`, `1e-7`, `12345678901234567890123`,
		`9007199254740993.0`, `1e300`, `[1,2.50,{"b":1,"a":2}]`, ` { "z" : [ ] , "a" : { } } `, `1]`, `1 2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := session.CanonicalJSON(b)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("CanonicalJSON(%q) = %q, not JSON", b, c)
		}
		if !json.Valid(b) {
			t.Fatalf("CanonicalJSON accepted invalid JSON %q", b)
		}
		c2, err := session.CanonicalJSON(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", b, c, c2, err)
		}
	})
}
