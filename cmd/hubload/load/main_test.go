package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
)

// startHub starts an in-process hub (development mode, fsync on) on addr
// over the log in dir; stop it with stopHub.
func startHub(t *testing.T, dir, addr string) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Config{Listen: addr, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// stopHub shuts srv down.
func stopHub(t *testing.T, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// hubFor starts a hub (development mode, fsync on) for the whole test.
func hubFor(t *testing.T) *hubtest.Hub {
	t.Helper()
	return hubtest.New(t, hubtest.Options{DataDir: t.TempDir()})
}

// runArgs runs hubload and returns its stdout and stderr.
func runArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestLoadReportsThroughputWithoutRejections(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "8", "--sessions", "4", "--payload", "64",
		"--duration", "2s", "--warmup", "200ms")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	t.Log(out)
	m := regexp.MustCompile(`accepted (\d+) in [0-9.]+s = (\d+)/s; send→ack p50 [0-9.]+ms .*send→next told p50 [0-9.]+ms .*rejected: 0\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("report does not match:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Errorf("nothing accepted:\n%s", out)
	}
}

func TestLoadJSON(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "4", "--sessions", "2", "--duration", "1s",
		"--warmup", "0s", "--json", "--conns", "2", "--hub-pid", strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Accepted == 0 || r.PerSecond <= 0 || r.SendToAck.Count == 0 || r.SendToTold.Count == 0 {
		t.Errorf("empty measurements: %+v", r)
	}
	if r.SendToAck.P50 <= 0 || r.SendToAck.P50 > r.SendToAck.P99 || r.SendToAck.P99 > r.SendToAck.Max {
		t.Errorf("percentiles out of order: %+v", r.SendToAck)
	}
	if len(r.Rejected) != 0 {
		t.Errorf("rejected: %v", r.Rejected)
	}
	if r.Conns != 2 || r.Hub == nil || r.Hub.RSSAfterMiB <= 0 || r.Hub.ThreadsAfter <= 0 {
		t.Errorf("conns or hub usage wrong: %+v %+v", r, r.Hub)
	}
}

// TestDelegationWorkload measures delegation round trips beside turns in
// two sessions: both are sampled, in order, and every parent session is
// finished when the run ends.
func TestDelegationWorkload(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--workload", "delegation", "--sessions", "2",
		"--duration", "1s", "--warmup", "100ms", "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r delegationReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for name, l := range map[string]Latency{"turn": r.Turn, "delegation": r.Delegation} {
		if l.Count == 0 || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s latency: %+v", name, l)
		}
	}
	if r.Failed != 0 || r.RatioP50 != r.Delegation.P50/r.Turn.P50 {
		t.Errorf("report: %+v", r)
	}
	c, err := agentsdk.Dial(context.Background(), srv.Addr(), agentsdk.Options{Name: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	open, _, err := c.ListSessions(context.Background(), agentsdk.ListOptions{State: agentsdk.StateOpen})
	if err != nil || len(open) != 0 {
		t.Errorf("%d open sessions after the run (%v)", len(open), err)
	}
}

// TestLoadAgentsInSeveralSessions runs fewer agents than two per session,
// and a three-agent pipeline: turns are still taken without rejection.
func TestLoadAgentsInSeveralSessions(t *testing.T) {
	srv := hubFor(t)
	for _, c := range [][2]string{{"3", "4"}, {"3", "1"}} {
		out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", c[0], "--sessions", c[1], "--duration", "1s", "--warmup", "100ms")
		if err != nil {
			t.Fatalf("agents %s sessions %s: %v\n%s%s", c[0], c[1], err, out, errOut)
		}
		if !strings.Contains(out, "rejected: 0\n") || strings.Contains(out, "(no sample)") {
			t.Errorf("agents %s sessions %s:\n%s", c[0], c[1], out)
		}
	}
}

// TestMaxTurnsVerifyCheck caps each session: the run ends by itself, the
// verify file holds exactly every turn, and --check finds them all.
func TestMaxTurnsVerifyCheck(t *testing.T) {
	srv := hubFor(t)
	file := filepath.Join(t.TempDir(), "acked.txt")
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "4", "--sessions", "2", "--max-turns", "10",
		"--duration", "1m", "--warmup", "0s", "--verify", file)
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "accepted 20 in ") {
		t.Errorf("want 20 accepted (2 sessions of 10 turns):\n%s", out)
	}
	out, errOut, err = runArgs(t, "--hub", srv.Addr(), "--check", file)
	if err != nil || out != "acked 20, found 20\n" {
		t.Fatalf("check: %v\n%s%s", err, out, errOut)
	}
}

// TestVerifyCheckAcrossRestart records a run, restarts the hub on the same
// data directory and address, and checks every acknowledged send is there;
// then tampers with the file and sees the check fail.
func TestVerifyCheckAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "acked.txt")
	srv := startHub(t, dir, "127.0.0.1:0")
	addr := srv.Addr()
	out, errOut, err := runArgs(t, "--hub", addr, "--agents", "6", "--sessions", "3", "--duration", "1s", "--warmup", "0s", "--verify", file)
	stopHub(t, srv)
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	srv = startHub(t, dir, addr)
	defer stopHub(t, srv)
	recs := readFile(t, file)
	want := "acked " + strconv.Itoa(len(recs)) + ", found " + strconv.Itoa(len(recs)) + "\n"
	out, errOut, err = runArgs(t, "--hub", addr, "--check", file)
	if err != nil || out != want || len(recs) == 0 {
		t.Fatalf("check: %v\ngot %q want %q\n%s", err, out, want, errOut)
	}

	r := recs[0]
	bogus := []string{
		r.session + " 999999 " + r.msgID,                                  // a seq the log never had
		r.session + " " + strconv.FormatUint(r.seq, 10) + " not-this-one", // another envelope's seq
		"0190d5a8-0000-7000-8000-000000000000 1 x",                        // a session the hub does not know
	}
	appendLines(t, file, bogus...)
	out, _, err = runArgs(t, "--hub", addr, "--check", file)
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("check of a tampered file: err %v, want exit 1\n%s", err, out)
	}
	head := "acked " + strconv.Itoa(len(recs)+3) + ", found " + strconv.Itoa(len(recs)) + "\n"
	if !strings.HasPrefix(out, head) || strings.Count(out, "\nmissing ") != 3 {
		t.Errorf("check output:\n%s\nwant it to start with %q and list 3 missing", out, head)
	}
}

func readFile(t *testing.T, path string) []ackRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, partial, err := readVerify(f)
	if err != nil || partial {
		t.Fatalf("reading %s: %v (partial %v)", path, err, partial)
	}
	return recs
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestIdle(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--idle", "20", "--conns", "5", "--duration", "100ms",
		"--hub-pid", strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatalf("idle: %v\n%s%s", err, out, errOut)
	}
	if !strings.HasPrefix(out, "idle: 20 subscriptions open on 5 connections\nhub pid ") {
		t.Errorf("idle output:\n%s", out)
	}
}

// TestRejections classifies errors a real hub answers: a turn out of order
// is counted by its reason and neither retried nor the end of the session;
// a closed session ends its workers; a hub shutting down is retried.
func TestRejections(t *testing.T) {
	ctx := t.Context()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	up := true
	defer func() {
		if up {
			h.Close()
		}
	}()
	names := []string{"hl-test-a0", "hl-test-a1"}
	p, err := dial(ctx, h.Addr(), names, 1) // one shared connection
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	a0, a1 := as(ctx, names[0]), as(ctx, names[1])
	s, err := p.client(0).Open(a0, agentsdk.OpenOptions{Participants: agentsdk.AutoAccepted(names...), Graph: graph(names, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.client(1).SendText(a1, s.ID(), "not yet")
	if reasonOf(err) != "OUT_OF_TURN" || retryable(err) || sessionGone(err) {
		t.Errorf("out of turn: %v (%s)", err, reasonOf(err))
	}
	if _, err := p.client(0).CloseSession(a0, s.ID(), ""); err != nil {
		t.Fatal(err)
	}
	_, err = p.client(0).SendText(a0, s.ID(), "too late")
	if reasonOf(err) != "SESSION_CLOSED" || retryable(err) || !sessionGone(err) {
		t.Errorf("closed: %v (%s)", err, reasonOf(err))
	}
	up = false
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = p.client(0).SendText(a0, s.ID(), "hub down")
	if r := reasonOf(err); (r != "UNAVAILABLE" && r != "DRAINING") || !retryable(err) {
		t.Errorf("hub down: %v (%s)", err, r)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--hub", "10.1.2.3:7420"},
		{"--hub", "192.168.0.1:7420", "--check", "f"},
		{"--hub", "example.com:7420"},
		{"--hub", "0.0.0.0:7420"},
		{"--hub", "127.0.0.1"},
		{"--agents", "1"},
		{"--sessions", "0", "--agents", "0"},
		{"--payload", "0"},
		{"--duration", "11m"},
		{"--duration", "0s"},
		{"--warmup", "-1s"},
		{"--max-turns", "-1"},
		{"--check", "a", "--verify", "b"},
		{"--idle", "5", "--verify", "b"},
		{"--workload", "bursts"},
		{"--workload", "delegation", "--verify", "b"},
		{"--workload", "chat"},
		{"--workload", "sessions", "--conc", "0"},
		{"--workload", "sessions", "--verify", "b"},
		{"--workload", "sessions", "--max-turns", "3"},
		{"--floor-apart"}, // the floors and the table are the laboratory's (bench/table)
		{"--table"},
		{"--hub-http", "127.0.0.1:7421", "--check", "a"},
		{"--hub-http", "10.1.2.3:7421"},
		{"--transport", "carrier-pigeon"},
		{"extra"},
		{"--no-such-flag"},
	} {
		_, _, err := runArgs(t, args...)
		var ee *exitcode.Error
		if !errors.As(err, &ee) || ee.Code != 2 {
			t.Errorf("%v: err %v, want a usage error (exit 2)", args, err)
		}
	}
	_, _, err := runArgs(t, "--hub", "10.1.2.3:7420")
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a non-loopback hub: %v, want it refused as not loopback", err)
	}
	if _, _, err := runArgs(t, "--help"); exitcode.Report("hubload", err, &bytes.Buffer{}) != 0 {
		t.Errorf("--help: %v", err)
	}
}

func TestCheckFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("0190d5a8-0000-7000-8000-000000000000 x id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.txt"), bad} {
		_, _, err := runArgs(t, "--hub", "127.0.0.1:1", "--check", path)
		var ee *exitcode.Error
		if !errors.As(err, &ee) || ee.Code != 2 {
			t.Errorf("--check %s: %v, want exit 2", path, err)
		}
	}
}

func TestHubDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := Run(ctx, []string{"--hub", "127.0.0.1:1", "--agents", "2", "--duration", "1s"}, &stdout, &stderr)
	if err == nil || exitcode.Report("hubload", err, &stderr) != 1 || !strings.Contains(stderr.String(), "not reachable") {
		t.Errorf("no hub: %v, want exit 1 saying the hub is not reachable\n%s", err, stderr.String())
	}
}

// TestInterrupt cancels a long run: it stops like --duration does and
// still reports.
func TestInterrupt(t *testing.T) {
	srv := hubFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Run(ctx, []string{"--hub", srv.Addr(), "--agents", "4", "--duration", "5m", "--warmup", "0s"}, &stdout, &stderr)
	if err != nil || time.Since(start) > 30*time.Second {
		t.Fatalf("interrupted run: %v after %v\n%s%s", err, time.Since(start), stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "rejected: 0\n") {
		t.Errorf("report:\n%s", stdout.String())
	}
}

// TestIdleHubMetrics: with --hub-http, idle mode reads the hub's
// goroutines, heap and stacks from its /metrics, after a forced GC, and
// reports them per subscription.
func TestIdleHubMetrics(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer stopHub(t, srv)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--hub-http", srv.HTTPAddr(), "--idle", "40", "--conns", "4", "--duration", "100ms")
	if err != nil {
		t.Fatalf("idle: %v\n%s%s", err, out, errOut)
	}
	m := regexp.MustCompile(`hub /metrics \(after a forced GC\): goroutines (\d+) → (\d+) \(([\d.]+) per subscription\); heap -?\d+ B \+ stacks -?\d+ B = (-?\d+) B per subscription`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no hub /metrics line:\n%s", out)
	}
	if per, _ := strconv.ParseFloat(m[3], 64); per < 0.5 {
		t.Errorf("%s goroutines per subscription: each idle stream holds at least one", m[3])
	}
	if per, _ := strconv.Atoi(m[4]); per <= 0 {
		t.Errorf("%s B per subscription: each idle stream costs memory", m[4])
	}
}

// TestVersion checks --version prints the build's description (the text
// of hubd version) and runs nothing else.
func TestVersion(t *testing.T) {
	out, errOut, err := runArgs(t, "--version")
	if err != nil || errOut != "" || !regexp.MustCompile(`^module:  github.com/hubd/hubd \S+\ncommit:  .+\ngo:      go1\.`).MatchString(out) {
		t.Errorf("hubload --version: %v\n%s%s", err, out, errOut)
	}
}
