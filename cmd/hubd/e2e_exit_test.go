package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestE2EClientExitCodes runs the binary's client commands to each way
// they end: done (0), refused by the hub or with nothing to act on (1), a
// mistake on the command line (2), no hub to reach (3).
func TestE2EClientExitCodes(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user, main := dialAs(t, d.addr, "user"), dialAs(t, d.addr, "main")
	s, err := user.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("main"), Task: "deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	q := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "Deploy?", Answerer: "person", Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}}}}}
	if _, err := main.Send(ctx, s.ID(), q); err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	const unknown = "0190d1a0-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		args []string
		code int
		err  string // the start of stderr
	}{
		{[]string{"questions", "answer", "q1", "yes", "--as", "someone-else"}, 1, `hubd: questions answer: no question "q1" is pending for you`},
		{[]string{"questions", "answer", "q9", "yes", "--as", "person"}, 1, `hubd: questions answer: no question "q9" is pending for you (pending: q1)`},
		{[]string{"questions", "answer", "q1", "maybe", "--as", "person"}, 1, `hubd: questions answer: question "q1" has no option "maybe"`},
		{[]string{"questions", "answer", "q1", "yes", "--as", "user", "--session", s.ID()}, 1, `hubd: questions answer: question "q1" is for "person" to answer`},
		{[]string{"sessions", "show", unknown}, 1, "hubd: sessions show: no session " + unknown + " (UNKNOWN_SESSION)"},
		{[]string{"questions", "answer", "q1", "--as", "person"}, 2, "hubd: questions answer: want OPTION ... or --text T"},
		{[]string{"sessions", "show"}, 2, "hubd: sessions show: want ID, got 0 arguments"},
		{[]string{"sessions", "list", "--hub", "10.255.255.1:7420", "--token", "t0ken"}, 2, "hubd: sessions list: agentsdk: refusing to send a token over plaintext"},
		{[]string{"sessions", "list", "--hub", closed, "--connect-timeout", "300ms"}, 3, "hubd: sessions list: cannot reach hubd at " + closed + ": connection refused"},
		{[]string{"questions", "list", "--hub", closed, "--connect-timeout", "300ms"}, 3, "hubd: questions list: cannot reach hubd at " + closed},
		{[]string{"log", "backup", "-", "--hub", closed, "--connect-timeout", "300ms"}, 3, "hubd: log backup: cannot reach hubd at " + closed},
	} {
		args := tc.args
		if !strings.Contains(strings.Join(args, " "), "--hub") {
			args = append(args, "--hub", d.addr)
		}
		code, out, errs := hubd(t, args...)
		if code != tc.code || out != "" || !strings.HasPrefix(errs, tc.err) {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit %d, stderr beginning %q", tc.args, code, out, errs, tc.code, tc.err)
		}
	}
	if code, out, errs := hubd(t, "questions", "answer", "q1", "yes", "--as", "person", "--hub", d.addr); code != 0 {
		t.Errorf("the answerer's answer: exit %d\n%s%s", code, out, errs)
	}
}

// closedPort returns a loopback address nothing listens on: a port the
// system gave, closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
