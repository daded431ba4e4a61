package load

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hubd/hubd/internal/server"
)

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
		"--warmup", "0s", "--duration", "300ms", "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r SessionsReport
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
		var r Report
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
		var s SessionsReport
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if s.Transport != tr || s.Measured != 6 || s.Diagnostics != 0 {
			t.Errorf("%s sessions: transport %q, measured %d, diagnostics %d", tr, s.Transport, s.Measured, s.Diagnostics)
		}
	}
}

// TestRate paces the turns: a run at --rate 200 over 2 sessions accepts
// at most 200 sends a second (far below what the hub answers unpaced),
// and the report says so; --rate is refused for another workload.
func TestRate(t *testing.T) {
	srv := hubFor(t)
	out, errOut, err := runArgs(t, "--hub", srv.Addr(), "--agents", "4", "--sessions", "2", "--duration", "1s",
		"--warmup", "200ms", "--rate", "200", "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errOut)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Rate != 200 || r.PerSecond > 230 || r.Accepted == 0 {
		t.Errorf("paced at %d: %d accepted, %.0f sends/s, want some and at most 200/s", r.Rate, r.Accepted, r.PerSecond)
	}
	if _, _, err := runArgs(t, "--hub", srv.Addr(), "--workload", "sessions", "--rate", "10"); err == nil {
		t.Error("--rate with --workload sessions was accepted")
	}
}
