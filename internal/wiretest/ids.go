package wiretest

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// badIDs are the values an id field is refused: not a UUID, a UUID in a
// spelling the hub does not write (no hyphens, braces, a URN), and the
// nil UUID where an id names a session.
var badIDs = []string{
	"not-a-uuid",
	"0194d1a0000070008000000000000001",
	"{0194d1a0-0000-7000-8000-000000000001}",
	"urn:uuid:0194d1a0-0000-7000-8000-000000000001",
	"0194d1a0-0000-7000-8000-00000000000g",
}

// idCase is one id field of a request, and the call that gives it v.
type idCase struct {
	method string
	field  string // the field, as the refusal must name it
	call   func(ctx context.Context, v string) error
	nilOK  bool // the nil UUID is a value of this field (an id that may name no session)
}

// BadIDs gives every id field a request carries each bad value (and the
// nil UUID, where an id names a session): each is refused MALFORMED
// naming the field, and writes nothing. agent gives a client of a
// participant in development mode ("operator" has operator rights).
func BadIDs(t *testing.T, agent func(name string) hubsvc.HubClient) {
	ctx := context.Background()
	alice, ops := agent("alice"), agent("operator")
	id := Pipeline(t, alice)
	for _, tc := range idCases(alice, ops, id) {
		values := append([]string(nil), badIDs...)
		if !tc.nilOK {
			values = append(values, "00000000-0000-0000-0000-000000000000")
		}
		for _, v := range values {
			t.Run(tc.method+"/"+tc.field+"="+v, func(t *testing.T) {
				before, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
				if err != nil {
					t.Fatal(err)
				}
				err = tc.call(ctx, v)
				code, reason := ReasonOf(err)
				msg := status.Convert(err).Message()
				if code != codes.InvalidArgument || reason != "MALFORMED" || !strings.Contains(msg, tc.field) {
					t.Fatalf("got %v %s %q; want InvalidArgument MALFORMED naming %s", code, reason, msg, tc.field)
				}
				after, _ := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
				if after.GetSeq() != before.GetSeq() {
					t.Fatalf("a refused call wrote: seq %d → %d", before.GetSeq(), after.GetSeq())
				}
			})
		}
	}
}

// idCases lists the id fields of every call, in alice's session id.
func idCases(alice, ops hubsvc.HubClient, id string) []idCase {
	env := func(mod func(*hubpb.Envelope, string)) func(context.Context, string) error {
		return func(ctx context.Context, v string) error {
			e := Text("hello")
			mod(e, v)
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
			return err
		}
	}
	return []idCase{
		{method: "Send", field: "envelope.causation_id", nilOK: true, call: env(func(e *hubpb.Envelope, v string) { e.CausationId = v })},
		{method: "Send", field: "envelope.session_id", call: env(func(e *hubpb.Envelope, v string) { e.SessionId = v })},
		{method: "Send", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: v, Envelope: Text("x")})
			return err
		}},
		{method: "AgentStream", field: "envelope.causation_id", nilOK: true, call: func(ctx context.Context, v string) error {
			e := Text("on the stream")
			e.CausationId = v
			return streamSend(ctx, alice, id, e)
		}},
		{method: "AgentStream", field: "session_id", call: func(ctx context.Context, v string) error { return streamSend(ctx, alice, v, Text("x")) }},
		{method: "Open", field: "parent_session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "conversation@1", ParentSessionId: v,
				Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
			return err
		}},
		{method: "Delegate", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Delegate(ctx, &hubpb.DelegateRequest{SessionId: v,
				Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}}}})
			return err
		}},
		{method: "Delegate", field: "children[0].parent_session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Delegate(ctx, &hubpb.DelegateRequest{SessionId: id,
				Children: []*hubpb.OpenRequest{{Type: "conversation@1", ParentSessionId: v, Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}}}})
			return err
		}},
		{method: "Answer", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Answer(ctx, &hubpb.AnswerRequest{SessionId: v, Answer: &hubpb.Answer{QuestionId: "q", Text: "yes"}})
			return err
		}},
		{method: "AckInvite", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.AckInvite(ctx, &hubpb.InviteRequest{SessionId: v})
			return err
		}},
		{method: "RejectInvite", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.RejectInvite(ctx, &hubpb.InviteRequest{SessionId: v})
			return err
		}},
		{method: "Close", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: v})
			return err
		}},
		{method: "GetSession", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: v})
			return err
		}},
		{method: "ReadLog", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: v})
			return err
		}},
		{method: "GetView", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.GetView(ctx, &hubpb.GetViewRequest{SessionId: v})
			return err
		}},
		{method: "GetTree", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.GetTree(ctx, &hubpb.GetTreeRequest{SessionId: v})
			return err
		}},
		{method: "Replay", field: "session_id", call: func(ctx context.Context, v string) error {
			_, err := ops.Replay(ctx, &hubpb.ReplayRequest{SessionId: v})
			return err
		}},
		{method: "ListSessions", field: "page_token", call: func(ctx context.Context, v string) error {
			_, err := alice.ListSessions(ctx, &hubpb.ListSessionsRequest{PageToken: v})
			return err
		}},
		{method: "ListQuestions", field: "root_session_id", call: func(ctx context.Context, v string) error {
			_, err := alice.ListQuestions(ctx, &hubpb.ListQuestionsRequest{RootSessionId: v})
			return err
		}},
		{method: "Watch", field: "session_id", call: func(ctx context.Context, v string) error {
			return firstOf(alice.Watch(ctx, &hubpb.WatchRequest{SessionId: v}))
		}},
		{method: "Watch", field: "cursors key", call: func(ctx context.Context, v string) error {
			return firstOf(alice.Watch(ctx, &hubpb.WatchRequest{SessionId: id, Tree: true, Cursors: map[string]uint64{v: 1}}))
		}},
		{method: "Subscribe", field: "cursors key", call: func(ctx context.Context, v string) error {
			return firstOf(alice.Subscribe(ctx, &hubpb.SubscribeRequest{Cursors: map[string]uint64{v: 1}}))
		}},
	}
}

// firstOf returns the error of a stream's first message (nil if one came).
func firstOf(s interface {
	Recv() (*hubpb.Delivery, error)
}, err error) error {
	if err != nil {
		return err
	}
	_, err = s.Recv()
	return err
}

// streamSend sends e to session id on an agent stream of c and returns
// the refusal in its ack as a status error (nil when acknowledged).
func streamSend(ctx context.Context, c hubsvc.HubClient, id string, e *hubpb.Envelope) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.AgentStream(ctx)
	if err != nil {
		return err
	}
	if err := s.Send(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: &hubpb.StreamSend{Ref: 1, SessionId: id, Envelope: e}}}); err != nil {
		return err
	}
	for {
		f, err := s.Recv()
		if err != nil {
			return err
		}
		if a := f.GetAck(); a != nil {
			if a.GetError() == nil {
				return nil
			}
			e := a.GetError()
			st, _ := status.New(codes.Code(e.GetCode()), e.GetMessage()).WithDetails(&errdetails.ErrorInfo{Reason: e.GetReason().String(), Domain: "hubd"})
			return st.Err()
		}
	}
}
