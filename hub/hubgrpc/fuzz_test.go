package hubgrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
)

// FuzzSendRequest decodes arbitrary bytes as a SendRequest and sends it
// through a real hub over gRPC as a participant (into a live session when
// the request names none): the hub never fails, and the send is either
// refused with a stable reason and its own code, or accepted and stored
// with the sender's name, the stored form of its type and no field the
// schema does not know.
func FuzzSendRequest(f *testing.F) {
	for _, e := range sent() {
		b, _ := proto.Marshal(&hubpb.SendRequest{Envelope: e})
		f.Add(b)
	}
	for _, e := range []*hubpb.Envelope{
		{Type: "EV_TEXT", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "x"}}},
		{Type: "session_closed", Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "mine"}}},
		{Type: "packet", Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Routing: &hubpb.Routing{Kind: "finish"}}}},
		{Type: "text", From: "bob", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "x"}}},
	} {
		b, _ := proto.Marshal(&hubpb.SendRequest{Envelope: e})
		f.Add(b)
	}
	fx := start(f, "")
	alice := fx.agent("alice")
	live := openConversation(f, alice)
	f.Fuzz(func(t *testing.T, data []byte) {
		var req hubpb.SendRequest
		if len(data) > 1<<16 || proto.Unmarshal(data, &req) != nil {
			return // not a request, or over the gRPC message limit
		}
		if req.GetSessionId() == "" {
			req.SessionId = live
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, err := alice.Send(ctx, &req)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		checkStored(t, fx, &req, a)
		if a.GetClosed() {
			live = openConversation(t, alice)
		}
	})
}

// checkRefusal fails t unless err carries a stable reason (not INTERNAL)
// with the code of the table.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	code, reason := wiretest.ReasonOf(err)
	r, ok := hubpb.Reason_value[reason]
	if !ok || r == int32(hubpb.Reason_REASON_UNSPECIFIED) || r == int32(hubpb.Reason_INTERNAL) {
		t.Fatalf("refused without a stable reason: %v %q: %v", code, reason, err)
	}
	if want := hubgrpc.Code(hubpb.Reason(r)); code != want {
		t.Fatalf("%s came with code %v, the table says %v", reason, code, want)
	}
}

// checkStored fails t unless the accepted send is in the log as alice's,
// with its type in the stored form, valid, without unknown fields.
func checkStored(t *testing.T, fx *fixture, req *hubpb.SendRequest, a *hubpb.SendResponse) {
	t.Helper()
	if a.GetDuplicate() {
		return
	}
	es, _, err := fx.srv.Feed().ReadLog(context.Background(), "", true, session.MustParseID(req.GetSessionId()), a.GetSeq(), 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("accepted seq %d is not in the log: %v %v", a.GetSeq(), es, err)
	}
	want, err := session.ParseEventType(req.GetEnvelope().GetType())
	if e := es[0]; err != nil || e.GetType() != want || e.GetFrom() != "alice" || e.GetId() != a.GetId() {
		t.Fatalf("stored %v for the request %v (%v)", e, req, err)
	}
	if err := session.CheckEnvelope(es[0]); err != nil {
		t.Fatalf("stored an envelope that does not check: %v", err)
	}
	data, _ := proto.Marshal(es[0])
	var known hubpb.Envelope
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &known); err != nil || !proto.Equal(&known, es[0]) {
		t.Fatalf("stored unknown fields: %v (%v)", es[0], err)
	}
}

// FuzzParseTokens never panics on a tokens file, and a file it accepts
// is one the format allows: each line blank, a comment, or "name token
// [operator]" with a valid name, a token of 16 characters or more, and no
// name or token twice.
func FuzzParseTokens(f *testing.F) {
	f.Add("alice alice-token-0123456789\nbob bob-token-0123456789abc operator\n# c\n")
	f.Add("alice short\n")
	f.Add("alice tok-0123456789abcdef\nalice tok-0123456789abcdeX\n")
	f.Add("alice tok-0123456789abcdef\nbob tok-0123456789abcdef\n")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := hubgrpc.ParseTokens(strings.NewReader(s)); err != nil {
			return
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			f := strings.Fields(line)
			if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "operator") || session.CheckName(f[0]) != nil || len(f[1]) < 16 || seen["n"+f[0]] || seen["t"+f[1]] {
				t.Fatalf("accepted the line %q", line)
			}
			seen["n"+f[0]], seen["t"+f[1]] = true, true
		}
		if len(seen) == 0 {
			t.Fatal("accepted a file without agents")
		}
	})
}
