package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// TestQuestionsCLI lists and answers a question from the terminal: a wrong
// option is refused naming the valid ones, and so is a question id not
// pending for the caller (exit 1: a mistake on the command line exits 2),
// and the answer is logged as the person's.
func TestQuestionsCLI(t *testing.T) {
	h := hubtest.New(t)
	ctx := context.Background()
	user, main := dialAs(t, h.Addr(), "user"), dialAs(t, h.Addr(), "main")
	s, err := user.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("main"), Task: "deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	q := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "Deploy the\nrelease now?", Answerer: "person",
		Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}, {Id: "no", Label: "Not yet"}}}}}
	if _, err := main.Send(ctx, s.ID(), q); err != nil {
		t.Fatal(err)
	}
	hub := []string{"--hub", h.Addr()}
	code, out, errs := runCmd(t, "", append([]string{"questions", "list", "--as", "person"}, hub...)...)
	want := regexp.MustCompile(`^SESSION\s+QUESTION\s+ASKER\s+ANSWERER\s+ASKED\s+AGE\s+OPTIONS\s+TEXT\n` +
		s.ID() + `\s+q1\s+main\s+person\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\d+s\s+yes\|no\s+Deploy the release now\?\n$`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("questions list: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCmd(t, "", append([]string{"questions", "list", "--as", "user"}, hub...)...); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("questions list for someone with none: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"questions", "answer", "q1", "maybe", "--as", "person"}, 1, `hubd: questions answer: question "q1" has no option "maybe" (options: yes, no) (BAD_ANSWER)` + "\n"},
		{[]string{"questions", "answer", "q9", "yes", "--as", "person"}, 1, `hubd: questions answer: no question "q9" is pending for you (pending: q1)` + "\n"},
		{[]string{"questions", "answer", "q1", "--as", "person"}, 2, "hubd: questions answer: want OPTION ... or --text T\n"},
		{[]string{"questions", "answer", "--as", "person"}, 2, "hubd: questions answer: want QUESTION [OPTION ...] [--text T] [--session ID], got 0 arguments (see hubd questions answer --help)\n"},
		{[]string{"questions", "answer", "q1", "yes", "--as", "user"}, 1, `hubd: questions answer: no question "q1" is pending for you (none is; see hubd questions list)` + "\n"},
		{[]string{"questions", "answer", "q1", "yes", "--as", "user", "--session", s.ID()}, 1, `hubd: questions answer: question "q1" is for "person" to answer, not "user" (BAD_ANSWER)` + "\n"},
	} {
		code, out, errs := runCmd(t, "", append(tc.args, hub...)...)
		if code != tc.code || out != "" || errs != tc.err {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, %q", tc.args, code, out, errs, tc.code, tc.err)
		}
	}
	code, out, errs = runCmd(t, "", append([]string{"questions", "answer", "q1", "yes", "--as", "person"}, hub...)...)
	if code != 0 || !regexp.MustCompile(`^answered q1 in `+s.ID()+` at seq 5\n$`).MatchString(out) {
		t.Fatalf("questions answer: exit %d\n%s%s", code, out, errs)
	}
	es, err := main.ReadLog(ctx, s.ID(), 5, 1)
	if err != nil || len(es) != 1 || es[0].GetFrom() != "person" || es[0].GetAnswer().GetOptionIds()[0] != "yes" {
		t.Fatalf("the answer as logged: %v, %v", es, err)
	}
}

// TestTreeAndReplayCLI prints a tree with a finished child and replays the
// parent: every turn with its rule, and the replay equal to the live state.
func TestTreeAndReplayCLI(t *testing.T) {
	h := hubtest.New(t)
	ctx := context.Background()
	user, main, research := dialAs(t, h.Addr(), "user"), dialAs(t, h.Addr(), "main"), dialAs(t, h.Addr(), "research")
	s, err := user.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("main"), Task: "acme?"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := main.Delegate(ctx, s.ID(), agentsdk.DelegateOptions{Children: []agentsdk.OpenOptions{{
		Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("research"), Task: "find acme news"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := agentsdk.NewPacket("v2").Finish("", "acme shipped v2").WithUsage(&hubpb.Usage{InputTokens: 100, OutputTokens: 20, CostUsd: 0.01})
	if _, err := research.SendPacket(ctx, tasks[0].ID, p); err != nil {
		t.Fatal(err)
	}
	if _, err := main.SendText(ctx, s.ID(), "acme shipped v2"); err != nil {
		t.Fatal(err)
	}
	hub := []string{"--hub", h.Addr()}
	code, out, errs := runCmd(t, "", append([]string{"sessions", "tree", s.ID()}, hub...)...)
	want := regexp.MustCompile(`^` + s.ID() + ` conversation@1 OPEN turns=2 tokens=0/0 cost=\$0\.0000 tools=0 took=\S+\n` +
		`  ` + tasks[0].ID + ` conversation@1 CLOSED finished turns=2 tokens=100/20 cost=\$0\.0100 tools=0 took=\S+\n` +
		`tree usage: tokens=100/20 cost=\$0\.0100 tools=0\n$`)
	if code != 0 || !want.MatchString(out) {
		t.Errorf("sessions tree: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "", append([]string{"sessions", "replay", s.ID()}, hub...)...)
	wantReplay := "#1 hub session_invite → PENDING turn=0 expected=\n" +
		"#2 hub session_opened → OPEN turn=0 expected=user\n" +
		"#3 user text rule=\"free turn\" → OPEN turn=1 expected=main\n" +
		"#4 hub delegation → OPEN turn=1 expected=\n" +
		"#5 hub delegation_result → OPEN turn=1 expected=main\n" +
		"#6 main text rule=\"free turn\" → OPEN turn=2 expected=user\n" +
		"the replay equals the live state\n"
	if code != 0 || out != wantReplay {
		t.Errorf("sessions replay: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = runCmd(t, "", append([]string{"sessions", "replay", s.ID(), "--as", "user"}, hub...)...)
	if code != 1 || !strings.HasSuffix(errs, "(PERMISSION_DENIED)\n") {
		t.Errorf("sessions replay by a participant: exit %d, %q; want PERMISSION_DENIED", code, errs)
	}
}

// dialAs connects to addr as name in development mode.
func dialAs(t *testing.T, addr, name string) *agentsdk.Client {
	t.Helper()
	c, err := agentsdk.Dial(context.Background(), addr, agentsdk.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
