package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// serveInProcess runs `hubd serve` through run() on a free port and returns
// its address and a stop function that waits for a clean exit.
func serveInProcess(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...), nil, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed nothing: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	addr := strings.Fields(strings.TrimPrefix(line, "hubd listening on "))[0]
	return addr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve exited with %v", err)
		}
	}
}

// devClient dials addr as agent (development mode).
func devClient(t *testing.T, addr, agent string) hubpb.HubClient {
	return dialWith(t, addr, hubgrpc.AgentHeader, agent)
}

// anonClient dials addr without credentials.
func anonClient(t *testing.T, addr string) hubpb.HubClient { return dialWith(t, addr) }

func dialWith(t *testing.T, addr string, md ...string) hubpb.HubClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return inv(metadata.AppendToOutgoingContext(ctx, md...), m, req, reply, cc, o...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, d *grpc.StreamDesc, cc *grpc.ClientConn, m string, s grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			return s(metadata.AppendToOutgoingContext(ctx, md...), d, cc, m, o...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return hubpb.NewHubClient(conn)
}

// TestServeAndClientCommands serves on a temp data dir, drives a session,
// uses the sessions commands against it, stops it, verifies the log
// offline, and checks a restart serves the same session.
func TestServeAndClientCommands(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	addr, stop := serveInProcess(t, "--data", data)
	ctx := context.Background()
	alice := devClient(t, addr, "alice")
	resp, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}},
		Labels: map[string]string{"team": "docs"}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetSessionId()
	for _, txt := range []string{"hello", "bye"} {
		if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text",
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: txt}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	hub := []string{"--hub", addr}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{append([]string{"sessions", "list"}, hub...), []string{id, "conversation@1", "CLOSED", "alice", "alice,bob", "done"}},
		{append([]string{"sessions", "list", "--label", "team=other"}, hub...), []string{"SESSION"}},
		{append([]string{"sessions", "list", "--as", "carol"}, hub...), []string{"SESSION"}},
		{append(append([]string{"sessions", "show"}, hub...), id), []string{`"closeReason"`, `"done"`, `"5"`}},
		{append(append([]string{"sessions", "tail", "--from", "3"}, hub...), id), []string{`"seq":3`, `"text":"hello"`, `"type":"session_closed"`}},
		{append([]string{"sessions", "export"}, hub...), []string{`"seq":1`, `"type":"session_invite"`, `"seq":5`}},
	} {
		code, out, errs := runCmd(t, "", tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if strings.Contains(strings.Join(tc.args, " "), "carol") && strings.Contains(out, id) {
			t.Errorf("carol listed a session she is not in:\n%s", out)
		}
	}
	_, out, _ := runCmd(t, "", append([]string{"sessions", "export"}, hub...)...)
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil || e["seq"] != float64(i+1) {
			t.Fatalf("export line %d: %v %s", i+1, err, line)
		}
	}
	stop()

	code, out, errs := runCmd(t, "", "log", "verify", "--data", data)
	if code != 0 || !strings.Contains(out, "1 sessions, 5 records, 0 bad") {
		t.Fatalf("log verify: exit %d\n%s%s", code, out, errs)
	}
	addr, stop = serveInProcess(t, "--data", data)
	defer stop()
	info, err := devClient(t, addr, "bob").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || info.GetState() != "CLOSED" || info.GetSeq() != 5 {
		t.Fatalf("after restart: %v %v", info, err)
	}
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	code, _, errs := runCmd(t, "", "serve", "--listen", "0.0.0.0:0", "--data", t.TempDir())
	if code == 0 || !strings.Contains(errs, "without --tokens or --client-ca") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestServeFlagErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(bad, []byte("alice short\n"), 0o600)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"serve", "--log-format", "xml"}, "--log-format"},
		{[]string{"serve", "--log-level", "loud"}, "--log-level"},
		{[]string{"serve", "--tokens", bad}, "shorter than 16"},
		{[]string{"serve", "--tokens", "/nonexistent"}, "no such file"},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"log", "verify", "--data", filepath.Join(bad, "nope")}, "opening"},
	} {
		code, _, errs := runCmd(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.err)
		}
	}
	_ = time.Second
}

// TestLogVerifyFindsCorruption writes a session and a record that does not
// decode straight into a data dir: log verify names the bad session and
// exits 1.
func TestLogVerifyFindsCorruption(t *testing.T) {
	data := t.TempDir()
	l, err := wal.Open(wal.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := hub.New(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := h.Open(ctx, "a", hub.OpenRequest{Type: session.Type{Kind: "conversation", Version: 1}, Participants: []session.Participant{{Name: "b", AutoAccept: true}}})
	bad, _ := h.Open(ctx, "a", hub.OpenRequest{Type: session.Type{Kind: "conversation", Version: 1}, Participants: []session.Participant{{Name: "b", AutoAccept: true}}})
	h.Close()
	if err := l.Append(ctx, wal.Write{Session: bad.Meta.ID, Records: []wal.Record{{Seq: 3, Data: []byte("not an envelope")}}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	code, out, _ := runCmd(t, "", "log", "verify", "--data", data)
	if code != 1 || !strings.Contains(out, "BAD "+bad.Meta.ID.String()) || strings.Contains(out, good.Meta.ID.String()) ||
		!strings.Contains(out, "2 sessions, 5 records, 1 bad") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
