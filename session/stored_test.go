package session_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func marshal(t testing.TB, e *hubpb.Envelope) []byte {
	t.Helper()
	b, err := session.MarshalEnvelope(e)
	if err != nil {
		t.Fatalf("MarshalEnvelope: %v", err)
	}
	return b
}

func TestStoredRoundTrip(t *testing.T) {
	for _, s := range samples() {
		b := marshal(t, s.e)
		got, err := session.UnmarshalEnvelope(b)
		if err != nil {
			t.Fatalf("%s: UnmarshalEnvelope: %v", s.name, err)
		}
		if !proto.Equal(got, s.e) {
			t.Errorf("%s: round trip:\n got %v\nwant %v", s.name, got, s.e)
		}
		if again := marshal(t, got); !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs:\n%x\n%x", s.name, again, b)
		}
	}
}

// What the stored form keeps apart: no audience (everyone) from an empty
// one (log only), an empty custom payload from none; and it keeps what
// CheckEnvelope refuses, so a replay can report it.
func TestStoredEdges(t *testing.T) {
	for _, e := range []*hubpb.Envelope{
		{},
		{Type: session.EventOpened},
		{Type: customType},
		with(&hubpb.Envelope{Type: customType}, []byte{}),
		with(&hubpb.Envelope{Type: session.EventText}, &hubpb.Text{}),
		with(&hubpb.Envelope{Type: session.EventPacket}, &hubpb.Packet{}),
		with(&hubpb.Envelope{Type: session.EventText, Audience: session.Only()}, &hubpb.Text{Text: "x"}),
		with(&hubpb.Envelope{Type: session.EventText, Call: &hubpb.Call{Depth: -1}}, &hubpb.Text{Text: "x"}),
	} {
		got, err := session.UnmarshalEnvelope(marshal(t, e))
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		if !proto.Equal(got, e) {
			t.Errorf("round trip:\n got %v\nwant %v", got, e)
		}
		if (got.GetAudience() == nil) != (e.GetAudience() == nil) {
			t.Errorf("%v: audience presence lost", e)
		}
		if (got.GetPayload() == nil) != (e.GetPayload() == nil) {
			t.Errorf("%v: payload presence lost", e)
		}
	}
}

func TestAppendEnvelope(t *testing.T) {
	e := samples()[1].e
	prefix := []byte("prefix")
	b, err := session.AppendEnvelope(bytes.Clone(prefix), e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, prefix) || !bytes.Equal(b[len(prefix):], marshal(t, e)) {
		t.Errorf("AppendEnvelope does not append the stored form")
	}
}

// Maps are written in sorted key order, so equal envelopes and metadata
// give equal bytes whatever the maps' insertion history.
func TestStoredDeterministic(t *testing.T) {
	var firstEnv, firstMeta []byte
	for i := range 20 {
		set := map[string]*structpb.Value{}
		labels := map[string]string{}
		for j := range 10 {
			k := (i + j) % 10
			set[fmt.Sprintf("k%d", k)] = session.MustValue(map[string]any{"n": k, "s": []any{"x", k}})
			labels[fmt.Sprintf("l%d", k)] = fmt.Sprint(k)
		}
		b := marshal(t, with(&hubpb.Envelope{Type: session.EventContextSet}, &hubpb.ContextUpdate{Set: set}))
		m := validMeta()
		m.Knobs, m.Labels = set, labels
		mb, err := session.MarshalMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			firstEnv, firstMeta = b, mb
			continue
		}
		if !bytes.Equal(b, firstEnv) {
			t.Fatal("two stored forms of one context update differ")
		}
		if !bytes.Equal(mb, firstMeta) {
			t.Fatal("two stored forms of one session's metadata differ")
		}
	}
}

// newer returns fields a later version might add: a varint 40 and a string
// 41 (both unknown to this version).
func newer() []byte {
	b := protowire.AppendTag(nil, 40, protowire.VarintType)
	b = protowire.AppendVarint(b, 7)
	b = protowire.AppendTag(b, 41, protowire.BytesType)
	return protowire.AppendString(b, "call tree")
}

// Fields from a newer version, on the envelope and inside its payload,
// survive a decode and an encode: an old reader keeps them, and never
// loses data it copies.
func TestStoredUnknownFieldsSurvive(t *testing.T) {
	s := samples()[1].e // a packet
	inner := protowire.AppendTag(nil, 9, protowire.BytesType)
	inner = protowire.AppendString(inner, "a newer routing field")
	b := append(marshal(t, s), newer()...)
	b = protowire.AppendTag(b, 11, protowire.BytesType) // merges into the packet
	b = protowire.AppendBytes(b, inner)

	e, err := session.UnmarshalEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	known := proto.Clone(e).(*hubpb.Envelope)
	known.ProtoReflect().SetUnknown(nil)
	known.GetPacket().ProtoReflect().SetUnknown(nil)
	if !proto.Equal(known, s) {
		t.Errorf("the known fields changed:\n got %v\nwant %v", known, s)
	}
	out := marshal(t, e)
	back, err := session.UnmarshalEnvelope(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.ProtoReflect().GetUnknown(); !bytes.Equal(got, newer()) {
		t.Errorf("envelope's unknown fields after a decode and encode: %x, want %x", got, newer())
	}
	if got := back.GetPacket().ProtoReflect().GetUnknown(); !bytes.Equal(got, inner) {
		t.Errorf("packet's unknown fields after a decode and encode: %x, want %x", got, inner)
	}
	if again := marshal(t, back); !bytes.Equal(again, out) {
		t.Error("a second decode and encode changes the bytes")
	}

	mb, err := session.MarshalMeta(validMeta())
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.UnmarshalMeta(append(mb, newer()...))
	if err != nil {
		t.Fatal(err)
	}
	mb2, err := session.MarshalMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := session.UnmarshalMeta(mb2); err != nil || !bytes.Equal(m2.ProtoReflect().GetUnknown(), newer()) {
		t.Errorf("metadata's unknown fields after a decode and encode: %v", err)
	}
}

func TestStoredMetaRoundTrip(t *testing.T) {
	for _, m := range []*hubpb.SessionMeta{validMeta(), {}, {SessionId: sessionID}} {
		b, err := session.MarshalMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := session.UnmarshalMeta(b)
		if err != nil {
			t.Fatalf("UnmarshalMeta: %v", err)
		}
		if !proto.Equal(back, m) {
			t.Errorf("round trip:\n got %v\nwant %v", back, m)
		}
	}
}

func TestStoredCorrupt(t *testing.T) {
	tag := func(n protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, n, typ) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"tag without a length", tag(1, protowire.BytesType)},
		{"length past the end", cat(tag(1, protowire.BytesType), []byte{5, 'a'})},
		{"wire type 7", []byte{0x0f}},
		{"field number 0", []byte{0x00, 0x00}},
		{"overlong varint", cat(tag(2, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10), []byte{1})},
		{"unterminated group", tag(50, protowire.StartGroupType)},
		{"end of a group never started", tag(50, protowire.EndGroupType)},
		// audience (envelope) and participants (metadata) are messages
		{"truncated nested message", cat(tag(5, protowire.BytesType), []byte{2}, tag(1, protowire.BytesType), []byte{5})},
		{"truncated fixed64", cat(tag(50, protowire.Fixed64Type), []byte{1, 2})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.UnmarshalEnvelope(tt.b)
			wantErr(t, err, session.ErrCorrupt, "envelope: ")
			_, err = session.UnmarshalMeta(tt.b)
			wantErr(t, err, session.ErrCorrupt, "session metadata: ")
		})
	}
	// The stored form ends with accepted_at, a nested message: cutting the
	// last byte always breaks it. Any cut either decodes or is ErrCorrupt.
	for _, s := range samples() {
		b := marshal(t, s.e)
		for i := range b {
			if _, err := session.UnmarshalEnvelope(b[:i]); err != nil && !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("%s cut at %d: %v is not ErrCorrupt", s.name, i, err)
			}
		}
		_, err := session.UnmarshalEnvelope(b[:len(b)-1])
		wantErr(t, err, session.ErrCorrupt)
	}
	if _, ok := session.ReasonOf(session.ErrCorrupt); ok {
		t.Error("ErrCorrupt has a reason: a corrupt record is the hub's failure, not the caller's")
	}
}

// TestStoredUTF8 pins down that reads do not check strings for UTF-8 (the
// stored form is read by vtprotobuf's generated decoder, which does not):
// what is stored was refused at write time if it was not UTF-8 (the
// deterministic marshaller checks), and the log's checksums guard the
// bytes after that.
func TestStoredUTF8(t *testing.T) {
	bad := append(protowire.AppendTag(nil, 4, protowire.BytesType), 1, 0xff)
	e, err := session.UnmarshalEnvelope(bad)
	if err != nil || e.GetFrom() != "\xff" {
		t.Fatalf("UnmarshalEnvelope = %v, %v; want the string as stored", e, err)
	}
	if _, err := session.MarshalEnvelope(e); err == nil {
		t.Fatal("MarshalEnvelope wrote a string that is not UTF-8")
	}
}

const goldenV2 = "testdata/envelopes_v2.txt"

const goldenHeader = `# The stored form of samples() in helpers_test.go, format version 2:
# deterministic protobuf of hubd.v1.Envelope, one "name hex" per line.
# APPEND-ONLY: a record once stored must decode forever. Never edit or
# delete a line (-rewrite does not touch this file). Append the missing
# samples with: go test ./session -run TestStoredGolden -golden-append
`

// TestStoredGolden checks the stored forms recorded in envelopes_v2.txt:
// every line decodes, and each is its sample as it was when recorded
// (samples gain fields as hub.proto grows, but never change or lose one;
// a line of a sample that gained a field must equal the sample with that
// field cleared). Every sample as it is now must have a line; one that has
// none fails the test until -golden-append appends it.
func TestStoredGolden(t *testing.T) {
	if *rewrite {
		t.Logf("-rewrite leaves %s alone: stored forms are append-only (see -golden-append)", goldenV2)
	}
	stored := readGolden(t, goldenV2)
	var missing []sample
	for _, s := range samples() {
		exact := false
		for _, d := range stored[s.name] {
			if proto.Equal(d, s.e) {
				exact = true
				continue
			}
			was := proto.Clone(s.e)
			restrict(was.ProtoReflect(), d.ProtoReflect())
			if !proto.Equal(d, was) {
				t.Errorf("%s: a record of sample %s decodes to\n%v\nwhich is not the sample as it was: samples may gain fields, never change or lose one (add a new sample instead)", goldenV2, s.name, d)
			}
		}
		if !exact {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return
	}
	if !*goldenAppend {
		var names []string
		for _, s := range missing {
			names = append(names, s.name)
		}
		t.Fatalf("%s has no record of sample(s) %s as they are now; append them with\n\tgo test ./session -run TestStoredGolden -golden-append",
			goldenV2, strings.Join(names, ", "))
	}
	appendGolden(t, goldenV2, missing)
}

// readGolden decodes the records of a golden file by sample name. A line
// that does not decode fails the test.
func readGolden(t *testing.T, file string) map[string][]*hubpb.Envelope {
	t.Helper()
	out := map[string][]*hubpb.Envelope{}
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) && *goldenAppend {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, hx, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("%s:%d: %v", file, n, err)
		}
		e, err := session.UnmarshalEnvelope(b)
		if err != nil {
			t.Fatalf("%s:%d: the stored record of %s no longer decodes: %v", file, n, name, err)
		}
		out[name] = append(out[name], e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// appendGolden appends the stored form of samples to file, creating it with
// its header if need be. It never changes what is there.
func appendGolden(t *testing.T, file string, samples []sample) {
	t.Helper()
	var b bytes.Buffer
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		b.WriteString(goldenHeader)
	}
	for _, s := range samples {
		fmt.Fprintf(&b, "%s %x\n", s.name, marshal(t, s.e))
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("appended %d record(s) to %s", len(samples), file)
}

// restrict clears in s every field that d does not set, looking into
// singular messages and into lists of messages of the same length, so that
// proto.Equal(d, s) tells whether d is s from before its newer fields.
func restrict(s, d protoreflect.Message) {
	var drop []protoreflect.FieldDescriptor
	s.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case !d.Has(fd):
			drop = append(drop, fd)
		case fd.IsList() && fd.Message() != nil:
			sl, dl := v.List(), d.Get(fd).List()
			for i := range min(sl.Len(), dl.Len()) {
				restrict(sl.Get(i).Message(), dl.Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			restrict(v.Message(), d.Get(fd).Message())
		}
		return true
	})
	for _, fd := range drop {
		s.Clear(fd)
	}
}

// TestRestrict: restrict finds a sample with a field cleared, and only that.
func TestRestrict(t *testing.T) {
	s := samples()[1].e
	old := proto.Clone(s).(*hubpb.Envelope)
	old.Traceparent = ""
	old.GetPacket().GetRouting().Summary = ""
	was := proto.Clone(s)
	restrict(was.ProtoReflect(), old.ProtoReflect())
	if !proto.Equal(was, old) {
		t.Errorf("restrict: %v, want %v", was, old)
	}
	old.GetPacket().Body = "changed"
	was = proto.Clone(s)
	restrict(was.ProtoReflect(), old.ProtoReflect())
	if proto.Equal(was, old) {
		t.Error("restrict hides a changed field")
	}
}
