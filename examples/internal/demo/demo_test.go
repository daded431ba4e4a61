package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// packet is a packet envelope from the builder p.
func packet(t *testing.T, seq uint64, from string, p *agentsdk.Packet) *hubpb.Envelope {
	t.Helper()
	pb, err := p.Proto()
	if err != nil {
		t.Fatal(err)
	}
	return &hubpb.Envelope{Seq: seq, From: from, Type: agentsdk.EventPacket, Payload: &hubpb.Envelope_Packet{Packet: pb}}
}

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		e    *hubpb.Envelope
		want string
	}{
		{&hubpb.Envelope{Seq: 4, From: "a", Type: agentsdk.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi"}}}, "[4] a: hi"},
		{packet(t, 5, "r", agentsdk.NewPacket("over").Handoff("transfer_to_b", "", "").Set("k", "v").Set("n", map[string]any{"a": []int{1, 2}}).Delete("old")),
			`[5] r: over [handoff transfer_to_b; set k="v"; set n={"a":[1,2]}; delete old]`},
		{packet(t, 6, "r", agentsdk.NewPacket("bye").Finish("done", "")), "[6] r: bye [finish done]"},
		{packet(t, 7, "s", agentsdk.NewPacket("help").Escalate("stuck")), "[7] s: help [escalate]"},
		{packet(t, 8, "s", agentsdk.NewPacket("plain")), "[8] s: plain"},
	} {
		if got := Line(tc.e); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func pair(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
	return c.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.Invited("bob"), Labels: labels})
}

func say(text string) agentsdk.Handler {
	return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) { return agentsdk.ReplyText(text), nil }
}

// TestRemoteHubWithTokens runs a scenario against a hub named by --hub,
// with the agents' tokens from --token-file.
func TestRemoteHubWithTokens(t *testing.T) {
	const file = "# agents\nalice alice-token-0123456789\nbob bob-token-0123456789 operator\n"
	tk, err := hubgrpc.ParseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", InMemory: true, Tokens: tk})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := Scenario{Agents: []Agent{{Name: "alice", Handle: say("hello")}, {Name: "bob", Handle: say("bye")}}, Open: pair}
	var out, errs bytes.Buffer
	if err := Run(context.Background(), "test", []string{"--hub", srv.Addr(), "--token-file", path}, &out, &errs, sc); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if want := "[4] alice: hello\n[5] bob: bye\nclosed: sequence_complete\n"; out.String() != want {
		t.Errorf("got:\n%s", out.String())
	}
	// Without tokens the hub refuses the agents.
	out.Reset()
	if err := Run(context.Background(), "test", []string{"--hub", srv.Addr()}, &out, &errs, sc); err == nil {
		t.Errorf("development names accepted by a hub with tokens:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	for _, args := range [][]string{{"--nope"}, {"extra"}, {"--token-file", "/does/not/exist"}} {
		if err := Run(context.Background(), "test", args, &out, &errs, Scenario{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestRunSessions: an example's agents serve the session labelled with the
// run and the sessions delegated from those, and nothing else.
func TestRunSessions(t *testing.T) {
	r := newRun("test")
	session := func(id, parent string, labels map[string]string) *agentsdk.Session {
		return &agentsdk.Session{SessionInfo: &hubpb.SessionInfo{Meta: &hubpb.SessionMeta{SessionId: id, ParentSessionId: parent, Labels: labels}}}
	}
	if !strings.HasPrefix(r.labels[Label], "test-") || newRun("test").labels[Label] == r.labels[Label] {
		t.Fatalf("run labels %v", r.labels)
	}
	for _, tc := range []struct {
		s    *agentsdk.Session
		want bool
	}{
		{session("root", "", r.labels), true},
		{session("child", "root", map[string]string{"task": "news"}), true},
		{session("grandchild", "child", nil), true},
		{session("theirs", "", nil), false},
		{session("their-child", "theirs", nil), false},
		{session("another-run", "", map[string]string{Label: "test-00000000"}), false},
		{session("its-child", "another-run", nil), false},
	} {
		if got := r.serves(tc.s); got != tc.want {
			t.Errorf("%s: serves %v, want %v", tc.s.ID(), got, tc.want)
		}
	}
}
