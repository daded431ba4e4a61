package hubmcp_test

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub/hubmcp"
	"github.com/hubd/hubd/hubpb"
)

// resolved is m's generated schema, resolved for validation.
func resolved(t *testing.T, m proto.Message) *jsonschema.Resolved {
	t.Helper()
	b, err := json.Marshal(hubmcp.Schema(m.ProtoReflect().Descriptor()))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("the schema does not decode: %v\n%s", err, b)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("the schema does not resolve: %v", err)
	}
	return rs
}

// instance is m's JSON form as the hub writes it, decoded.
func instance(t *testing.T, m proto.Message) any {
	t.Helper()
	b, err := hubpb.MarshalJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaAcceptsTheJSONForm validates the JSON form of full messages
// (every kind: 64-bit integers, enums, maps, repeated and recursive
// messages, oneofs, the well-known types) against their schemas.
func TestSchemaAcceptsTheJSONForm(t *testing.T) {
	ctx, _ := structpb.NewStruct(map[string]any{"n": 2, "tags": []any{"a"}, "deep": map[string]any{"x": true}})
	for _, m := range []proto.Message{
		&hubpb.SendRequest{SessionId: "s", Envelope: &hubpb.Envelope{Type: "text", Seq: 1 << 60, ClientMsgId: "c",
			AcceptedAt: timestamppb.Now(), Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi"}}}},
		&hubpb.SendRequest{Envelope: &hubpb.Envelope{Type: "question", Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
			QuestionId: "q", Options: []*hubpb.Option{{Id: "y"}}, Within: durationpb.New(1500e6), Schema: ctx}}}},
		&hubpb.OpenRequest{Type: "workflow@1", Graph: ctx, Labels: map[string]string{"app": "x"}, Ttl: durationpb.New(3e9),
			Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}, Knobs: ctx.GetFields()},
		&hubpb.TreeNode{Children: []*hubpb.TreeNode{{Children: []*hubpb.TreeNode{{}}}}},
		&hubpb.ListSessionsRequest{},
	} {
		if err := resolved(t, m).Validate(instance(t, m)); err != nil {
			t.Errorf("%T: %v", m, err)
		}
	}
}

// TestSchemaRefusesWhatTheHubRefuses: what the hub would not read as the
// message, the schema does not accept either.
func TestSchemaRefusesWhatTheHubRefuses(t *testing.T) {
	rs := resolved(t, &hubpb.SendRequest{})
	for _, bad := range []string{
		`{"bogus": 1}`,
		`{"session_id": 3}`,
		`{"envelope": {"seq": "minus one"}}`,
		`{"envelope": {"text": {"text": ["not", "a", "string"]}}}`,
		`{"envelope": {"accepted_at": 5}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(v) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
		if hubpb.UnmarshalJSON([]byte(bad), &hubpb.SendRequest{}) == nil {
			t.Errorf("the hub reads %s", bad)
		}
	}
}
