package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hubd/hubd/internal/baseline"
)

// baseReport is the floor measured in the run (--baseline): gRPC unary
// over loopback → the wal group commit, synced → ack, with no session
// logic, at the load's concurrency and payload.
type baseReport struct {
	Conc      int     `json:"in_flight"`
	Conns     int     `json:"conns"`
	Window    float64 `json:"window_s"`
	Accepted  uint64  `json:"accepted"`
	PerSecond float64 `json:"accepted_per_s"`
	SendToAck latency `json:"send_to_ack"`
	PerCommit float64 `json:"requests_per_commit"`
}

// runBaseline measures the floor at conc requests in flight over conns
// connections: a warm-up, then a window of cfg.duration, its log in a new
// directory under cfg.baselineDir that is removed afterwards.
func runBaseline(ctx context.Context, cfg config, conc, conns int) (*baseReport, error) {
	st, perCommit, err := runFloor(ctx, cfg, func(addr string, st *stats, stop <-chan struct{}) error {
		return baseline.Drive(ctx, addr, baseline.Load{Conc: conc, Conns: conns, Payload: cfg.payload, Record: st.acked}, stop)
	})
	if err != nil {
		return nil, err
	}
	w := st.window()
	r := &baseReport{Conc: conc, Conns: min(conns, conc), Window: w.Seconds(), Accepted: st.accepted.Load(), SendToAck: summarize(&st.ack)}
	if w > 0 {
		r.PerSecond = float64(r.Accepted) / w.Seconds()
	}
	r.PerCommit = perCommit
	if r.Accepted == 0 {
		return nil, fmt.Errorf("the baseline acknowledged nothing in its window")
	}
	return r, nil
}

// runFloor runs drive against a fresh baseline server for a warm-up and
// a window of cfg.duration, and returns what it recorded and the log's
// requests per commit.
func runFloor(ctx context.Context, cfg config, drive func(addr string, st *stats, stop <-chan struct{}) error) (*stats, float64, error) {
	srv, err := baseline.Start(cfg.baselineDir)
	if err != nil {
		return nil, 0, err
	}
	st := newStats()
	st.open(time.Now().Add(cfg.warmup))
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- drive(srv.Addr(), st, stop) }()
	var runErr error
	select {
	case <-time.After(cfg.warmup + cfg.duration):
	case <-ctx.Done():
	case runErr = <-done:
	}
	st.shut(time.Now())
	close(stop)
	if runErr == nil {
		runErr = <-done
	}
	ls := srv.Stats()
	if err := srv.Close(); runErr == nil {
		runErr = err
	}
	perCommit := 0.0
	if ls.Commits > 0 {
		perCommit = float64(ls.Requests) / float64(ls.Commits)
	}
	return st, perCommit, runErr
}

// turnReport is the turn floor measured in the run (--baseline with the
// turns workload): what a turn must do at the least, with no session
// logic. Each session is two seats, each on its own connection and
// stream; a send is appended to the wal (group commit, synced), then the
// other seat is told its turn and the sender acknowledged, the frames
// those of hubd's Connect stream.
type turnReport struct {
	Sessions   int     `json:"sessions"`
	Conns      int     `json:"conns"`
	Window     float64 `json:"window_s"`
	Accepted   uint64  `json:"accepted"`
	PerSecond  float64 `json:"accepted_per_s"`
	SendToAck  latency `json:"send_to_ack"`
	SendToTold latency `json:"send_to_next_told"`
	PerCommit  float64 `json:"requests_per_commit"`
}

// runTurnFloor measures the turn floor with sessions pairs taking turns.
func runTurnFloor(ctx context.Context, cfg config, sessions int) (*turnReport, error) {
	st, perCommit, err := runFloor(ctx, cfg, func(addr string, st *stats, stop <-chan struct{}) error {
		return baseline.DriveTurns(ctx, addr, baseline.Turns{Pairs: sessions, Payload: cfg.payload, Acked: st.acked,
			Told: func(start, done time.Time) { st.toldAfter(start, done.Sub(start)) }}, stop)
	})
	if err != nil {
		return nil, err
	}
	w := st.window()
	r := &turnReport{Sessions: sessions, Conns: 2 * sessions, Window: w.Seconds(), Accepted: st.accepted.Load(),
		SendToAck: summarize(&st.ack), SendToTold: summarize(&st.told)}
	if w > 0 {
		r.PerSecond = float64(r.Accepted) / w.Seconds()
	}
	r.PerCommit = perCommit
	if r.Accepted == 0 {
		return nil, fmt.Errorf("the turn floor acknowledged nothing in its window")
	}
	return r, nil
}

// text describes the turn floor on one line.
func (t *turnReport) text() string {
	return fmt.Sprintf("turn floor (gRPC stream → wal group commit, sync on → next seat told, sender acked; %d sessions, 2 seats each on its own connection): %.0f/s; send→ack %s; send→next told %s; %.1f requests per commit\n",
		t.Sessions, t.PerSecond, t.SendToAck.text(), t.SendToTold.text(), t.PerCommit)
}

// text describes the baseline on one line.
func (b *baseReport) text() string {
	return fmt.Sprintf("baseline (gRPC unary → wal group commit, sync on; %d in flight on %d connections): %.0f/s; send→ack %s; %.1f requests per commit\n",
		b.Conc, b.Conns, b.PerSecond, b.SendToAck.text(), b.PerCommit)
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ratioLine prints named ratios on one line: "hubd / baseline: a 0.52, b 1.30".
func ratioLine(rs []namedRatio) string { return ratioLineTo("baseline", rs) }

// ratioLineTo prints named ratios to the floor named on one line.
func ratioLineTo(floor string, rs []namedRatio) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %.2f", r.Name, r.Value)
	}
	return "hubd / " + floor + ": " + strings.Join(parts, ", ") + "\n"
}

// namedRatio is one of the report's ratios to the baseline.
type namedRatio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}
