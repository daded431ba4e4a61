package hub

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestInternerShares: equal values (equal JSON) share one copy, kept
// with its stored form; a different value gets its own, never the other's
// form; a value the interner does not hold has no form from it.
func TestInternerShares(t *testing.T) {
	var in interner
	graph := func(speaker string) *structpb.Value {
		return session.MustValue(map[string]any{"initial_speaker": speaker, "max_turns": 3, "transitions": []any{map[string]any{"when": map[string]any{"always": map[string]any{}}}}})
	}
	a1, err := in.value(graph("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := session.ValueJSON(graph("a"))
	a2, err := in.value(graph("a"), raw)
	if err != nil || a2 != a1 {
		t.Fatalf("an equal value: %p, %v; want the shared %p", a2, err, a1)
	}
	b, err := in.value(graph("b"), nil)
	if err != nil || b == a1 {
		t.Fatalf("a different value: %p, %v; want its own copy, not %p", b, err, a1)
	}
	for _, v := range []*structpb.Value{a1, b} {
		enc, ok := in.encoded(v)
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(v)
		if !ok || !bytes.Equal(enc, want) {
			t.Fatalf("the stored form of %v: %x, %v; want %x", v, enc, ok, want)
		}
	}
	if _, ok := in.encoded(graph("a")); ok {
		t.Fatal("a value the interner does not hold (an equal one) has a stored form from it")
	}
	if _, err := in.value(&structpb.Value{}, nil); err == nil {
		t.Fatal("a value without a kind was interned")
	}
}

// TestInternerBound: the interner holds at most internMax values, by JSON
// and by value alike, and still answers after it starts afresh.
func TestInternerBound(t *testing.T) {
	var in interner
	var first *structpb.Value
	for i := range internMax + 10 {
		v, err := in.value(structpb.NewNumberValue(float64(i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = v
		}
		if len(in.vals) > internMax || len(in.byVal) != len(in.vals) {
			t.Fatalf("after %d values: %d by JSON, %d by value; the bound is %d", i+1, len(in.vals), len(in.byVal), internMax)
		}
	}
	if _, ok := in.encoded(first); ok {
		t.Fatal("a value dropped when the interner started afresh still has a stored form from it")
	}
	v, err := in.value(structpb.NewNumberValue(0), nil)
	if err != nil || v == first {
		t.Fatalf("the first value again: %p, %v; want a new shared copy", v, err)
	}
}

// TestMarshalMetaSpliced: marshalMeta writes exactly session.MarshalMeta's
// bytes, whether the knobs are shared or not, with every field of the
// metadata set (so a field added to SessionMeta is covered), unknown
// fields, no knobs, an empty key; and it refuses what MarshalMeta refuses.
func TestMarshalMetaSpliced(t *testing.T) {
	var in interner
	graph, err := in.value(session.MustValue(map[string]any{"initial_speaker": "a", "transitions": []any{map[string]any{"then": "x"}}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	full := &hubpb.SessionMeta{}
	populate(full.ProtoReflect(), 0)
	withUnknown := proto.CloneOf(full)
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	for name, knobs := range map[string]map[string]*structpb.Value{ //hubd:orderless independent cases
		"none":       nil,
		"shared":     {"graph": graph},
		"mixed":      {"graph": graph, "max_turns": structpb.NewNumberValue(1000), "a": session.MustValue([]any{"x", map[string]any{"z": nil, "b": true}})},
		"empty key":  {"": structpb.NewStringValue("v"), "graph": graph},
		"populated":  nil, // populate's own knobs
		"many knobs": manyKnobs(50, graph),
	} {
		for _, base := range []*hubpb.SessionMeta{full, withUnknown} {
			m := proto.CloneOf(base)
			if name != "populated" {
				m.Knobs = knobs
			}
			want, err := session.MarshalMeta(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := in.marshalMeta(m)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: marshalMeta = %x, %v\nwant %x", name, got, err, want)
			}
		}
	}
	bad := &hubpb.SessionMeta{SessionId: "x", Knobs: map[string]*structpb.Value{"\xff": graph}}
	if _, err := session.MarshalMeta(bad); err == nil {
		t.Fatal("MarshalMeta took a key that is not UTF-8")
	}
	if _, err := in.marshalMeta(bad); err == nil {
		t.Fatal("marshalMeta took a key that is not UTF-8")
	}
}

func manyKnobs(n int, graph *structpb.Value) map[string]*structpb.Value {
	out := map[string]*structpb.Value{"graph": graph}
	for i := range n {
		out[fmt.Sprintf("k%d", i)] = structpb.NewNumberValue(float64(i))
	}
	return out
}

// populate sets every field of m (two entries in maps and lists), nested
// messages to depth 3; google.protobuf.Value fields are strings.
func populate(m protoreflect.Message, depth int) {
	if v, ok := m.Interface().(*structpb.Value); ok {
		v.Kind = &structpb.Value_StringValue{StringValue: fmt.Sprint("s", depth)}
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && i > 0 && fields.Get(i-1).ContainingOneof() == fd.ContainingOneof() {
			continue // one member of each oneof
		}
		switch {
		case fd.IsMap():
			if depth >= 3 {
				continue
			}
			mp := m.Mutable(fd).Map()
			for j := range 2 {
				k := protoreflect.ValueOfString(fmt.Sprint("key", j)).MapKey()
				if fd.MapValue().Message() != nil {
					v := mp.NewValue()
					populate(v.Message(), depth+1)
					mp.Set(k, v)
				} else {
					mp.Set(k, scalar(fd.MapValue(), j))
				}
			}
		case fd.IsList():
			if depth >= 3 {
				continue
			}
			l := m.Mutable(fd).List()
			for j := range 2 {
				if fd.Message() != nil {
					v := l.NewElement()
					populate(v.Message(), depth+1)
					l.Append(v)
				} else {
					l.Append(scalar(fd, j))
				}
			}
		case fd.Message() != nil:
			if depth >= 3 {
				continue
			}
			populate(m.Mutable(fd).Message(), depth+1)
		default:
			m.Set(fd, scalar(fd, 1))
		}
	}
}

// scalar is a non-zero value of fd's kind.
func scalar(fd protoreflect.FieldDescriptor, j int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprint(fd.Name(), j))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(7 + j))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(70000 + j))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(9 + j))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(90000 + j))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1.5 + float64(j))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(2.5)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, byte(j)})
	}
	panic(fmt.Sprintf("no scalar of kind %v", fd.Kind()))
}

// TestMetaParts: metaParts copies what proto.CloneOf of the same parts
// copies, every field and unknown fields included, and shares nothing
// with the request.
func TestMetaParts(t *testing.T) {
	req := &hubpb.OpenRequest{}
	populate(req.ProtoReflect(), 0)
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	req.GetTtl().ProtoReflect().SetUnknown(unknown)
	req.GetParticipants()[1].ProtoReflect().SetUnknown(unknown)
	req.GetExpectations().GetItems()[0].ProtoReflect().SetUnknown(unknown)
	req.GetExpectations().GetItems()[1].GetWithin().ProtoReflect().SetUnknown(unknown)
	for _, r := range []*hubpb.OpenRequest{req, {}, {Participants: []*hubpb.Participant{nil, {Name: "a"}}}} {
		want := proto.CloneOf(&hubpb.SessionMeta{Labels: r.GetLabels(), Ttl: r.GetTtl(), InviteTimeout: r.GetInviteTimeout(),
			Expectations: r.GetExpectations().GetItems(), Participants: r.GetParticipants(), Retention: r.GetRetention()})
		got := metaParts(r)
		wantB, _ := session.MarshalMeta(want)
		gotB, _ := session.MarshalMeta(got)
		if !proto.Equal(got, want) || !bytes.Equal(gotB, wantB) {
			t.Fatalf("metaParts = %v\nwant %v", got, want)
		}
	}
	got := metaParts(req)
	before := proto.CloneOf(got)
	populate(req.ProtoReflect(), 1) // longer lists in req
	req.GetParticipants()[0].Name, req.GetExpectations().GetItems()[0].GetWithin().Seconds, req.GetTtl().Nanos = "changed", 12345, 99
	req.GetLabels()["new"] = "label"
	req.GetParticipants()[1].ProtoReflect().SetUnknown(nil)
	if !proto.Equal(got, before) {
		t.Fatalf("metaParts shares with the request: %v after changing it, was %v", got, before)
	}
}
