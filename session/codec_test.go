package session_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/session"
)

func encode(t testing.TB, e *session.Envelope) []byte {
	t.Helper()
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	return b
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range samples() {
		b := encode(t, e)
		got, err := session.DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("%s: DecodeEnvelope: %v", e.Type, err)
		}
		// The samples are already in the decoder's form: no normalising.
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: round trip:\n got %#v\nwant %#v", e.Type, got, e)
		}
		if again := encode(t, got); !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs:\n%x\n%x", e.Type, again, b)
		}
	}
}

func TestCodecZeroAndMinimal(t *testing.T) {
	for _, e := range []*session.Envelope{
		{},
		{Type: session.EventOpened},
		{Type: customType},
		{Type: customType, Payload: session.Custom{}},
		{Type: session.EventText, Payload: session.Text{}},
		{Type: session.EventPacket, Payload: session.Packet{}},
		{Type: session.EventText, Payload: session.Text{Text: "x"}, Audience: session.Only()},
		{Type: session.EventText, Payload: session.Text{Text: "x"}, Call: session.Call{Depth: -1}}, // kept, so Check can report it after a replay
	} {
		got, err := session.DecodeEnvelope(encode(t, e))
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, e)
		}
	}
}

// The codec documents its normal form: empty lists, maps and byte strings
// decode as nil, times decode in UTC.
func TestCodecNormalForm(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	e := header(session.EventViolation, session.Violation{Expectation: "x", Since: t0.In(paris), Violators: []string{}})
	e.Audience = session.Audience{Restricted: true, Names: []string{}}
	e.AcceptedAt = t0.In(paris)
	got, err := session.DecodeEnvelope(encode(t, e))
	if err != nil {
		t.Fatal(err)
	}
	want := header(session.EventViolation, session.Violation{Expectation: "x", Since: t0})
	want.Audience = session.Audience{Restricted: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, p := range []session.Payload{
		session.ContextUpdate{Set: map[string]json.RawMessage{}, Delete: []string{}},
		session.Packet{Context: session.ContextUpdate{Set: map[string]json.RawMessage{}, Delete: []string{}}},
		session.Invite{Invitees: []string{}},
		session.Question{QuestionID: "q", Options: []session.Option{}},
		session.Answer{QuestionID: "q", OptionIDs: []string{}},
		session.Custom{Data: []byte{}},
	} {
		e := &session.Envelope{Type: typeOf(p), Payload: p}
		got, err := session.DecodeEnvelope(encode(t, e))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, normalizeKeepCustom(e)) {
			t.Errorf("%T: got %#v", p, got.Payload)
		}
	}
}

// normalizeKeepCustom is normalize for the codec, which (unlike the JSON
// form) keeps an empty custom payload apart from no payload.
func normalizeKeepCustom(e *session.Envelope) *session.Envelope {
	n := normalize(e)
	if c, ok := e.Payload.(session.Custom); ok {
		n.Payload = session.Custom{Data: nilIfEmptyBytes(c.Data)}
	}
	return n
}

func nilIfEmptyBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func typeOf(p session.Payload) session.EventType {
	for _, e := range samples() {
		if e.Payload != nil && typeName(e.Payload) == typeName(p) {
			return e.Type
		}
	}
	panic(fmt.Sprintf("no sample with a %T", p))
}

func TestCodecAppend(t *testing.T) {
	e := samples()[1]
	prefix := []byte("prefix")
	b, err := e.AppendBinary(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, prefix) || !bytes.Equal(b[len(prefix):], encode(t, e)) {
		t.Errorf("AppendBinary does not append the encoding")
	}
}

// Maps are written in sorted key order, so equal envelopes encode to equal
// bytes whatever the map's insertion history.
func TestCodecDeterministic(t *testing.T) {
	var first []byte
	for i := range 20 {
		set := map[string]json.RawMessage{}
		for j := range 10 {
			k := (i + j) % 10
			set[fmt.Sprintf("k%d", k)] = session.MustJSON(k)
		}
		b := encode(t, &session.Envelope{Type: session.EventContextSet, Payload: session.ContextUpdate{Set: set}})
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatal("two encodings of one context update differ")
		}
	}
}

func TestDecodeTruncated(t *testing.T) {
	for _, e := range samples() {
		b := encode(t, e)
		for i := range b {
			if _, err := session.DecodeEnvelope(b[:i]); err == nil {
				t.Fatalf("%s: DecodeEnvelope of the first %d of %d bytes succeeded", e.Type, i, len(b))
			} else {
				wantErr(t, err, session.ErrCorrupt)
			}
		}
	}
}

func TestDecodeTrailing(t *testing.T) {
	for _, e := range samples() {
		b := encode(t, e)
		for _, extra := range [][]byte{{0}, {1}, b} {
			_, err := session.DecodeEnvelope(append(bytes.Clone(b), extra...))
			wantErr(t, err, session.ErrCorrupt, "trailing")
		}
	}
}

func TestDecodeVersion(t *testing.T) {
	b := encode(t, samples()[0])
	if b[0] != 1 {
		t.Fatalf("version byte %d, want 1", b[0])
	}
	for _, v := range []byte{0, 2, 0xff} {
		c := bytes.Clone(b)
		c[0] = v
		_, err := session.DecodeEnvelope(c)
		wantErr(t, err, session.ErrCorrupt, "version")
	}
}

func TestDecodeCorrupt(t *testing.T) {
	// {Type: opened}: version, session id, seq, id, from, audience flag at
	// byte 35, type, causation, strings, depth, time, payload flag last.
	opened := encode(t, &session.Envelope{Type: session.EventOpened})
	if opened[35] != 0 || opened[len(opened)-1] != 0 {
		t.Fatalf("unexpected layout %x", opened)
	}
	mut := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	set := encode(t, &session.Envelope{Type: session.EventContextSet, Payload: session.ContextUpdate{Set: map[string]json.RawMessage{"a": session.MustJSON(1), "b": session.MustJSON(2)}}})
	dupKey := bytes.Replace(set, []byte{1, 'b', 1, '2'}, []byte{1, 'a', 1, '2'}, 1)
	if bytes.Equal(dupKey, set) {
		t.Fatal("could not build a duplicate key")
	}
	tests := []struct {
		name string
		b    []byte
		frag string
	}{
		{"empty", nil, "need 1 bytes"},
		{"audience flag 2", mut(opened, 35, 2), "flag byte 2"},
		{"payload flag 2", mut(opened, len(opened)-1, 2), "flag byte 2"},
		{"payload flag 0xff", mut(opened, len(opened)-1, 0xff), "flag byte 255"},
		{"payload on a dataless type", append(mut(opened, len(opened)-1, 1), 0), "carries no payload"},
		{"duplicate context key", dupKey, `"a" twice`},
		{"length past the end", append(opened[:34:34], 0x7f), "exceeds"},
		{"overlong uvarint", append(opened[:17:17], bytes.Repeat([]byte{0xff}, 11)...), "uvarint"},
	}
	for _, tt := range tests {
		_, err := session.DecodeEnvelope(tt.b)
		t.Run(tt.name, func(t *testing.T) { wantErr(t, err, session.ErrCorrupt, tt.frag) })
	}
}

// TestCodecGolden checks the stored form against testdata/envelopes_v1.txt:
// records written by this version must decode forever. Run with -rewrite
// after a deliberate format change (and bump the codec version).
func TestCodecGolden(t *testing.T) {
	const file = "testdata/envelopes_v1.txt"
	var out strings.Builder
	out.WriteString("# The stored form (codec version 1) of samples() in helpers_test.go.\n# Regenerate with: go test ./session -run TestCodecGolden -rewrite\n")
	for _, e := range samples() {
		fmt.Fprintf(&out, "%s %x\n", e.Type, encode(t, e))
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[session.EventType]*session.Envelope{}
	for _, e := range samples() {
		want[e.Type] = e
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		ty, hx, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		got, err := session.DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("%s: stored record no longer decodes: %v", ty, err)
		}
		if !reflect.DeepEqual(got, want[session.EventType(ty)]) {
			t.Errorf("%s: stored record decodes to\n%#v\nwant\n%#v", ty, got, want[session.EventType(ty)])
		}
		if !bytes.Equal(encode(t, got), b) {
			t.Errorf("%s: re-encoding differs from the stored record", ty)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("%s has %d records, want %d (run with -rewrite?)", file, n, len(want))
	}
}
