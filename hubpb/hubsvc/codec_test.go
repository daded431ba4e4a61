package hubsvc_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// samples are messages a client sends or reads, with the shapes that
// differ between encoders: maps, oneofs, well-known types, a size past
// gRPC's pooling threshold.
func samples() []proto.Message {
	env := &hubpb.Envelope{Id: "e1", SessionId: "s1", Seq: 7, Type: "text", From: "alice", AcceptedAt: timestamppb.Now(),
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hello"}}}
	graph, _ := structpb.NewStruct(map[string]any{"initial_speaker": "a", "max_turns": 3, "transitions": []any{map[string]any{"priority": 0}}})
	big := proto.CloneOf(env)
	big.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: strings.Repeat("x", 64<<10)}}
	return []proto.Message{
		&hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: &hubpb.Delivery{Envelope: env, YourTurn: true,
			View: &hubpb.View{SessionId: "s1", Items: []*hubpb.ViewItem{{Seq: 1, From: "bob", Text: "hi"}}}}}},
		&hubpb.HubFrame{Frame: &hubpb.HubFrame_Ack{Ack: &hubpb.StreamAck{Ref: 3, Error: &hubpb.StreamError{Code: 9,
			Reason: hubpb.Reason_OUT_OF_TURN, Metadata: map[string]string{"expected": "bob", "got": "alice"}}}}},
		&hubpb.OpenRequest{Type: "workflow@1", Graph: graph, Labels: map[string]string{"k": "v"}},
		&hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: &hubpb.Delivery{Envelope: big}}},
	}
}

// TestClientRoundTrip: what the client codec encodes, protobuf decodes to
// the same message, and what protobuf encodes, the client codec decodes
// to the same message.
func TestClientRoundTrip(t *testing.T) {
	c := hubsvc.ClientCodec()
	for _, m := range samples() {
		t.Run(string(m.ProtoReflect().Descriptor().Name()), func(t *testing.T) {
			data, err := c.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			back := m.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(data.Materialize(), back); err != nil {
				t.Fatal(err)
			}
			data.Free()
			if !proto.Equal(back, m) {
				t.Fatalf("protobuf decoded %v, want %v", back, m)
			}
			b, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got := m.ProtoReflect().New().Interface()
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, m) {
				t.Fatalf("client codec decoded %v, want %v", got, m)
			}
		})
	}
}

// TestClientKeepsUnknown: a field the client's schema does not know (a
// newer hub's) survives decoding, as with protobuf.
func TestClientKeepsUnknown(t *testing.T) {
	b, _ := proto.Marshal(&hubpb.StreamAck{Ref: 5})
	b = protowire.AppendTag(b, 999, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("newer"))
	var got hubpb.StreamAck
	if err := hubsvc.ClientCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got); err != nil {
		t.Fatal(err)
	}
	var want hubpb.StreamAck
	if err := proto.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if got.GetRef() != 5 || len(got.ProtoReflect().GetUnknown()) == 0 || !proto.Equal(&got, &want) {
		t.Fatalf("decoded %v (unknown %x), want %v", &got, got.ProtoReflect().GetUnknown(), &want)
	}
}

// TestClientOthers: a message that is not hubd's goes through gRPC's proto
// codec both ways.
func TestClientOthers(t *testing.T) {
	c := hubsvc.ClientCodec()
	v := structpb.NewStringValue("plain")
	data, err := c.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back structpb.Value
	if err := c.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, v) {
		t.Fatalf("decoded %v, want %v", &back, v)
	}
}

// FuzzClientUnmarshal: the client codec never panics, and where both it
// and protobuf decode bytes as a HubFrame they agree on every known field.
// Each may refuse what the other takes (vtprotobuf does not check UTF-8;
// protobuf keeps a known field sent with the wrong wire type as an
// unknown one, which vtprotobuf refuses), and vtprotobuf's well-known
// types drop their unknown fields: no hub sends any of these.
func FuzzClientUnmarshal(f *testing.F) {
	for _, m := range samples()[:3] { // the large one slows the engine down
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want hubpb.HubFrame
		if hubsvc.ClientCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got) != nil || proto.Unmarshal(b, &want) != nil {
			return
		}
		if g, w := known(t, &got), known(t, &want); !proto.Equal(g, w) {
			t.Fatalf("decoded %v, protobuf %v", g, w)
		}
	})
}

// known is m without its unknown fields, at any depth.
func known(t *testing.T, m *hubpb.HubFrame) *hubpb.HubFrame {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out hubpb.HubFrame
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
