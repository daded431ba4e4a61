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
// logic, at the load's concurrency and payload. Its figures merge two
// windows, one just before hubd's load and one just after (Halves).
type baseReport struct {
	Conc      int       `json:"in_flight"`
	Conns     int       `json:"conns"`
	Window    float64   `json:"window_s"`
	Accepted  uint64    `json:"accepted"`
	PerSecond float64   `json:"accepted_per_s"`
	SendToAck latency   `json:"send_to_ack"`
	PerCommit float64   `json:"requests_per_commit"`
	Halves    []float64 `json:"halves_per_s"`
	floorCost
}

// floorCost is what a floor's windows cost: hubload's CPU (the floor's
// server and its clients, the hub idle meanwhile) per request acknowledged,
// and the mean fsync of its log.
type floorCost struct {
	CPUPerRequest float64 `json:"cpu_us_per_request"`
	SyncMeanUS    float64 `json:"fsync_mean_us"`
	// Apart: the server ran in a process of its own (--floor-apart), and
	// the CPU is its and hubload's.
	Apart bool `json:"server_apart,omitempty"`
}

// where says where the floor's server ran, when not in hubload's process.
func (c floorCost) where() string {
	if c.Apart {
		return ", its server in a process of its own"
	}
	return ""
}

// text is the cost as the floors' lines end.
func (c floorCost) text() string {
	return fmt.Sprintf("; fsync mean %.0fµs; CPU %.0fµs per request", c.SyncMeanUS, c.CPUPerRequest)
}

// floorRun is what one window of a floor recorded.
type floorRun struct {
	st                *stats
	requests, commits uint64        // the floor's log: requests appended, commits
	cpu               time.Duration // hubload's CPU in the window
	syncs             uint64        // the log's fsyncs in the window
	syncing           time.Duration // and their time
}

// perSecond is the run's acknowledged requests per second of its window.
func (f floorRun) perSecond() float64 {
	return ratio(float64(f.st.accepted.Load()), f.st.window().Seconds())
}

// floorWindow is how long each of a floor's two windows lasts: half of
// --duration, so that both together take as long as hubd's.
func floorWindow(cfg config) time.Duration { return cfg.duration / 2 }

// merged sums runs: acknowledged requests, windows and latencies, and the
// logs' requests per commit.
func merged(runs []floorRun) (st *stats, window time.Duration, perCommit float64, halves []float64, cost floorCost) {
	st = newStats()
	var reqs, commits, syncs uint64
	var cpu, syncing time.Duration
	for _, r := range runs {
		st.accepted.Add(r.st.accepted.Load())
		st.ack.add(&r.st.ack)
		st.told.add(&r.st.told)
		window += r.st.window()
		reqs += r.requests
		commits += r.commits
		halves = append(halves, r.perSecond())
		cpu += r.cpu
		syncs += r.syncs
		syncing += r.syncing
	}
	cost = floorCost{CPUPerRequest: perAccepted(cpu, st.accepted.Load()), SyncMeanUS: ratio(float64(syncing)/float64(time.Microsecond), float64(syncs))}
	return st, window, ratio(float64(reqs), float64(commits)), halves, cost
}

// measureBaseline runs one window of the floor at conc requests in flight
// over conns connections: a warm-up, then floorWindow, its log in a new
// directory under cfg.baselineDir that is removed afterwards.
func measureBaseline(ctx context.Context, cfg config, conc, conns int) (floorRun, error) {
	return runFloor(ctx, cfg, func(addr string, st *stats, stop <-chan struct{}) error {
		return baseline.Drive(ctx, addr, baseline.Load{Conc: conc, Conns: conns, Payload: cfg.payload, Record: st.acked}, stop)
	})
}

// baseReportOf merges the floor's windows into its report.
func baseReportOf(conc, conns int, runs ...floorRun) (*baseReport, error) {
	st, w, perCommit, halves, cost := merged(runs)
	r := &baseReport{Conc: conc, Conns: min(conns, conc), Window: w.Seconds(), Accepted: st.accepted.Load(),
		PerSecond: ratio(float64(st.accepted.Load()), w.Seconds()), SendToAck: summarize(&st.ack), PerCommit: perCommit, Halves: halves, floorCost: cost}
	if r.Accepted == 0 {
		return nil, fmt.Errorf("the baseline acknowledged nothing in its windows")
	}
	return r, nil
}

// floorSetup bounds how long a floor's clients may take to have their
// first request acknowledged.
const floorSetup = 30 * time.Second

// runFloor runs drive against a fresh baseline server for a warm-up and
// a window of floorWindow, and returns what it recorded: its requests, and
// hubload's CPU and the log's fsyncs in the window. The warm-up begins
// with the first request acknowledged, so that setting up the clients
// (the turn floor's two connections and streams a session, one after the
// other) is never measured, however slow the machine.
func runFloor(ctx context.Context, cfg config, drive func(addr string, st *stats, stop <-chan struct{}) error) (floorRun, error) {
	srv, err := startFloor(cfg)
	if err != nil {
		return floorRun{}, err
	}
	st := newStats()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- drive(srv.Addr(), st, stop) }()
	var (
		run             floorRun
		runErr          error
		cpu0            time.Duration
		l0              floorStats
		measuring, over bool // over: drive has returned
	)
	select {
	case <-st.started:
		st.open(time.Now().Add(cfg.warmup))
		select {
		case <-time.After(cfg.warmup):
			cpu0 = selfCPU()
			l0, runErr = srv.Stats()
			measuring = runErr == nil
		case <-ctx.Done():
		case runErr = <-done:
			over = true
		}
	case <-time.After(floorSetup):
		runErr = fmt.Errorf("the floor acknowledged no request within %v of starting", floorSetup)
	case <-ctx.Done():
	case runErr = <-done:
		over = true
	}
	if measuring {
		select {
		case <-time.After(floorWindow(cfg)):
		case <-ctx.Done():
		case runErr = <-done:
			over = true
		}
		cpu1 := selfCPU()
		l1, err := srv.Stats()
		if runErr == nil {
			runErr = err
		}
		run.cpu, run.syncs, run.syncing = cpu1-cpu0+l1.CPU-l0.CPU, l1.Syncs-l0.Syncs, l1.Syncing-l0.Syncing
	}
	st.shut(time.Now())
	close(stop)
	if !over {
		if err := <-done; runErr == nil {
			runErr = err
		}
	}
	ls, err := srv.Stats()
	if runErr == nil {
		runErr = err
	}
	if err := srv.Close(); runErr == nil {
		runErr = err
	}
	run.st, run.requests, run.commits = st, ls.Requests, ls.Commits
	return run, runErr
}

// floors are a run's floors (--baseline), each measured in two windows:
// one before hubd's load and one after it, so that a drift of the
// machine's speed during the run weighs on both sides of a ratio.
type floors struct {
	cfg         config
	conc, conns int // the baseline's requests in flight and connections
	pairs       int // the turn floor's sessions; 0: no turn floor (the sessions workload)
	base, turn  []floorRun
}

// measure runs one window of each floor.
func (f *floors) measure(ctx context.Context) error {
	b, err := measureBaseline(ctx, f.cfg, f.conc, f.conns)
	if err != nil {
		return err
	}
	f.base = append(f.base, b)
	if f.pairs == 0 {
		return nil
	}
	t, err := measureTurnFloor(ctx, f.cfg, f.pairs)
	if err != nil {
		return err
	}
	f.turn = append(f.turn, t)
	return nil
}

// reports merges the windows measured into the floors' reports (the turn
// floor's nil without it).
func (f *floors) reports() (*baseReport, *turnReport, error) {
	b, err := baseReportOf(f.conc, f.conns, f.base...)
	if err != nil {
		return nil, nil, err
	}
	b.Apart = f.cfg.floorApart
	if f.pairs == 0 {
		return b, nil, nil
	}
	t, err := turnReportOf(f.pairs, f.turn...)
	if err != nil {
		return nil, nil, err
	}
	t.Apart = f.cfg.floorApart
	return b, t, nil
}

// turnReport is the turn floor measured in the run (--baseline with the
// turns workload): what a turn must do at the least, with no session
// logic. Each session is two seats, each on its own connection and
// stream; a send is appended to the wal (group commit, synced), then the
// other seat is told its turn and the sender acknowledged, the frames
// those of hubd's agent stream. Its figures merge two windows, as the
// baseline's do.
type turnReport struct {
	Sessions   int       `json:"sessions"`
	Conns      int       `json:"conns"`
	Window     float64   `json:"window_s"`
	Accepted   uint64    `json:"accepted"`
	PerSecond  float64   `json:"accepted_per_s"`
	SendToAck  latency   `json:"send_to_ack"`
	SendToTold latency   `json:"send_to_next_told"`
	PerCommit  float64   `json:"requests_per_commit"`
	Halves     []float64 `json:"halves_per_s"`
	floorCost
}

// measureTurnFloor runs one window of the turn floor with sessions pairs
// taking turns.
func measureTurnFloor(ctx context.Context, cfg config, sessions int) (floorRun, error) {
	return runFloor(ctx, cfg, func(addr string, st *stats, stop <-chan struct{}) error {
		return baseline.DriveTurns(ctx, addr, baseline.Turns{Pairs: sessions, Payload: cfg.payload, Acked: st.acked,
			Told: func(start, done time.Time) { st.toldAfter(start, done.Sub(start)) }}, stop)
	})
}

// turnReportOf merges the turn floor's windows into its report.
func turnReportOf(sessions int, runs ...floorRun) (*turnReport, error) {
	st, w, perCommit, halves, cost := merged(runs)
	r := &turnReport{Sessions: sessions, Conns: 2 * sessions, Window: w.Seconds(), Accepted: st.accepted.Load(),
		PerSecond: ratio(float64(st.accepted.Load()), w.Seconds()), SendToAck: summarize(&st.ack), SendToTold: summarize(&st.told),
		PerCommit: perCommit, Halves: halves, floorCost: cost}
	if r.Accepted == 0 {
		return nil, fmt.Errorf("the turn floor acknowledged nothing in its windows")
	}
	return r, nil
}

// halvesText says what each window of a floor did, before and after the
// load: how far the machine drifted during the run.
func halvesText(h []float64) string {
	if len(h) != 2 {
		return ""
	}
	return fmt.Sprintf(" (before the load %.0f/s, after %.0f/s)", h[0], h[1])
}

// text describes the turn floor on one line.
func (t *turnReport) text() string {
	return fmt.Sprintf("turn floor (gRPC stream → wal group commit, sync on → next seat told, sender acked; %d sessions, 2 seats each on its own connection%s): %.0f/s%s; send→ack %s; send→next told %s; %.1f requests per commit%s\n",
		t.Sessions, t.where(), t.PerSecond, halvesText(t.Halves), t.SendToAck.text(), t.SendToTold.text(), t.PerCommit, t.floorCost.text())
}

// text describes the baseline on one line.
func (b *baseReport) text() string {
	return fmt.Sprintf("baseline (gRPC unary → wal group commit, sync on; %d in flight on %d connections%s): %.0f/s%s; send→ack %s; %.1f requests per commit%s\n",
		b.Conc, b.Conns, b.where(), b.PerSecond, halvesText(b.Halves), b.SendToAck.text(), b.PerCommit, b.floorCost.text())
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
