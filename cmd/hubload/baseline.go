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
	srv, err := baseline.Start(cfg.baselineDir)
	if err != nil {
		return nil, err
	}
	st := newStats()
	st.open(time.Now().Add(cfg.warmup))
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- baseline.Drive(ctx, srv.Addr(), baseline.Load{Conc: conc, Conns: conns, Payload: cfg.payload, Record: st.acked}, stop)
	}()
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
	if runErr != nil {
		return nil, runErr
	}
	w := st.window()
	r := &baseReport{Conc: conc, Conns: min(conns, conc), Window: w.Seconds(), Accepted: st.accepted.Load(), SendToAck: summarize(&st.ack)}
	if w > 0 {
		r.PerSecond = float64(r.Accepted) / w.Seconds()
	}
	if ls.Commits > 0 {
		r.PerCommit = float64(ls.Requests) / float64(ls.Commits)
	}
	if r.Accepted == 0 {
		return nil, fmt.Errorf("the baseline acknowledged nothing in its window")
	}
	return r, nil
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
func ratioLine(rs []namedRatio) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %.2f", r.Name, r.Value)
	}
	return "hubd / baseline: " + strings.Join(parts, ", ") + "\n"
}

// namedRatio is one of the report's ratios to the baseline.
type namedRatio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}
