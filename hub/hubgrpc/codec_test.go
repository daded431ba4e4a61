package hubgrpc_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

// TestCodecMarshal: the server codec's encoding (vtprotobuf's) decodes to
// the message it was given, for small and pooled-size responses, and is
// byte for byte protobuf's when no map is involved; a message that is not
// hubd's is encoded by the proto codec.
func TestCodecMarshal(t *testing.T) {
	env := &hubpb.Envelope{Id: "e1", SessionId: "s1", Seq: 7, Type: "text", From: "alice", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		AcceptedAt: timestamppb.Now(), Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hello"}}}
	big := proto.CloneOf(env)
	big.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: strings.Repeat("x", 64<<10)}}
	withMap := &hubpb.HubFrame{Frame: &hubpb.HubFrame_Ack{Ack: &hubpb.StreamAck{Ref: 3, Error: &hubpb.StreamError{Code: 9,
		Message: "out of turn", Reason: hubpb.Reason_OUT_OF_TURN, Metadata: map[string]string{"expected": "bob", "got": "alice"}}}}}
	for _, tc := range []struct {
		name   string
		m      proto.Message
		sameAs bool // byte for byte protobuf's (no map)
	}{
		{"delivery", &hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: &hubpb.Delivery{Envelope: env, YourTurn: true}}}, true},
		{"pooled size", &hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: &hubpb.Delivery{Envelope: big}}}, true},
		{"ack with metadata", withMap, false},
		{"not hubd's", structpb.NewStringValue("plain"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := hubgrpc.Codec().Marshal(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			got := data.Materialize()
			data.Free()
			back := tc.m.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(got, back); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, tc.m) {
				t.Fatalf("decoded %v, want %v", back, tc.m)
			}
			if want, _ := proto.Marshal(tc.m); tc.sameAs && !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from protobuf's:\n%x\n%x", got, want)
			}
		})
	}
}
