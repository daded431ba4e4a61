package main

import (
	"bufio"
	"bytes"
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
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
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
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "info"}, args...), nil, io.Discard, pw)
		pw.Close()
	}()
	addr, err := listenAddr(bufio.NewScanner(pr))
	if err != nil {
		t.Fatalf("serve did not say it listens: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	return addr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve exited with %v", err)
		}
	}
}

// listenAddr reads JSON log lines until the "hubd listening" one and
// returns its address.
func listenAddr(sc *bufio.Scanner) (string, error) {
	for sc.Scan() {
		var line struct{ Message, Listen string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "hubd listening" {
			return line.Listen, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", io.ErrUnexpectedEOF
}

// devClient dials addr as agent (development mode) through agentsdk.
func devClient(t *testing.T, addr, agent string) hubsvc.HubClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := agentsdk.Dial(ctx, addr, agentsdk.Options{Name: agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.Raw()
}

// anonClient dials addr without credentials.
func anonClient(t *testing.T, addr string) hubsvc.HubClient { return dialWith(t, addr) }

// dialWith dials addr sending the metadata md on every call.
func dialWith(t *testing.T, addr string, md ...string) hubsvc.HubClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return inv(metadata.AppendToOutgoingContext(ctx, md...), m, req, reply, cc, o...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return hubsvc.NewHubClient(conn)
}

// text is a text envelope.
func text(s string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
}

// TestServeAndClientCommands serves on a temp data dir, drives a session,
// uses the sessions commands against it (flags before and after the
// arguments), stops it, verifies the log offline, and checks a restart
// serves the same session.
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
	id := resp.GetSession().GetMeta().GetSessionId()
	for _, txt := range []string{"hello", "bye"} {
		if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text(txt)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sessions", "list", "--hub", addr}, []string{id, "conversation@1", "CLOSED", "alice", "alice,bob", "done"}},
		{[]string{"sessions", "list", "--label", "team=other", "--hub", addr}, []string{"ID "}},
		{[]string{"sessions", "list", "--as", "carol", "--hub", addr}, []string{"ID "}},
		{[]string{"sessions", "show", "--hub", addr, id}, []string{"session:       " + id + "\n", "state:         CLOSED (done)\n", "seq:           5 (2 turns)\n"}},
		{[]string{"sessions", "show", id, "--hub", addr, "--json"}, []string{`"close_reason": "done"`, `"seq": "5"`, `"session_id": "` + id + `"`}},
		{[]string{"sessions", "tail", id, "--from", "3", "--hub", addr}, []string{"[3] alice: hello\n[4] alice: bye\n[5] session closed: done\n"}},
		{[]string{"sessions", "tail", id, "--from", "3", "--hub", addr, "--output", "json"}, []string{`"seq":"3"`, `"text":{"text":"hello"}`, `"type":"session_closed"`}},
		{[]string{"sessions", "tail", "--hub", addr, id, "--from", "6"}, nil},
		{[]string{"sessions", "export", "--hub", addr}, []string{`"seq":"1"`, `"type":"session_invite"`, `"seq":"5"`}},
		{[]string{"sessions", "export", id, "--hub", addr}, []string{`"seq":"1"`, `"seq":"5"`}},
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
		if tc.want == nil && out != "" {
			t.Errorf("%v: printed %q, want nothing", tc.args, out)
		}
		if strings.Contains(strings.Join(tc.args, " "), "carol") && strings.Contains(out, id) {
			t.Errorf("carol listed a session she is not in:\n%s", out)
		}
	}
	checkExport(t, addr, id)
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

// checkExport reads the export back as envelopes: every line is one in the
// one JSON form, seq 1 to 5, and equals the log read over gRPC.
func checkExport(t *testing.T, addr, id string) {
	t.Helper()
	_, out, _ := runCmd(t, "", "sessions", "export", "--hub", addr)
	log, err := devClient(t, addr, "operator").ReadLog(context.Background(), &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(log.GetEnvelopes()) {
		t.Fatalf("export has %d lines, the log %d envelopes", len(lines), len(log.GetEnvelopes()))
	}
	for i, line := range lines {
		e := &hubpb.Envelope{}
		if err := hubpb.UnmarshalJSON([]byte(line), e); err != nil || e.GetSeq() != uint64(i+1) || !proto.Equal(e, log.GetEnvelopes()[i]) {
			t.Fatalf("export line %d: %v %s", i+1, err, line)
		}
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
	open := func() string {
		resp, err := h.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetSession().GetMeta().GetSessionId()
	}
	good, bad := open(), open()
	h.Close()
	if err := l.Append(ctx, wal.Write{Session: session.MustParseID(bad), Records: []wal.Record{{Seq: 3, Data: []byte("not an envelope")}}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	code, out, _ := runCmd(t, "", "log", "verify", "--data", data)
	if code != 1 || !strings.Contains(out, "BAD "+bad) || strings.Contains(out, good) ||
		!strings.Contains(out, "2 sessions, 5 records, 1 bad") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestLogFormats: json and auto (on anything but a terminal) write one
// JSON object a line, console lays the line out for people; an unknown
// format is a usage error.
func TestLogFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		json   bool
	}{{"json", true}, {"auto", true}, {"console", false}} {
		var buf bytes.Buffer
		lg, err := newLogger(&buf, tc.format, "info")
		if err != nil {
			t.Fatal(err)
		}
		lg.Info().Str("session", "s1").Msg("session opened")
		var line map[string]any
		isJSON := json.Unmarshal(buf.Bytes(), &line) == nil
		if isJSON != tc.json || !strings.Contains(buf.String(), "session opened") {
			t.Errorf("--log-format %s wrote %q (JSON: %v, want %v)", tc.format, buf.String(), isJSON, tc.json)
		}
		if tc.json && (line["session"] != "s1" || line["level"] != "info") {
			t.Errorf("--log-format %s: fields %v", tc.format, line)
		}
	}
	if _, err := newLogger(io.Discard, "xml", "info"); err == nil || !strings.Contains(err.Error(), "auto") {
		t.Errorf("--log-format xml: %v, want a usage error naming the formats", err)
	}
}
