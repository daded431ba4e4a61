package wiretest

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// secrets are what a refusal to an outsider must not say of the session
// Access sets up: its participants, its question's id, text and answerer,
// its hidden context, its state.
var secrets = []string{"alice", "bob", "carol", "person", "q-hidden", "launch code", "s3cr3t", "pending", "OPEN", "CLOSED", "held"}

// Access checks who may read and do what in a session, over the wire: a
// context variable set for its setter alone is read by that setter and
// operators only, and every call of an outsider ("mallory") about the
// session is refused saying nothing of it, live and once it ended. agent
// gives a client of a named agent in development mode ("operator" has
// operator rights).
func Access(t *testing.T, agent func(name string) hubsvc.HubClient) {
	ctx := context.Background()
	alice, ops := agent("alice"), agent("operator")
	id := Pipeline(t, alice)
	private := contextSet("hidden", structpb.NewStringValue("s3cr3t"))
	private.Audience = &hubpb.Audience{Names: []string{"alice"}}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: private}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: contextSet("shared", structpb.NewNumberValue(1))}); err != nil {
		t.Fatal(err)
	}
	t.Run("context for its setter alone", func(t *testing.T) {
		for who, want := range map[string][]string{"alice": {"hidden", "shared"}, "bob": {"shared"}, "carol": {"shared"}, "operator": {"hidden", "shared"}} {
			info, err := agent(who).GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for k := range info.GetContext() {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s reads context %v, want %v", who, got, want)
			}
		}
	})
	ask := &hubpb.Envelope{Type: "question", Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q-hidden", Text: "launch code?", Answerer: "person", Options: []*hubpb.Option{{Id: "y", Label: "yes"}}}}}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: ask}); err != nil {
		t.Fatal(err)
	}
	t.Run("an outsider, a question pending", func(t *testing.T) { outsider(t, agent("mallory"), ops, id) })
	if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	t.Run("an outsider, the session closed", func(t *testing.T) { outsider(t, agent("mallory"), ops, id) })
}

// outsider makes every call about session id as mallory, who takes no
// part in it: each is refused, names mallory, tells nothing of the
// session, and writes nothing.
func outsider(t *testing.T, mallory, ops hubsvc.HubClient, id string) {
	ctx := context.Background()
	before, err := ops.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	said := map[string]string{}
	for name, call := range outsiderCalls(mallory, id) {
		err := call(ctx)
		_, reason := ReasonOf(err)
		msg := status.Convert(err).Message()
		if err == nil || !slices.Contains([]string{"NOT_PARTICIPANT", "PERMISSION_DENIED", "BAD_ANSWER"}, reason) || !strings.Contains(msg, `"mallory"`) {
			t.Errorf("%s: %v (%s); want a refusal of mallory", name, err, reason)
			continue
		}
		msg = strings.NewReplacer("q-hidden", "Q", "q-made-up", "Q").Replace(msg) // an answer's id comes back as given
		said[name] = msg
		for _, s := range secrets {
			if strings.Contains(msg, s) {
				t.Errorf("%s: the refusal %q tells an outsider %q", name, msg, s)
			}
		}
	}
	if said["answer"] != said["answer a made-up question"] {
		t.Errorf("an outsider's answer to the pending question is told %q, to a made-up one %q", said["answer"], said["answer a made-up question"])
	}
	after, err := ops.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || after.GetSeq() != before.GetSeq() {
		t.Errorf("an outsider's calls wrote: seq %d → %d (%v)", before.GetSeq(), after.GetSeq(), err)
	}
}

// outsiderCalls are the calls about session id an agent can make.
func outsiderCalls(c hubsvc.HubClient, id string) map[string]func(context.Context) error {
	answer := func(qid string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.Answer(ctx, &hubpb.AnswerRequest{SessionId: id, Answer: &hubpb.Answer{QuestionId: qid, OptionIds: []string{"y"}}})
			return err
		}
	}
	child := []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "zed", AutoAccept: true}}}}
	return map[string]func(context.Context) error{
		"send":                      func(ctx context.Context) error { return send(ctx, c, id, Text("let me in"))() },
		"send on a stream":          func(ctx context.Context) error { return streamSend(ctx, c, id, Text("let me in")) },
		"answer":                    answer("q-hidden"),
		"answer a made-up question": answer("q-made-up"),
		"ack the invite": func(ctx context.Context) error {
			_, err := c.AckInvite(ctx, &hubpb.InviteRequest{SessionId: id})
			return err
		},
		"get": func(ctx context.Context) error {
			_, err := c.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			return err
		},
		"view": func(ctx context.Context) error {
			_, err := c.GetView(ctx, &hubpb.GetViewRequest{SessionId: id})
			return err
		},
		"read the log": func(ctx context.Context) error {
			_, err := c.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
			return err
		},
		"tree": func(ctx context.Context) error {
			_, err := c.GetTree(ctx, &hubpb.GetTreeRequest{SessionId: id})
			return err
		},
		"watch": func(ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w, err := c.Watch(ctx, &hubpb.WatchRequest{SessionId: id})
			if err != nil {
				return err
			}
			if _, err = w.Recv(); err == io.EOF {
				return nil
			}
			return err
		},
		"delegate": func(ctx context.Context) error {
			_, err := c.Delegate(ctx, &hubpb.DelegateRequest{SessionId: id, Children: child})
			return err
		},
		"open a child": func(ctx context.Context) error {
			_, err := c.Open(ctx, &hubpb.OpenRequest{Type: "conversation@1", ParentSessionId: id, Participants: child[0].GetParticipants()})
			return err
		},
		"close": func(ctx context.Context) error {
			_, err := c.Close(ctx, &hubpb.CloseRequest{SessionId: id})
			return err
		},
	}
}
