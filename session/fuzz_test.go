package session_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// withoutUnknown returns a copy of e without the fields this version does
// not know, at any depth (what the JSON form cannot carry), and false when
// the unknown bytes are ones protobuf's own decoder refuses (the stored
// form is read by vtprotobuf's decoder, which keeps some of those as
// unknown bytes; only a damaged record can hold them).
func withoutUnknown(t *testing.T, e *hubpb.Envelope) (*hubpb.Envelope, bool) {
	b, err := session.MarshalEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	out := &hubpb.Envelope{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		return nil, false
	}
	return out, true
}

// FuzzUnmarshalEnvelope: decoding the stored form never panics; whatever
// decodes is a fixed point of encode and decode (unknown fields included);
// and an envelope CheckEnvelope accepts has a JSON form that parses back to
// an equal envelope.
func FuzzUnmarshalEnvelope(f *testing.F) {
	for _, s := range samples() {
		b, _ := session.MarshalEnvelope(s.e)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(b, newer()...))
	}
	for _, e := range []*hubpb.Envelope{{}, {Type: session.EventOpened}, with(&hubpb.Envelope{Type: customType}, []byte{})} {
		b, _ := session.MarshalEnvelope(e)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := session.UnmarshalEnvelope(b)
		if err != nil {
			return
		}
		b1, err := session.MarshalEnvelope(e)
		if err != nil {
			// Reads do not check strings for UTF-8 (TestStoredUTF8); writes
			// refuse them, and nothing else may fail.
			if !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("MarshalEnvelope of a decoded envelope: %v", err)
			}
			return
		}
		e2, err := session.UnmarshalEnvelope(b1)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", b1, err)
		}
		if !proto.Equal(e, e2) {
			t.Fatalf("decode(encode(e)) != e:\n%v\n%v", e, e2)
		}
		if b2, _ := session.MarshalEnvelope(e2); !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%x\n%x", b1, b2)
		}
		if session.CheckEnvelope(e) != nil {
			return
		}
		j, err := hubpb.MarshalJSON(e)
		if err != nil {
			t.Fatalf("JSON form of a valid envelope %v: %v", e, err)
		}
		var back hubpb.Envelope
		if err := hubpb.UnmarshalJSON(j, &back); err != nil {
			t.Fatalf("the JSON form %s does not parse: %v", j, err)
		}
		if known, ok := withoutUnknown(t, e); ok && !proto.Equal(&back, known) {
			t.Fatalf("the JSON form %s parses to\n%v\nwant\n%v", j, &back, known)
		}
	})
}

// FuzzEnvelopeJSON: parsing the JSON form never panics, and what parses
// prints to a form that parses to an equal envelope and prints to the same
// bytes again; its stored form gives it back too.
func FuzzEnvelopeJSON(f *testing.F) {
	for _, s := range samples() {
		b, _ := hubpb.MarshalJSON(s.e)
		f.Add(b)
	}
	for _, s := range []string{
		`{"type":"text","text":{"text":"hi"}}`,
		`{"type":"EV_PACKET","packet":{"body":"b","routing":{"kind":"handoff","tool":"t"},"context_updates":{"set":{"k":1.0},"delete":[]}}}`,
		`{"type":"context_set","context_set":{"set":{"o":{"b":1,"a":[1e0]}}}}`,
		`{"type":"x","custom":""}`,
		`{"type":"text","text":{"text":"x"},"audience":{}}`,
		`{"type":"text","text":{"text":"x"},"audience":null}`,
		`{"type":"question","question":{"questionId":"q","options":[]}}`,
		`{"type":"session_closed","ended":{"reason":"r"},"accepted_at":"2026-01-02T03:04:05+01:00","seq":3}`,
		`{"type":"task_progress","task_progress":{"percent":"NaN"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e hubpb.Envelope
		if err := hubpb.UnmarshalJSON(b, &e); err != nil {
			return
		}
		b1, err := hubpb.MarshalJSON(&e)
		if err != nil {
			t.Fatalf("MarshalJSON of a parsed envelope: %v", err)
		}
		var e2 hubpb.Envelope
		if err := hubpb.UnmarshalJSON(b1, &e2); err != nil {
			t.Fatalf("UnmarshalJSON(%s): %v", b1, err)
		}
		if !proto.Equal(&e, &e2) {
			t.Fatalf("parse(print(e)) != e:\n%v\n%v", &e, &e2)
		}
		if b2, _ := hubpb.MarshalJSON(&e2); !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%s\n%s", b1, b2)
		}
		stored, err := session.MarshalEnvelope(&e2)
		if err != nil {
			t.Fatalf("stored form of %s: %v", b1, err)
		}
		if e3, err := session.UnmarshalEnvelope(stored); err != nil || !proto.Equal(e3, &e2) {
			t.Fatalf("stored form of %s gives %v, %v", b1, e3, err)
		}
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

// FuzzValueJSON: JSONValue never panics; what it parses prints (ValueJSON)
// to a canonical form that parses back to an equal value and prints the
// same again. A value as a client sends it (parsed as it is, a negative
// zero kept) has CanonicalValue the same bytes as that form's.
func FuzzValueJSON(f *testing.F) {
	for _, s := range []string{
		`null`, `true`, `"a\u00e9<\u2028"`, `1`, `1.0`, `-0`, `1e-7`, `12345678901234567890123`, `1127000000000000.1`,
		`1e300`, `5e-324`, `[1,2.50,{"b":1,"a":2}]`, ` { "z" : [ ] , "a" : { } } `, `[[[[[[1]]]]]]`, `1]`, `NaN`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sent := &structpb.Value{}
		if protojson.Unmarshal(b, sent) == nil && session.CheckValue(sent) == nil {
			raw, _ := session.ValueJSON(sent)
			want, err := session.JSONValue(raw)
			got := session.CanonicalValue(sent)
			if err != nil || !bytes.Equal(storedForm(t, got), storedForm(t, want)) {
				t.Fatalf("CanonicalValue of %q is %v; the stored form of %s is %v (%v)", b, got, raw, want, err)
			}
		}
		v, err := session.JSONValue(b)
		if err != nil {
			return
		}
		c, err := session.ValueJSON(v)
		if err != nil {
			t.Fatalf("ValueJSON of JSONValue(%q): %v", b, err)
		}
		if canon, err := session.CanonicalJSON(c); err != nil || !bytes.Equal(canon, c) {
			t.Fatalf("ValueJSON gives %q, not canonical (%q, %v)", c, canon, err)
		}
		v2, err := session.JSONValue(c)
		if err != nil || !proto.Equal(v, v2) {
			t.Fatalf("JSONValue(%q) = %v, %v; want %v", c, v2, err, v)
		}
		if c2, err := session.ValueJSON(v2); err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", b, c, c2, err)
		}
	})
}
