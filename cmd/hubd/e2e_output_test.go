package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// outputHub is a running hubd with sessions to print: done, a
// conversation alice and bob finished (labels, a multi-line text, a
// packet that ends it and sets the context); pending, one bob has not
// accepted; held, one whose turn waits for a question to person.
type outputHub struct {
	addr                string
	alice               *agentsdk.Client
	done, pending, held string
	start               time.Time // before any session was opened
}

func newOutputHub(t *testing.T) *outputHub {
	t.Helper()
	d := startDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	h := &outputHub{addr: d.addr, alice: dialAs(t, d.addr, "alice"), start: time.Now()}
	bob := dialAs(t, d.addr, "bob")
	s, err := h.alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		Labels: map[string]string{"team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	h.done = s.ID()
	if _, err := h.alice.SendText(ctx, h.done, "hello bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.SendText(ctx, h.done, "two\nlines"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.alice.SendPacket(ctx, h.done, agentsdk.NewPacket("bye").Finish("done", "").Set("k", 1)); err != nil {
		t.Fatal(err)
	}
	if s, err = h.alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.Invited("bob")}); err != nil {
		t.Fatal(err)
	}
	h.pending = s.ID()
	if s, err = h.alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Task: "deploy?"}); err != nil {
		t.Fatal(err)
	}
	h.held = s.ID()
	q := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "Deploy now?", Answerer: "person", Options: []*hubpb.Option{{Id: "yes"}, {Id: "no"}}}}}
	if _, err := bob.Send(ctx, h.held, q); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs hubd with args against the hub and wants exit 0.
func (h *outputHub) run(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := hubd(t, append(args, "--hub", h.addr)...)
	if code != 0 || errs != "" {
		t.Fatalf("hubd %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// jsonLines returns each message in the one JSON form, a line each.
func jsonLines[M proto.Message](t *testing.T, ms []M) string {
	t.Helper()
	var b strings.Builder
	for _, m := range ms {
		j, err := hubpb.MarshalJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	return b.String()
}

// sameJSON checks `hubd args --output json` and `hubd args --json` print
// want, and returns the output.
func (h *outputHub) sameJSON(t *testing.T, want string, args ...string) string {
	t.Helper()
	out := h.run(t, append(args, "--output", "json")...)
	if short := h.run(t, append(args, "--json")...); short != out {
		t.Errorf("hubd %v: --json printed\n%s\n--output json\n%s", args, short, out)
	}
	if out != want {
		t.Errorf("hubd %v --output json:\n%s\nwant\n%s", args, out, want)
	}
	return out
}

// TestE2EOutputSessionsList prints sessions list as a table, for people
// (aligned columns, the full id first, created and age), and as JSON
// lines, for programs: one SessionInfo per line, the listing's in the one
// JSON form.
func TestE2EOutputSessionsList(t *testing.T) {
	h := newOutputHub(t)
	out := h.run(t, "sessions", "list")
	took := time.Since(h.start)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "ID TYPE STATE REASON CREATOR PARTICIPANTS CREATED AGE" || len(lines) != 4 {
		t.Fatalf("sessions list:\n%s", out)
	}
	want := map[string]string{h.done: "conversation@1 CLOSED done alice alice,bob", h.pending: "conversation@1 PENDING - alice alice,bob",
		h.held: "conversation@1 OPEN - alice alice,bob"}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 8 || strings.Join(f[1:6], " ") != want[f[0]] {
			t.Errorf("row %q, want %s %s", line, f[0], want[f[0]])
			continue
		}
		if starts(lines[0]) != starts(line) {
			t.Errorf("the columns are not aligned:\n%s\n%s", lines[0], line)
		}
		created, err := time.Parse(time.RFC3339, f[6])
		if err != nil || f[6] != created.UTC().Format(time.RFC3339) || created.Before(h.start.Truncate(time.Second)) || created.After(time.Now()) {
			t.Errorf("CREATED %q: %v; want UTC to the second, from %v on", f[6], err, h.start)
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(f[7], "s")); err != nil || !strings.HasSuffix(f[7], "s") || time.Duration(n)*time.Second > took+time.Second {
			t.Errorf("AGE %q; want at most %v in seconds", f[7], took)
		}
	}
	ss, _, err := h.alice.ListSessions(context.Background(), agentsdk.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var infos []*hubpb.SessionInfo
	for _, s := range ss {
		infos = append(infos, s.SessionInfo)
	}
	out = h.sameJSON(t, jsonLines(t, infos), "sessions", "list", "--as", "alice")
	for line := range strings.Lines(out) {
		if err := hubpb.UnmarshalJSON([]byte(line), &hubpb.SessionInfo{}); err != nil {
			t.Errorf("sessions list --output json: %v\n%s", err, line)
		}
	}
}

// starts returns where each column of a table's line starts.
func starts(line string) string {
	var at []string
	for _, m := range regexp.MustCompile(`\S+`).FindAllStringIndex(line, -1) {
		at = append(at, strconv.Itoa(m[0]))
	}
	return strings.Join(at, ",")
}

// TestE2EOutputShow prints a session in words, its holds too, and with
// --output json its SessionInfo indented: the one JSON form sessions show
// printed on one line, which it parses back to.
func TestE2EOutputShow(t *testing.T) {
	h := newOutputHub(t)
	out := h.run(t, "sessions", "show", h.done)
	created := regexp.QuoteMeta(h.start.UTC().Format("2006-01-02T"))
	for _, want := range []string{`session:\s+` + h.done, `type:\s+conversation@1`, `state:\s+CLOSED \(done\)`, `creator:\s+alice`,
		`participants:\s+alice \(creator\), bob \(auto-accept\)`, `labels:\s+team=core`, `expected:\s+-`, `context:\s+k`,
		`seq:\s+6 \(3 turns\)`, `last rule:\s+finish\(done\)`, `usage:\s+tokens=0/0 cost=\$0\.0000 tools=0`,
		`created:\s+` + created + `\d\d:\d\d:\d\dZ \(\d+s ago\)`} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(out) {
			t.Errorf("sessions show lacks a line %s:\n%s", want, out)
		}
	}
	out = h.run(t, "sessions", "show", h.held)
	for _, want := range []string{`state:\s+OPEN`, `expected:\s+-`,
		`holds:\s+bob waits for question q1 \(person answers\) since ` + created + `\d\d:\d\d:\d\dZ \(\d+s\)`} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(out) {
			t.Errorf("sessions show of a held turn lacks a line %s:\n%s", want, out)
		}
	}
	s, err := h.alice.GetSession(context.Background(), h.done)
	if err != nil {
		t.Fatal(err)
	}
	oneLine := jsonLines(t, []*hubpb.SessionInfo{s.SessionInfo})
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(oneLine), "", "  "); err != nil {
		t.Fatal(err)
	}
	out = h.sameJSON(t, indented.String(), "sessions", "show", h.done, "--as", "alice")
	info := &hubpb.SessionInfo{}
	if err := hubpb.UnmarshalJSON([]byte(out), info); err != nil || !proto.Equal(info, s.SessionInfo) || !strings.HasPrefix(out, "{\n  \"meta\": {\n") {
		t.Errorf("sessions show --output json: %v\n%s", err, out)
	}
}

// TestE2EOutputTail prints a finished session's log as a timeline (with
// --timestamps, each line after its time; a question and its withdrawal)
// and as the JSON lines of its envelopes, as export prints them.
func TestE2EOutputTail(t *testing.T) {
	h := newOutputHub(t)
	const want = "[1] invite (all participants auto-accept)\n" +
		"[2] session opened\n" +
		"[3] alice: hello bob\n" +
		"[4] bob: two\n    lines\n" +
		"[5] alice: bye [finish done; set k=1]\n" +
		"[6] session closed: done\n"
	if out := h.run(t, "sessions", "tail", h.done); out != want {
		t.Errorf("sessions tail:\n%s\nwant\n%s", out, want)
	}
	stamped := h.run(t, "sessions", "tail", h.done, "--from", "5", "--timestamps")
	if !regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) \[5\] alice: bye \[finish done; set k=1\]\n\d{4}-\S+Z \[6\] session closed: done\n$`).MatchString(stamped) {
		t.Errorf("sessions tail --timestamps:\n%s", stamped)
	}
	if _, err := h.alice.CloseSession(context.Background(), h.held, "enough"); err != nil {
		t.Fatal(err)
	}
	if out := h.run(t, "sessions", "tail", h.held, "--from", "4"); out != "[4] bob asks person (q1): Deploy now? [yes; no]\n[5] question q1 withdrawn: session_ended\n[6] session closed: enough\n" {
		t.Errorf("sessions tail of a question: %q", out)
	}
	log, err := h.alice.ReadLog(context.Background(), h.done, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	h.sameJSON(t, jsonLines(t, log), "sessions", "tail", h.done)
	h.sameJSON(t, jsonLines(t, log), "sessions", "export", h.done)
}

// TestE2EOutputQuestionsAndTree prints the other listings both ways:
// questions list (a table with when each question was asked, or one
// PendingQuestion per line) and sessions tree (the indented tree, or the
// TreeNode indented); and replay and an act's acknowledgement as JSON.
func TestE2EOutputQuestionsAndTree(t *testing.T) {
	h := newOutputHub(t)
	ctx := context.Background()
	out := h.run(t, "questions", "list", "--as", "person")
	if !regexp.MustCompile(`^SESSION\s+QUESTION\s+ASKER\s+ANSWERER\s+ASKED\s+AGE\s+OPTIONS\s+TEXT\n` + h.held +
		`\s+q1\s+bob\s+person\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\d+s\s+yes\|no\s+Deploy now\?\n$`).MatchString(out) {
		t.Errorf("questions list:\n%s", out)
	}
	qs, err := dialAs(t, h.addr, "person").ListQuestions(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	h.sameJSON(t, jsonLines(t, qs), "questions", "list", "--as", "person")

	if out := h.run(t, "sessions", "tree", h.done); !regexp.MustCompile(`^` + h.done + ` conversation@1 CLOSED done turns=3 .*\ntree usage: `).MatchString(out) {
		t.Errorf("sessions tree:\n%s", out)
	}
	tree, err := h.alice.Tree(ctx, h.done)
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(jsonLines(t, []*hubpb.TreeNode{tree})), "", "  "); err != nil {
		t.Fatal(err)
	}
	h.sameJSON(t, indented.String(), "sessions", "tree", h.done, "--as", "alice")

	out = h.run(t, "sessions", "replay", h.done, "--json")
	r := &hubpb.ReplayResponse{}
	if err := hubpb.UnmarshalJSON([]byte(out), r); err != nil || !r.GetEqual() || len(r.GetSteps()) != 6 {
		t.Errorf("sessions replay --json: %v\n%s", err, out)
	}
	out = h.run(t, "sessions", "close", h.pending, "--as", "alice", "--output", "json")
	ack := &hubpb.SendResponse{}
	if err := hubpb.UnmarshalJSON([]byte(out), ack); err != nil || !ack.GetClosed() || ack.GetCloseReason() != "explicit_close" {
		t.Errorf("sessions close --output json: %v\n%s", err, out)
	}
}

// TestE2EOutputMistakes: an --output the command does not print exits 2
// naming the values it takes, before any hub is dialed.
func TestE2EOutputMistakes(t *testing.T) {
	const closed = "127.0.0.1:1" // nothing listens: a dial would exit 3
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "list", "--output", "yaml"}, `hubd: sessions list: invalid value "yaml" for flag -output: want table or json (see hubd sessions list --help)`},
		{[]string{"sessions", "show", "ID", "--output", "table"}, `hubd: sessions show: invalid value "table" for flag -output: want text or json (see hubd sessions show --help)`},
		{[]string{"sessions", "tail", "ID", "--output="}, `hubd: sessions tail: invalid value "" for flag -output: want text or json`},
		{[]string{"sessions", "tree", "ID", "--output", "text"}, `hubd: sessions tree: invalid value "text" for flag -output: want table or json`},
		{[]string{"sessions", "export", "--output", "table"}, `hubd: sessions export: invalid value "table" for flag -output: want json (see hubd sessions export --help)`},
		{[]string{"questions", "list", "--output", "csv"}, `hubd: questions list: invalid value "csv" for flag -output: want table or json`},
		{[]string{"sessions", "send", "ID", "hi", "--output", "table"}, `hubd: sessions send: invalid value "table" for flag -output: want text or json`},
		{[]string{"sessions", "list", "--json=maybe"}, `hubd: sessions list: invalid boolean value "maybe" for -json`},
		{[]string{"cluster", "status", "--nats", "nats://" + closed, "--output", "yaml"}, `hubd: cluster status: invalid value "yaml" for flag -output: want table or json`},
	} {
		args := tc.args
		if args[0] != "cluster" {
			args = append(args, "--hub", closed)
		}
		code, out, errs := hubd(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit 2, %q", tc.args, code, out, errs, tc.want)
		}
	}
}
