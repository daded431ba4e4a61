package logv1_test

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/logv1"
	"github.com/hubd/hubd/session"
)

// enc writes version-1 fields the way version 1's writer did, to build
// records the golden file lacks.
type enc []byte

func (w enc) byte(c byte) enc       { return append(w, c) }
func (w enc) raw16(id [16]byte) enc { return append(w, id[:]...) }
func (w enc) uvarint(v uint64) enc  { return binary.AppendUvarint(w, v) }
func (w enc) varint(v int64) enc    { return binary.AppendVarint(w, v) }
func (w enc) f64(v float64) enc     { return binary.BigEndian.AppendUint64(w, math.Float64bits(v)) }
func (w enc) str(s string) enc      { return append(w.uvarint(uint64(len(s))), s...) }
func (w enc) strs(ss ...string) enc {
	w = w.uvarint(uint64(len(ss)))
	for _, s := range ss {
		w = w.str(s)
	}
	return w
}

// head is a version-1 header of type t with every id zero, no audience, no
// call and no time, up to (not including) the payload flag.
func head(t string) enc {
	var zero [16]byte
	return enc{logv1.CodecVersion}.raw16(zero).uvarint(1).raw16(zero).str("alice").byte(0).
		str(t).raw16(zero).str("").str("").str("").str("").uvarint(0).str("").varint(0)
}

// zeroPacket is a packet payload with every field zero.
func zeroPacket() enc {
	return head("packet").byte(1).str("").str("").str("").str("").str("").str("").strs().uvarint(0).
		varint(0).varint(0).f64(0)
}

// TestEnvelopeZeroFields checks version 1's wire mapping of zero values:
// zero ids are "", no time is unset, a zero call, routing, context update
// or usage is unset, an audience flag with no names is an empty audience,
// and a custom payload present but empty is empty bytes.
func TestEnvelopeZeroFields(t *testing.T) {
	base := func(typ string) *hubpb.Envelope { return &hubpb.Envelope{Seq: 1, From: "alice", Type: typ} }
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		b    enc
		want *hubpb.Envelope
	}{
		{"opened", head("session_opened").byte(0), base("session_opened")},
		{"custom without payload", head("app.x").byte(0), base("app.x")},
		{"custom empty", head("app.x").byte(1).uvarint(0), func() *hubpb.Envelope {
			e := base("app.x")
			e.Payload = &hubpb.Envelope_Custom{Custom: []byte{}}
			return e
		}()},
		{"text empty", head("text").byte(1).str(""), func() *hubpb.Envelope {
			e := base("text")
			e.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{}}
			return e
		}()},
		{"packet zero", zeroPacket(), func() *hubpb.Envelope {
			e := base("packet")
			e.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{}}
			return e
		}()},
		{"packet usage -0", append(zeroPacket()[:len(zeroPacket())-8:len(zeroPacket())-8], enc(nil).f64(negZero)...), func() *hubpb.Envelope {
			e := base("packet")
			e.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{}}
			return e
		}()},
		{"context set empty", head("context_set").byte(1).strs().uvarint(0), func() *hubpb.Envelope {
			e := base("context_set")
			e.Payload = &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{}}
			return e
		}()},
		{"audience nobody", func() enc {
			var zero [16]byte
			return enc{1}.raw16(zero).uvarint(1).raw16(zero).str("alice").byte(1).strs().
				str("session_opened").raw16(zero).str("").str("").str("").str("").uvarint(0).str("").varint(0).byte(0)
		}(), func() *hubpb.Envelope {
			e := base("session_opened")
			e.Audience = &hubpb.Audience{}
			return e
		}()},
		{"delegation zero child", head("delegation_result").byte(1).raw16([16]byte{}).str("finished").str(""), func() *hubpb.Envelope {
			e := base("delegation_result")
			e.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{Reason: "finished"}}
			return e
		}()},
		{"not UTF-8", head("text").byte(1).str("a\xff\xfeb"), func() *hubpb.Envelope {
			e := base("text")
			e.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "a\uFFFDb"}}
			return e
		}()},
		{"negative depth kept", func() enc {
			var zero [16]byte
			return enc{1}.raw16(zero).uvarint(1).raw16(zero).str("alice").byte(0).
				str("session_opened").raw16(zero).str("").str("").str("").str("").uvarint(math.MaxUint64).str("").varint(0).byte(0)
		}(), func() *hubpb.Envelope {
			e := base("session_opened")
			e.Call = &hubpb.Call{Depth: -1}
			return e
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logv1.DecodeEnvelope(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			sameMessage(t, tc.name, got, tc.want)
		})
	}
}

func TestEnvelopeErrors(t *testing.T) {
	tests := []struct {
		name, want string
		b          enc
	}{
		{"empty", "need 1 bytes", nil},
		{"codec version 2", "codec version 2", enc{2}},
		{"flag 2", "flag byte 2", head("text").byte(2)},
		{"ack with payload", "carries no payload", head("session_invite_ack").byte(1)},
		{"opened with payload", "carries no payload", head("session_opened").byte(1)},
		{"bad context value", "context value", head("context_set").byte(1).strs().uvarint(1).str("k").str("{nope")},
		{"empty context value", "context value", head("context_set").byte(1).strs().uvarint(1).str("k").str("")},
		{"context key twice", "twice", head("context_set").byte(1).strs().uvarint(2).str("k").str("1").str("k").str("2")},
		{"index out of range", "out of range", head("expectation_violated").byte(1).str("x").varint(1 << 40)},
		{"length past the end", "exceeds", head("text").byte(1).uvarint(1000)},
		{"bad uvarint", "bad uvarint", enc{1}.raw16([16]byte{}).byte(0x80)},
		{"trailing", "trailing", head("session_opened").byte(0).byte(0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := logv1.DecodeEnvelope(tc.b)
			wantCorrupt(t, tc.name, err)
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestMetaErrors(t *testing.T) {
	const ok = `{"id":"01890a5d-ac96-774b-bcce-b302099a8057","type":"conversation@1","creator":"a","participants":[{"name":"a"}]`
	tests := []struct{ name, json, want string }{
		{"not JSON", `nope`, "invalid character"},
		{"not an object", `[1]`, "cannot unmarshal"},
		{"unknown field", ok + `,"colour":"red"}`, "unknown field"},
		{"unknown participant field", `{"participants":[{"name":"a","x":1}]}`, "unknown field"},
		{"unknown expectation field", `{"expectations":[{"name":"turn_within","seconds":1,"action":"warn","x":1}]}`, "unknown field"},
		{"trailing data", ok + `} {}`, "trailing data"},
		{"bad id", `{"id":"nope","type":"a"}`, "id \"nope\""},
		{"bad parent", `{"type":"a","parent":"nope"}`, "parent"},
		{"bad root", `{"type":"a","root":"nope"}`, "root"},
		{"no type", `{"id":""}`, "session type"},
		{"type without kind", `{"type":"@2"}`, "session type"},
		{"type version 0", `{"type":"a@0"}`, "session type"},
		{"ttl not an integer", `{"type":"a","ttl":1.5}`, "cannot unmarshal"},
		{"depth out of range", `{"type":"a","depth":4294967296}`, "depth"},
		{"seconds out of range", `{"type":"a","expectations":[{"name":"turn_within","seconds":1e300,"action":"warn"}]}`, "out of range"},
		{"bad created_at", `{"type":"a","created_at":"yesterday"}`, "parsing time"},
		{"huge knob number", `{"type":"a","knobs":{"k":1e999}}`, "knob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := logv1.DecodeMeta([]byte(tc.json))
			wantCorrupt(t, tc.name, err)
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestMetaZeroFields checks the mapping of absent and zero fields: no
// durations, times or ids, and "" or the zero UUID as no session.
func TestMetaZeroFields(t *testing.T) {
	got, err := logv1.DecodeMeta([]byte(`{"id":"00000000-0000-0000-0000-000000000000","type":"consulting","creator":"",` +
		`"participants":null,"knobs":{},"labels":{},"ttl":0,"parent":"","created_at":"0001-01-01T00:00:00Z",` +
		`"expectations":[{"name":"max_silence","seconds":0.0000000015,"action":"warn"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &hubpb.SessionMeta{Type: "consulting@1",
		Expectations: []*hubpb.Expectation{session.Expect("max_silence", 2, "warn")}}
	sameMessage(t, "zero meta", got, want)
	// Knob values keep their JSON meaning, numbers as doubles.
	got, err = logv1.DecodeMeta([]byte(`{"type":"a","knobs":{"n":1.0e2,"s":"<x>","l":[true,null]}}`))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := structpb.NewList([]any{true, nil})
	sameMessage(t, "knobs", got, &hubpb.SessionMeta{Type: "a@1", Knobs: map[string]*structpb.Value{
		"n": structpb.NewNumberValue(100), "s": structpb.NewStringValue("<x>"), "l": structpb.NewListValue(l)}})
}

// FuzzDecodeEnvelope: no input panics; an error wraps ErrCorrupt; a
// decoded envelope has a version-2 stored form that decodes back to it.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, b := range goldenBytes(f) {
		f.Add(b)
	}
	f.Add([]byte(zeroPacket()))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := logv1.DecodeEnvelope(b)
		if err != nil {
			wantCorrupt(t, "fuzzed envelope", err)
			return
		}
		v2, err := session.MarshalEnvelope(e)
		if err != nil {
			t.Fatalf("decoded envelope has no stored form: %v", err)
		}
		back, err := session.UnmarshalEnvelope(v2)
		if err != nil {
			t.Fatal(err)
		}
		sameMessage(t, "round trip", back, e)
	})
}

// FuzzDecodeMeta: no input panics; an error wraps ErrCorrupt; decoded
// metadata has a version-2 stored form.
func FuzzDecodeMeta(f *testing.F) {
	for _, l := range golden(f, "testdata/meta_v1.txt") {
		f.Add([]byte(l[1]))
	}
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := logv1.DecodeMeta(b)
		if err != nil {
			wantCorrupt(t, "fuzzed metadata", err)
			return
		}
		if _, err := session.MarshalMeta(m); err != nil {
			t.Fatalf("decoded metadata has no stored form: %v", err)
		}
	})
}
