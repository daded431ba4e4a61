package hub_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// secrets are what a refusal to an outsider must not say of a session:
// its participants, its creator, its question's id, text and answerer,
// and its state.
var secrets = []string{"alice", "bob", "carol", "q-secret", "launch code", "pending", "closed", "OPEN", "CLOSED", "held", "turn"}

// outsiderCalls are every call an agent that takes no part in session id
// can make about it.
func outsiderCalls(h *served, id session.ID) map[string]func(ctx context.Context, who string) error {
	answer := func(qid string) func(ctx context.Context, who string) error {
		return func(ctx context.Context, who string) error {
			_, err := h.Answer(ctx, who, false, &hubpb.AnswerRequest{SessionId: id.String(), Answer: &hubpb.Answer{QuestionId: qid, OptionIds: []string{"y"}}})
			return err
		}
	}
	sendAnswer := func(qid string) func(ctx context.Context, who string) error {
		return func(ctx context.Context, who string) error {
			_, err := h.Send(ctx, who, id, &hubpb.Envelope{Type: session.EventAnswer,
				Payload: &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: qid, OptionIds: []string{"y"}}}})
			return err
		}
	}
	return map[string]func(ctx context.Context, who string) error{
		"send": func(ctx context.Context, who string) error { _, err := h.Send(ctx, who, id, textEnv("hi")); return err },
		"send a context_set": func(ctx context.Context, who string) error {
			_, err := h.Send(ctx, who, id, contextEnv("k", 1, nil))
			return err
		},
		"send an answer":           sendAnswer("q-secret"),
		"send an answer to no one": sendAnswer("q-none"),
		"answer":                   answer("q-secret"),
		"answer no question":       answer("q-none"),
		"ack the invite":           func(ctx context.Context, who string) error { _, err := h.AckInvite(ctx, who, id); return err },
		"reject the invite":        func(ctx context.Context, who string) error { _, err := h.RejectInvite(ctx, who, id, ""); return err },
		"get":                      func(ctx context.Context, who string) error { _, err := h.Get(ctx, who, false, id); return err },
		"view": func(ctx context.Context, who string) error {
			_, err := h.View(ctx, who, id, feed.ViewOptions{})
			return err
		},
		"read the log": func(ctx context.Context, who string) error {
			_, _, err := h.ReadLog(ctx, who, false, id, 1, 10)
			return err
		},
		"watch": func(ctx context.Context, who string) error {
			sub, err := h.Watch(ctx, who, false, id, feed.WatchOptions{})
			if err == nil {
				sub.Close()
			}
			return err
		},
		"tree":      func(ctx context.Context, who string) error { _, err := h.GetTree(ctx, who, false, id); return err },
		"deadlines": func(ctx context.Context, who string) error { _, err := h.Deadlines(ctx, who, false, id); return err },
		"delegate": func(ctx context.Context, who string) error {
			_, err := h.Delegate(ctx, who, &hubpb.DelegateRequest{SessionId: id.String(),
				Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "zed", AutoAccept: true}}}}})
			return err
		},
		"open a child": func(ctx context.Context, who string) error {
			_, err := h.Open(ctx, who, &hubpb.OpenRequest{Type: "conversation@1", ParentSessionId: id.String(),
				Participants: []*hubpb.Participant{{Name: "zed", AutoAccept: true}}})
			return err
		},
		"close": func(ctx context.Context, who string) error {
			_, err := h.CloseSession(ctx, who, false, id, "")
			return err
		},
	}
}

// TestOutsiderRefusals: every call an outsider makes about a session
// (open with a question pending for a person, then closed) is refused
// NOT_PARTICIPANT or PERMISSION_DENIED (an answer: BAD_ANSWER, "has no
// question to answer"), saying nothing of the session but that the
// caller takes no part in it, and writes nothing.
func TestOutsiderRefusals(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "alice", "bob")
	ask := &hubpb.Envelope{Type: session.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q-secret", Text: "launch code?", Answerer: "carol", Options: []*hubpb.Option{{Id: "y", Label: "yes"}}}}}
	if _, err := e.hub.Send(ctx, "alice", id, ask); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		before, err := e.hub.Get(ctx, "", true, id)
		if err != nil {
			t.Fatal(err)
		}
		said := map[string]string{}
		for name, call := range outsiderCalls(e.hub, id) {
			err := call(ctx, "mallory")
			r, _ := session.ReasonOf(err)
			want := []hubpb.Reason{hubpb.Reason_NOT_PARTICIPANT, hubpb.Reason_PERMISSION_DENIED}
			if strings.Contains(name, "answer") {
				want = []hubpb.Reason{hubpb.Reason_BAD_ANSWER} // "mallory has no question ... to answer", whatever there is
			}
			if !slices.Contains(want, r) {
				t.Errorf("%s: %s: %v (%v); want one of %v", when, name, err, r, want)
				continue
			}
			// The question id an answer names comes back as given: a
			// pending one and a made-up one get the same words.
			msg := strings.ReplaceAll(strings.ReplaceAll(session.Detail(err), "q-secret", "Q"), "q-none", "Q")
			said[name] = msg
			if !strings.Contains(msg, `"mallory"`) {
				t.Errorf("%s: %s: %q does not say who is refused", when, name, msg)
			}
			for _, s := range secrets {
				if strings.Contains(msg, s) {
					t.Errorf("%s: %s: the refusal %q tells an outsider %q", when, name, msg, s)
				}
			}
		}
		for _, pair := range [][2]string{{"send an answer", "send an answer to no one"}, {"answer", "answer no question"}} {
			if said[pair[0]] != said[pair[1]] {
				t.Errorf("%s: an outsider's answer to the pending question is told %q, to none %q", when, said[pair[0]], said[pair[1]])
			}
		}
		after, err := e.hub.Get(ctx, "", true, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.GetSeq() != before.GetSeq() {
			t.Fatalf("%s: an outsider's calls wrote: seq %d → %d", when, before.GetSeq(), after.GetSeq())
		}
	}
	check("open, a question pending")
	if _, err := e.hub.CloseSession(ctx, "alice", false, id, ""); err != nil {
		t.Fatal(err)
	}
	check("closed")
}

// TestAnswererSeesOnlyItsQuestions: a question's answerer who takes no
// part in the session is told of its own pending questions only, never
// of another's question or who that is for.
func TestAnswererSeesOnlyItsQuestions(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "alice", "bob")
	ask := &hubpb.Envelope{Type: session.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q-carol", Text: "ok?", Answerer: "carol", Options: []*hubpb.Option{{Id: "y", Label: "yes"}}}}}
	if _, err := e.hub.Send(ctx, "alice", id, ask); err != nil {
		t.Fatal(err)
	}
	_, err := e.hub.Answer(ctx, "carol", false, &hubpb.AnswerRequest{SessionId: id.String(), Answer: &hubpb.Answer{QuestionId: "q-none", OptionIds: []string{"y"}}})
	if !errors.Is(err, adapters.ErrBadAnswer) || !strings.Contains(session.Detail(err), `"carol" has no question "q-none" to answer in session `+id.String()+` (its questions there: q-carol)`) {
		t.Fatalf("carol answers no question: %v", err)
	}
	// dave has no question there: an outsider like any other.
	_, err = e.hub.Answer(ctx, "dave", false, &hubpb.AnswerRequest{SessionId: id.String(), Answer: &hubpb.Answer{QuestionId: "q-carol", OptionIds: []string{"y"}}})
	if !errors.Is(err, adapters.ErrBadAnswer) || session.Detail(err) != `"dave" has no question "q-carol" to answer in session `+id.String() {
		t.Fatalf("dave answers carol's question: %v", err)
	}
	if _, err := e.hub.Answer(ctx, "carol", false, &hubpb.AnswerRequest{SessionId: id.String(), Answer: &hubpb.Answer{QuestionId: "q-carol", OptionIds: []string{"y"}}}); err != nil {
		t.Fatalf("carol answers her question: %v", err)
	}
}
