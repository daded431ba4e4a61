package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hubd/hubd/internal/server"
)

// TestBaselineInTheRun runs the turns workload with --baseline: the report
// carries the floor measured at the same concurrency and the ratios to it,
// and the turn floor (two seats a session, told and acked) and its, each
// floor in two windows, before the load and after it; each floor's CPU
// per request and mean fsync, and with --hub-http what the hub's log did.
func TestBaselineInTheRun(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer stopHub(t, srv)
	// The hub runs in this process: --hub-pid counts hubload's CPU twice,
	// which is enough to see the ratio computed.
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--hub-http", srv.HTTPAddr(), "--hub-pid", strconv.Itoa(os.Getpid()),
		"--agents", "4", "--sessions", "2", "--duration", "1s", "--warmup", "100ms", "--baseline", "--baseline-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	b := r.Baseline
	if b == nil || b.Conc != 2 || b.Conns != 2 || b.Accepted == 0 || b.SendToAck.Count != b.Accepted || b.PerCommit < 1 ||
		len(b.Halves) != 2 || b.Halves[0] <= 0 || b.Halves[1] <= 0 || b.PerSecond < min(b.Halves[0], b.Halves[1]) || b.PerSecond > max(b.Halves[0], b.Halves[1]) {
		t.Fatalf("baseline: %+v", b)
	}
	if b.CPUPerRequest <= 0 || b.SyncMeanUS <= 0 {
		t.Errorf("baseline cost %+v: want its CPU and fsyncs measured", b.floorCost)
	}
	if l := r.HubLog; l == nil || l.Commits == 0 || l.AppendsPerCommit < 1 || l.Syncs < l.Commits || l.SyncMeanUS <= 0 {
		t.Fatalf("hub log %+v: want the window's commits, each synced", l)
	}
	if len(r.Ratios) != 6 {
		t.Fatalf("ratios: %+v", r.Ratios)
	}
	if got, want := r.Ratios[0].Value, r.PerSecond/b.PerSecond; got != want || got <= 0 {
		t.Errorf("throughput ratio %v, want %v", got, want)
	}
	if got, want := r.Ratios[4], (namedRatio{"CPU per request (hub + hubload)", (r.CPU.HubPerAccepted + r.CPU.HubloadPerAccepted) / b.CPUPerRequest}); got != want || got.Value <= 0 {
		t.Errorf("CPU ratio %+v, want %+v", got, want)
	}
	if got, want := r.Ratios[5], (namedRatio{"fsync mean", r.HubLog.SyncMeanUS / b.SyncMeanUS}); got != want {
		t.Errorf("fsync ratio %+v, want %+v", got, want)
	}
	tf := r.TurnFloor
	if tf == nil || tf.Sessions != 2 || tf.Conns != 4 || tf.Accepted == 0 || tf.SendToAck.Count != tf.Accepted ||
		tf.SendToTold.Count == 0 || tf.SendToTold.Count > tf.Accepted || tf.PerCommit < 1 || len(tf.Halves) != 2 {
		t.Fatalf("turn floor: %+v", tf)
	}
	if tf.CPUPerRequest <= 0 || tf.SyncMeanUS <= 0 {
		t.Errorf("turn floor cost %+v: want its CPU and fsyncs measured", tf.floorCost)
	}
	if len(r.TurnRatios) != 6 {
		t.Fatalf("turn floor ratios: %+v", r.TurnRatios)
	}
	if got, want := r.TurnRatios[3].Value, r.SendToTold.P50/tf.SendToTold.P50; got != want || got <= 0 {
		t.Errorf("send→next told ratio to the turn floor %v, want %v", got, want)
	}
	text, _, err := runArgs(t, "--hub", srv.Addr(), "--hub-http", srv.HTTPAddr(), "--agents", "2", "--sessions", "1", "--duration", "300ms",
		"--warmup", "0s", "--baseline", "--baseline-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^hub log \(its /metrics\): \d+ commits, [0-9.]+ appends per commit, fsync mean \d+µs$`).MatchString(text) {
		t.Errorf("text report without the hub's log:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^baseline \(gRPC unary → wal group commit, sync on; 1 in flight on 1 connections\): \d+/s \(before the load \d+/s, after \d+/s\); send→ack p50 [0-9.]+ms .*; fsync mean \d+µs; CPU \d+µs per request\nhubd / baseline: accepted/s [0-9.]+, send→ack p50 [0-9.]+, .*, fsync mean [0-9.]+$`).MatchString(text) {
		t.Errorf("text report without the baseline and its ratios:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^turn floor \(gRPC stream → wal group commit, sync on → next seat told, sender acked; 1 sessions, 2 seats each on its own connection\): \d+/s \(before the load \d+/s, after \d+/s\); send→ack p50 [0-9.]+ms .*; send→next told p50 [0-9.]+ms .*; fsync mean \d+µs; CPU \d+µs per request\nhubd / turn floor: accepted/s [0-9.]+, send→ack p50 [0-9.]+, send→ack p99 [0-9.]+, send→next told p50 [0-9.]+, fsync mean [0-9.]+$`).MatchString(text) {
		t.Errorf("text report without the turn floor and its ratios:\n%s", text)
	}
}

// TestSessionsWorkload runs sessions of three agents served by
// agentsdk.Serve: every one is opened, takes its three turns and is
// closed by the hub, and each turn after the first is timed from the
// previous handler.
func TestSessionsWorkload(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer stopHub(t, srv)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--hub-http", srv.HTTPAddr(), "--workload", "sessions", "--conc", "3", "--sessions", "12",
		"--warmup", "0s", "--duration", "300ms", "--baseline", "--baseline-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r sessReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Measured != 12 || r.OpenToClosed.Count != 12 {
		t.Errorf("sessions measured %d (open→closed n=%d), want 12", r.Measured, r.OpenToClosed.Count)
	}
	if r.HandlerToNext.Count != 24 {
		t.Errorf("handler→handler samples %d, want 2 per session (24)", r.HandlerToNext.Count)
	}
	if r.TurnsPerS < 2.9*r.SessionsPerS || r.TurnsPerS > 3.1*r.SessionsPerS || r.Diagnostics != 0 {
		t.Errorf("turns/s %v for %v sessions/s, diagnostics %d: want three turns a session and none", r.TurnsPerS, r.SessionsPerS, r.Diagnostics)
	}
	// 12 sessions: an open and three turns each, at least, all synced.
	if l := r.HubLog; l == nil || l.Commits == 0 || float64(l.Commits)*l.AppendsPerCommit < 4*12 || l.Syncs < l.Commits || l.SyncMeanUS <= 0 {
		t.Errorf("hub log %+v: want the run's commits, each synced", l)
	}
	if r.Baseline == nil || r.Baseline.Conc != 3 || len(r.Ratios) != 4 || r.Ratios[3].Name != "fsync mean" || len(r.Baseline.Halves) != 2 {
		t.Errorf("baseline %+v ratios %+v", r.Baseline, r.Ratios)
	}
}

// TestTransports runs the turns and the sessions workloads over each
// transport: both take their turns, and the report names the transport.
func TestTransports(t *testing.T) {
	srv := hubFor(t)
	for _, tr := range []string{"stream", "unary"} {
		out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "4", "--sessions", "2", "--duration", "300ms",
			"--warmup", "0s", "--transport", tr, "--json")
		if err != nil {
			t.Fatalf("%s: run: %v\n%s%s", tr, err, out, errOut)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if r.Transport != tr || r.Accepted == 0 || r.SendToTold.Count == 0 || len(r.Rejected) != 0 {
			t.Errorf("%s: transport %q, accepted %d, told %d, rejected %v", tr, r.Transport, r.Accepted, r.SendToTold.Count, r.Rejected)
		}
		out, errOut, err = runArgs(t, "--hub", srv.Addr(), "--workload", "sessions", "--conc", "2", "--sessions", "6",
			"--warmup", "0s", "--transport", tr, "--json")
		if err != nil {
			t.Fatalf("%s: sessions: %v\n%s%s", tr, err, out, errOut)
		}
		var s sessReport
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if s.Transport != tr || s.Measured != 6 || s.Diagnostics != 0 {
			t.Errorf("%s sessions: transport %q, measured %d, diagnostics %d", tr, s.Transport, s.Measured, s.Diagnostics)
		}
	}
}

// TestFloorApart: with --floor-apart the floors are served by hubload run
// again as a process of its own; they are measured all the same, their
// CPU counting the server's, and the report says where the server ran.
func TestFloorApart(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "4", "--sessions", "2", "--duration", "600ms",
		"--warmup", "100ms", "--baseline", "--floor-apart", "--baseline-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, f := range []struct {
		name     string
		accepted uint64
		cost     floorCost
		halves   []float64
	}{{"baseline", r.Baseline.Accepted, r.Baseline.floorCost, r.Baseline.Halves}, {"turn floor", r.TurnFloor.Accepted, r.TurnFloor.floorCost, r.TurnFloor.Halves}} {
		if f.accepted == 0 || !f.cost.Apart || f.cost.CPUPerRequest <= 0 || f.cost.SyncMeanUS <= 0 || len(f.halves) != 2 {
			t.Errorf("%s apart: accepted %d, cost %+v, halves %v", f.name, f.accepted, f.cost, f.halves)
		}
	}
	text, _, err := runArgs(t, "--hub", srv.Addr(), "--agents", "2", "--sessions", "1", "--duration", "300ms",
		"--warmup", "0s", "--baseline", "--floor-apart", "--baseline-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^baseline \(gRPC unary → wal group commit, sync on; 1 in flight on 1 connections, its server in a process of its own\): \d+/s`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^turn floor \(.*, 2 seats each on its own connection, its server in a process of its own\): \d+/s`).MatchString(text) {
		t.Errorf("the floors do not say their server ran apart:\n%s", text)
	}
}

// TestServeFloor: the floors' server apart answers each "stats" line
// with its totals, refuses any other line, and ends with its input.
func TestServeFloor(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveFloor(t.TempDir(), inR, outW)
		outW.Close()
	}()
	rd := bufio.NewReader(outR)
	addr, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("address %q, %v", addr, err)
	}
	if _, err := io.WriteString(inW, "stats\n"); err != nil {
		t.Fatal(err)
	}
	line, err := rd.ReadBytes('\n')
	var s floorStats
	if err != nil || json.Unmarshal(line, &s) != nil || s.CPU <= 0 || s.Requests != 0 {
		t.Fatalf("stats %q (%+v), %v: want no request yet and the server's CPU", line, s, err)
	}
	if _, err := io.WriteString(inW, "quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), `not "quit"`) {
		t.Errorf("a line that is not stats: %v", err)
	}
	inW.Close()

	inR, inW = io.Pipe()
	go func() { done <- serveFloor(t.TempDir(), inR, io.Discard) }()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("the end of its input: %v, want a clean end", err)
	}
}

// TestTable runs --table against a hub: every row of issue 10's targets
// is measured with its floor, its ratio is hubd's figure over the floor's
// from the run behind it, its verdict follows its target, and the turns
// rows carry the turn floor's ratio (no session logic).
func TestTable(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--table", "--duration", "300ms", "--warmup", "50ms",
		"--baseline-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var tr tableReport
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(tr.Turns) != 3 || len(tr.Sessions) != 2 || len(tr.Rows) != 7 || tr.Apart {
		t.Fatalf("%d turns runs, %d sessions runs, %d rows, apart %v: want 3, 2, 7, false", len(tr.Turns), len(tr.Sessions), len(tr.Rows), tr.Apart)
	}
	one, at16, at128 := tr.Turns[0], tr.Turns[1], tr.Turns[2] // the one-at-a-time runs first
	if at16.Sessions != 16 || at16.Agents != 32 || at128.Sessions != 128 || one.Sessions != 1 || one.Agents != 3 ||
		tr.Sessions[0].Conc != 1 || tr.Sessions[1].Conc != 50 {
		t.Fatalf("the runs are not the table's: %+v", tr)
	}
	want := []struct {
		ratio, noLogic float64
		t              target
	}{
		// In the order of the table.
		{at16.PerSecond / at16.Baseline.PerSecond, at16.TurnFloor.PerSecond / at16.Baseline.PerSecond, target{true, 1}},
		{at128.PerSecond / at128.Baseline.PerSecond, at128.TurnFloor.PerSecond / at128.Baseline.PerSecond, target{true, 1}},
		{one.SendToTold.P50 / one.Baseline.SendToAck.P50, one.TurnFloor.SendToTold.P50 / one.Baseline.SendToAck.P50, target{false, 1.1}},
		{tr.Sessions[0].HandlerToNext.P50 / tr.Sessions[0].Baseline.SendToAck.P50, 0, target{false, 1.5}},
		{tr.Sessions[0].OpenToClosed.P50 / tr.Sessions[0].Baseline.SendToAck.P50, 0, target{false, 6}},
		{tr.Sessions[1].TurnsPerS / tr.Sessions[1].Baseline.PerSecond, 0, target{true, 0.8}},
		{at16.SendToAck.P99 / at16.Baseline.SendToAck.P99, at16.TurnFloor.SendToAck.P99 / at16.Baseline.SendToAck.P99, target{false, 1.5}},
	}
	for i, w := range want {
		r := tr.Rows[i]
		if r.Ratio != w.ratio || r.Ratio <= 0 || r.NoLogic != w.noLogic || r.Target != w.t {
			t.Errorf("row %d %q: ratio %v no-logic %v target %v, want %v %v %v", i, r.Measure, r.Ratio, r.NoLogic, r.Target, w.ratio, w.noLogic, w.t)
		}
		met := r.Ratio <= w.t.Value
		if w.t.AtLeast {
			met = r.Ratio >= w.t.Value
		}
		if r.Met != met {
			t.Errorf("row %d %q: ratio %v to %v, met %v", i, r.Measure, r.Ratio, w.t, r.Met)
		}
	}
	text := tr.text()
	for _, r := range tr.Rows {
		if !strings.Contains(text, r.Measure) || !strings.Contains(text, r.Flags) {
			t.Errorf("the table's text lacks %q (%s):\n%s", r.Measure, r.Flags, text)
		}
	}
}
