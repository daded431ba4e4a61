package hubgrpc_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// envelopes returns one envelope of every payload type, every header set.
func envelopes() []*session.Envelope {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	base := session.Envelope{Session: session.MustParseID("0194d1a0-0000-7000-8000-000000000001"), Seq: 7,
		ID: uuid.MustParse("0194d1a0-0000-7000-8000-0000000000aa"), From: "alice", Audience: session.Only("bob"),
		Causation: uuid.MustParse("0194d1a0-0000-7000-8000-0000000000bb"), ClientMsgID: "m1",
		Call: session.Call{ID: "c", Parent: "p", Root: "r", Depth: 2}, TraceParent: "00-abc-def-01", AcceptedAt: at}
	var out []*session.Envelope
	for _, p := range []struct {
		t session.EventType
		p session.Payload
	}{
		{session.EventText, session.Text{Text: "hi <there>"}},
		{session.EventPacket, session.Packet{Body: "b", Routing: session.Routing{Kind: session.RouteHandoff, Tool: "t", Target: "bob", Reason: "r"},
			Context: session.ContextUpdate{Set: map[string]json.RawMessage{"k": json.RawMessage(`{"a":[1,2.5]}`)}, Delete: []string{"x"}},
			Usage:   session.Usage{InputTokens: 1, OutputTokens: 2, CostUSD: 0.5}}},
		{session.EventContextSet, session.ContextUpdate{Set: map[string]json.RawMessage{"k": json.RawMessage(`true`)}}},
		{session.EventInvite, session.Invite{Invitees: []string{"bob"}}},
		{session.EventClosed, session.Ended{Reason: "done"}},
		{session.EventViolation, session.Violation{Expectation: "turn_within", Index: 1, Action: session.ActionWarn, Since: at, Violators: []string{"bob"}, Detail: "d"}},
		{session.EventQuestion, session.Question{QuestionID: "q", Text: "?", Options: []session.Option{{ID: "y", Label: "yes"}}}},
		{session.EventAnswer, session.Answer{QuestionID: "q", OptionIDs: []string{"y"}}},
		{session.EventDelegationResult, session.DelegationResult{Child: session.MustParseID("0194d1a0-0000-7000-8000-000000000002"), Reason: "done", Summary: "s"}},
		{session.EventTaskProgress, session.TaskProgress{Task: "t", Percent: 50, Detail: "half"}},
		{"app.custom", session.Custom{Data: []byte{0, 1, 2}}},
		{session.EventOpened, nil},
	} {
		e := base
		e.Type, e.Payload = p.t, p.p
		out = append(out, &e)
	}
	return out
}

// TestEnvelopeWireRoundTrip: every envelope crosses the wire and back
// unchanged (compared through its stored encoding).
func TestEnvelopeWireRoundTrip(t *testing.T) {
	for _, e := range envelopes() {
		back, err := hubgrpc.EnvelopeFromPB(hubgrpc.EnvelopeToPB(e))
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		a, _ := e.MarshalBinary()
		b, _ := back.MarshalBinary()
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed on the wire:\n%+v\n%+v", e.Type, e, back)
		}
	}
}

// FuzzEnvelopeFromPB decodes arbitrary wire bytes as an envelope: it never
// panics, and an envelope that converts converts back to the same thing.
func FuzzEnvelopeFromPB(f *testing.F) {
	for _, e := range envelopes() {
		b, _ := proto.Marshal(hubgrpc.EnvelopeToPB(e))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p hubpb.Envelope
		if proto.Unmarshal(data, &p) != nil {
			return
		}
		e, err := hubgrpc.EnvelopeFromPB(&p)
		if err != nil {
			return
		}
		again, err := hubgrpc.EnvelopeFromPB(hubgrpc.EnvelopeToPB(e))
		if err != nil {
			t.Fatalf("re-conversion failed: %v", err)
		}
		a, _ := e.MarshalBinary()
		b, _ := again.MarshalBinary()
		if !bytes.Equal(a, b) {
			t.Fatalf("not a fixed point:\n%+v\n%+v", e, again)
		}
	})
}

// FuzzParseTokens never panics on a tokens file, and what it accepts
// names each agent once.
func FuzzParseTokens(f *testing.F) {
	f.Add("alice alice-token-0123456789\nbob bob-token-0123456789abc operator\n# c\n")
	f.Add("alice short\n")
	f.Add("alice tok-0123456789abcdef\nalice tok-0123456789abcdeX\n")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := hubgrpc.ParseTokens(strings.NewReader(s)); err != nil {
			return
		}
	})
}
