package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/bench/floor"
	"github.com/hubd/hubd/cmd/hubload/load"
	"github.com/hubd/hubd/hub/hubtest"
)

// TestMain serves the floors when a test's table starts its own
// executable, this test binary, as their server apart (--floor-apart).
func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(serverEnv); ok {
		if err := floor.Serve(dir, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hubFor starts a hub (development mode, fsync on) for the whole test.
func hubFor(t *testing.T) *hubtest.Hub {
	t.Helper()
	return hubtest.New(t, hubtest.Options{DataDir: t.TempDir()})
}

// runArgs runs the table and returns its stdout and stderr.
func runArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// optionsFor are the table's options against h, with short windows.
func optionsFor(t *testing.T, h *hubtest.Hub, extra ...string) options {
	t.Helper()
	args := append([]string{"--hub", h.Addr(), "--duration", "600ms", "--warmup", "100ms", "--floor-dir", t.TempDir()}, extra...)
	o, err := parse(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRunBetweenFloors runs the turns workload between its floors: the
// floor measured at the same concurrency and the ratios to it, and the
// turn floor (two seats a session, told and acked) and its, each floor in
// two windows, before the run and after it, with its CPU per request and
// mean fsync.
func TestRunBetweenFloors(t *testing.T) {
	h := hubFor(t)
	// The hub runs in this process: --hub-pid counts the agents' CPU
	// twice, which is enough to see the ratio computed.
	o := optionsFor(t, h, "--hub-pid", strconv.Itoa(os.Getpid()))
	rep, err := tableRun{workload: load.WorkloadTurns, agents: 4, sessions: 2}.measure(t.Context(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	r, b := rep.Turns, rep.Floor
	if r == nil || r.Accepted == 0 || rep.Flags != "--agents 4 --sessions 2" {
		t.Fatalf("run %+v: want the turns workload measured", rep)
	}
	if b == nil || b.InFlight != 2 || b.Conns != 2 || b.Accepted == 0 || b.SendToAck.Count != b.Accepted || b.PerCommit < 1 || b.SendToTold != nil ||
		len(b.Halves) != 2 || b.Halves[0] <= 0 || b.Halves[1] <= 0 || b.PerSecond < min(b.Halves[0], b.Halves[1]) || b.PerSecond > max(b.Halves[0], b.Halves[1]) {
		t.Fatalf("floor: %+v", b)
	}
	if b.CPUPerRequest <= 0 || b.SyncMeanUS <= 0 || b.Apart {
		t.Errorf("floor cost %+v: want its CPU and fsyncs measured, in this process", b)
	}
	if len(rep.Ratios) != 5 {
		t.Fatalf("ratios: %+v", rep.Ratios)
	}
	if got, want := rep.Ratios[0].Value, r.PerSecond/b.PerSecond; got != want || got <= 0 {
		t.Errorf("throughput ratio %v, want %v", got, want)
	}
	if got, want := rep.Ratios[4], (namedRatio{"CPU per request (hub + agents)", (r.CPU.HubPerAccepted + r.CPU.HubloadPerAccepted) / b.CPUPerRequest}); got != want || got.Value <= 0 {
		t.Errorf("CPU ratio %+v, want %+v", got, want)
	}
	tf := rep.TurnFloor
	if tf == nil || tf.InFlight != 2 || tf.Conns != 4 || tf.Accepted == 0 || tf.SendToAck.Count != tf.Accepted || tf.SendToTold == nil ||
		tf.SendToTold.Count == 0 || tf.SendToTold.Count > tf.Accepted || tf.PerCommit < 1 || len(tf.Halves) != 2 || tf.CPUPerRequest <= 0 || tf.SyncMeanUS <= 0 {
		t.Fatalf("turn floor: %+v", tf)
	}
	if len(rep.TurnRatios) != 5 {
		t.Fatalf("turn floor ratios: %+v", rep.TurnRatios)
	}
	if got, want := rep.TurnRatios[3].Value, r.SendToTold.P50/tf.SendToTold.P50; got != want || got <= 0 {
		t.Errorf("send→next told ratio to the turn floor %v, want %v", got, want)
	}
	text := rep.text()
	for _, re := range []string{
		`(?m)^== hubload --agents 4 --sessions 2\nhubload: 4 agents, 2 sessions`,
		`(?m)^floor \(gRPC unary → wal group commit, sync on; 2 in flight on 2 connections\): \d+/s \(before the load \d+/s, after \d+/s\); send→ack p50 [0-9.]+ms .*; fsync mean \d+µs; CPU \d+µs per request\nhubd / floor: accepted/s [0-9.]+, send→ack p50 [0-9.]+, .*, CPU per request \(hub \+ agents\) [0-9.]+$`,
		`(?m)^turn floor \(gRPC stream → wal group commit, sync on → next seat told, sender acked; 2 sessions, 2 seats each on its own connection\): \d+/s \(before the load \d+/s, after \d+/s\); send→ack p50 [0-9.]+ms .*; send→next told p50 [0-9.]+ms .*; fsync mean \d+µs; CPU \d+µs per request\nhubd / turn floor: accepted/s [0-9.]+, send→ack p50 [0-9.]+, send→ack p99 [0-9.]+, send→next told p50 [0-9.]+, CPU per request \(hub \+ agents\) [0-9.]+$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the run's text does not match %s:\n%s", re, text)
		}
	}
}

// TestSessionsBetweenFloors runs the sessions workload between its floor
// (no turn floor): its ratios are turns a second and its two latencies,
// each over the floor's.
func TestSessionsBetweenFloors(t *testing.T) {
	h := hubFor(t)
	o := optionsFor(t, h, "--warmup", "0s") // every session measured, however fast
	rep, err := tableRun{workload: load.WorkloadSessions, conc: 3, perSec: 10}.measure(t.Context(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	s, b := rep.Sessions, rep.Floor
	if s == nil || s.Measured != 50 || s.Conc != 3 || rep.Flags != "--workload sessions --conc 3 --sessions 50" || rep.Turns != nil {
		t.Fatalf("run %+v: want 50 sessions, 3 at a time", rep)
	}
	if b == nil || b.InFlight != 3 || b.Conns != 3 || len(b.Halves) != 2 || rep.TurnFloor != nil || rep.TurnRatios != nil {
		t.Fatalf("floor %+v, turn floor %+v: want the floor alone at 3 in flight", b, rep.TurnFloor)
	}
	want := []namedRatio{{"turns/s", s.TurnsPerS / b.PerSecond}, {"open→closed p50 (to the floor's send→ack p50)", s.OpenToClosed.P50 / b.SendToAck.P50},
		{"handler→handler p50 (to the floor's send→ack p50)", s.HandlerToNext.P50 / b.SendToAck.P50}}
	if !slices.Equal(rep.Ratios, want) {
		t.Errorf("ratios %+v, want %+v", rep.Ratios, want)
	}
}

// TestCostRatios: the CPU ratio needs the hub's CPU (--hub-pid), the
// fsync ratio the hub's log (--hub-http); each is hubd's over the floor's.
func TestCostRatios(t *testing.T) {
	f := &floorReport{CPUPerRequest: 50, SyncMeanUS: 200}
	if got := costRatios(load.CPUReport{HubloadPerAccepted: 40}, nil, f); len(got) != 0 {
		t.Errorf("without the hub's CPU or log: %+v", got)
	}
	got := costRatios(load.CPUReport{HubPerAccepted: 60, HubloadPerAccepted: 40}, &load.LogReport{SyncMeanUS: 300}, f)
	want := []namedRatio{{"CPU per request (hub + agents)", 2}, {"fsync mean", 1.5}}
	if !slices.Equal(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// TestMerge: a floor's two windows merge into one: counts, windows and
// latencies add up, the logs' requests per commit is over both, and each
// window's rate is kept.
func TestMerge(t *testing.T) {
	window := func(n int, lat, d time.Duration, reqs, commits uint64, cpu time.Duration, syncs uint64, syncing time.Duration) floorRun {
		st := load.NewStats()
		t0 := time.Now()
		st.Open(t0)
		for range n {
			st.Acked(t0, t0.Add(lat))
		}
		st.Shut(t0.Add(d))
		return floorRun{st: st, requests: reqs, commits: commits, cpu: cpu, syncs: syncs, syncing: syncing}
	}
	before := window(300, time.Millisecond, time.Second, 300, 100, 20*time.Millisecond, 100, 20*time.Millisecond)
	after := window(100, 3*time.Millisecond, time.Second, 100, 100, 60*time.Millisecond, 100, 60*time.Millisecond)
	b, err := merge(4, 4, false, []floorRun{before, after})
	if err != nil {
		t.Fatal(err)
	}
	if b.Accepted != 400 || b.Window != 2 || b.PerSecond != 200 || b.PerCommit != 2 || b.Conns != 4 || b.SendToTold != nil {
		t.Errorf("merged %+v", b)
	}
	if !slices.Equal(b.Halves, []float64{300, 100}) {
		t.Errorf("halves %v, want [300 100]", b.Halves)
	}
	if b.SendToAck.Count != 400 || b.SendToAck.P50 < 0.99 || b.SendToAck.P50 > 1.01 || b.SendToAck.Max < 2.99 || b.SendToAck.Max > 3.01 {
		t.Errorf("latencies %+v: want 400, p50 1ms, max 3ms", b.SendToAck)
	}
	if got := halvesText(b.Halves); got != " (before the load 300/s, after 100/s)" {
		t.Errorf("halves text %q", got)
	}
	// 80 ms of CPU for 400 requests; 200 fsyncs taking 80 ms.
	if b.CPUPerRequest != 200 || b.SyncMeanUS != 400 {
		t.Errorf("cost %+v, want 200µs of CPU per request and a 400µs fsync", b)
	}
	if got := b.costText(); got != "; fsync mean 400µs; CPU 200µs per request" {
		t.Errorf("cost text %q", got)
	}
	if tf, err := merge(2, 4, true, []floorRun{before}); err != nil || tf.SendToTold == nil {
		t.Errorf("the turn floor's merge: %+v, %v: want its send→next told", tf, err)
	}
	if _, err := merge(1, 1, false, []floorRun{window(0, 0, time.Second, 0, 0, 0, 0, 0)}); err == nil {
		t.Error("a floor that acknowledged nothing was reported")
	}
}

// TestFloorApart: with --floor-apart the floors are served by the table
// run again as a process of its own; they are measured all the same,
// their CPU counting the server's, and their lines say where the server
// ran.
func TestFloorApart(t *testing.T) {
	h := hubFor(t)
	o := optionsFor(t, h, "--floor-apart")
	rep, err := tableRun{workload: load.WorkloadTurns, agents: 2, sessions: 1}.measure(t.Context(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*floorReport{rep.Floor, rep.TurnFloor} {
		if f == nil || f.Accepted == 0 || !f.Apart || f.CPUPerRequest <= 0 || f.SyncMeanUS <= 0 || len(f.Halves) != 2 {
			t.Errorf("apart: %+v", f)
		}
	}
	text := rep.text()
	if !regexp.MustCompile(`(?m)^floor \(gRPC unary → wal group commit, sync on; 1 in flight on 1 connections, its server in a process of its own\): \d+/s`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^turn floor \(.*, 2 seats each on its own connection, its server in a process of its own\): \d+/s`).MatchString(text) {
		t.Errorf("the floors do not say their server ran apart:\n%s", text)
	}
}

// TestTable runs the whole table against a hub, with short windows: every
// target's row is measured with its floor, its ratio is hubd's figure over
// the floor's from the run behind it, its verdict follows its target, and
// the turns rows carry hubd's figure over the turn floor's and the turn
// floor's over the floor's (no session logic).
func TestTable(t *testing.T) {
	h := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", h.Addr(), "--duration", "300ms", "--warmup", "50ms", "--floor-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var tr tableReport
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(tr.Runs) != 5 || len(tr.Rows) != 7 || tr.Apart {
		t.Fatalf("%d runs, %d rows, apart %v: want 5, 7, false", len(tr.Runs), len(tr.Rows), tr.Apart)
	}
	// The one-at-a-time runs first.
	one, serve, at16, at128, at50 := tr.Runs[0], tr.Runs[1], tr.Runs[2], tr.Runs[3], tr.Runs[4]
	if one.Turns == nil || at16.Turns == nil || at128.Turns == nil || serve.Sessions == nil || at50.Sessions == nil ||
		at16.Turns.Sessions != 16 || at16.Turns.Agents != 32 || at128.Turns.Sessions != 128 || one.Turns.Sessions != 1 || one.Turns.Agents != 3 ||
		serve.Sessions.Conc != 1 || at50.Sessions.Conc != 50 {
		t.Fatalf("the runs are not the table's: %+v", tr.Runs)
	}
	want := []struct {
		ratio, toTurnFloor, noLogic float64
		t                           target
	}{
		// In the order of the targets.
		{at16.Turns.PerSecond / at16.Floor.PerSecond, at16.Turns.PerSecond / at16.TurnFloor.PerSecond, at16.TurnFloor.PerSecond / at16.Floor.PerSecond, target{true, 1}},
		{at128.Turns.PerSecond / at128.Floor.PerSecond, at128.Turns.PerSecond / at128.TurnFloor.PerSecond, at128.TurnFloor.PerSecond / at128.Floor.PerSecond, target{true, 1}},
		{one.Turns.SendToTold.P50 / one.Floor.SendToAck.P50, one.Turns.SendToTold.P50 / one.TurnFloor.SendToTold.P50, one.TurnFloor.SendToTold.P50 / one.Floor.SendToAck.P50, target{false, 1.1}},
		{serve.Sessions.HandlerToNext.P50 / serve.Floor.SendToAck.P50, 0, 0, target{false, 1.5}},
		{serve.Sessions.OpenToClosed.P50 / serve.Floor.SendToAck.P50, 0, 0, target{false, 6}},
		{at50.Sessions.TurnsPerS / at50.Floor.PerSecond, 0, 0, target{true, 0.8}},
		{at16.Turns.SendToAck.P99 / at16.Floor.SendToAck.P99, at16.Turns.SendToAck.P99 / at16.TurnFloor.SendToAck.P99, at16.TurnFloor.SendToAck.P99 / at16.Floor.SendToAck.P99, target{false, 1.5}},
	}
	for i, w := range want {
		r := tr.Rows[i]
		if r.Ratio != w.ratio || r.Ratio <= 0 || r.ToTurnFloor != w.toTurnFloor || r.NoLogic != w.noLogic || r.Target != w.t {
			t.Errorf("row %d %q: ratio %v to the turn floor %v no-logic %v target %v, want %v %v %v %v", i, r.Measure, r.Ratio, r.ToTurnFloor, r.NoLogic, r.Target, w.ratio, w.toTurnFloor, w.noLogic, w.t)
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

// TestUsage: the table refuses what it cannot run, as hubload would
// (exit 2), and --help is no failure.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--hub", "10.1.2.3:7420"},
		{"--hub-http", "example.com:7421"},
		{"--duration", "0s"},
		{"--payload", "0"},
		{"--agents", "8"},
		{"extra"},
	} {
		_, _, err := runArgs(t, args...)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, _, err := runArgs(t, "--help"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}
