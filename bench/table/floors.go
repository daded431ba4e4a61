package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/hubd/hubd/bench/floor"
	"github.com/hubd/hubd/cmd/hubload/load"
)

// floorReport is a floor measured around a run: the floor (gRPC unary
// over loopback → the wal's group commit, synced → ack) or the turn floor
// (two seats a session on streams, each send committed, the other seat
// told, the sender acked), with no session logic, at the run's
// concurrency and payload. Its figures merge two windows, one just before
// the run and one just after (Halves).
type floorReport struct {
	InFlight   int           `json:"in_flight"` // the floor's clients, or the turn floor's sessions
	Conns      int           `json:"conns"`
	Window     float64       `json:"window_s"`
	Accepted   uint64        `json:"accepted"`
	PerSecond  float64       `json:"accepted_per_s"`
	SendToAck  load.Latency  `json:"send_to_ack"`
	SendToTold *load.Latency `json:"send_to_next_told,omitempty"` // the turn floor's
	PerCommit  float64       `json:"requests_per_commit"`
	Halves     []float64     `json:"halves_per_s"`
	// CPUPerRequest is the CPU of the floor's server and its clients (the
	// hub idle meanwhile) per request acknowledged, in µs; SyncMeanUS the
	// mean fsync of its log.
	CPUPerRequest float64 `json:"cpu_us_per_request"`
	SyncMeanUS    float64 `json:"fsync_mean_us"`
	// Apart: the server ran in a process of its own (--floor-apart).
	Apart bool `json:"server_apart,omitempty"`
}

// text describes the floor on one line.
func (f *floorReport) text() string {
	where := ""
	if f.Apart {
		where = ", its server in a process of its own"
	}
	if f.SendToTold != nil {
		return fmt.Sprintf("turn floor (gRPC stream → wal group commit, sync on → next seat told, sender acked; %d sessions, 2 seats each on its own connection%s): %.0f/s%s; send→ack %s; send→next told %s; %.1f requests per commit%s\n",
			f.InFlight, where, f.PerSecond, halvesText(f.Halves), f.SendToAck.Text(), f.SendToTold.Text(), f.PerCommit, f.costText())
	}
	return fmt.Sprintf("floor (gRPC unary → wal group commit, sync on; %d in flight on %d connections%s): %.0f/s%s; send→ack %s; %.1f requests per commit%s\n",
		f.InFlight, f.Conns, where, f.PerSecond, halvesText(f.Halves), f.SendToAck.Text(), f.PerCommit, f.costText())
}

// costText is what the floor cost, as its line ends.
func (f *floorReport) costText() string {
	return fmt.Sprintf("; fsync mean %.0fµs; CPU %.0fµs per request", f.SyncMeanUS, f.CPUPerRequest)
}

// halvesText says what each window of a floor did, before and after the
// run: how far the machine drifted meanwhile.
func halvesText(h []float64) string {
	if len(h) != 2 {
		return ""
	}
	return fmt.Sprintf(" (before the load %.0f/s, after %.0f/s)", h[0], h[1])
}

// floorRun is what one window of a floor recorded.
type floorRun struct {
	st                *load.Stats
	requests, commits uint64        // the floor's log: requests appended, commits
	cpu               time.Duration // the floor's CPU in the window: this process's and its server's
	syncs             uint64        // the log's fsyncs in the window
	syncing           time.Duration // and their time
}

// perSecond is the run's acknowledged requests per second of its window.
func (f floorRun) perSecond() float64 {
	return ratio(float64(f.st.Accepted()), f.st.Window().Seconds())
}

// merge merges the windows of one floor into its report; told says it is
// the turn floor's.
func merge(inFlight, conns int, told bool, runs []floorRun) (*floorReport, error) {
	st := load.NewStats()
	var window, cpu, syncing time.Duration
	var reqs, commits, syncs uint64
	r := &floorReport{InFlight: inFlight, Conns: conns}
	for _, f := range runs {
		st.Add(f.st)
		window += f.st.Window()
		reqs, commits, syncs = reqs+f.requests, commits+f.commits, syncs+f.syncs
		cpu, syncing = cpu+f.cpu, syncing+f.syncing
		r.Halves = append(r.Halves, f.perSecond())
	}
	r.Window, r.Accepted = window.Seconds(), st.Accepted()
	r.PerSecond, r.SendToAck, r.PerCommit = ratio(float64(r.Accepted), window.Seconds()), st.SendToAck(), ratio(float64(reqs), float64(commits))
	r.CPUPerRequest = ratio(float64(cpu)/float64(time.Microsecond), float64(r.Accepted))
	r.SyncMeanUS = ratio(float64(syncing)/float64(time.Microsecond), float64(syncs))
	if told {
		l := st.SendToTold()
		r.SendToTold = &l
	}
	if r.Accepted == 0 {
		return nil, fmt.Errorf("a floor acknowledged nothing in its windows")
	}
	return r, nil
}

// floorSetup bounds how long a floor's clients may take to have their
// first request acknowledged.
const floorSetup = 30 * time.Second

// server is a floors' server as a floor's window uses it: in this
// process, or in a process of its own.
type server interface {
	Addr() string
	Stats() (floor.Stats, error)
	Close() error
}

// inProcess is a floors' server in this process.
type inProcess struct{ *floor.Server }

func (s inProcess) Stats() (floor.Stats, error) { return s.Totals(), nil }

// serverEnv, set, makes the table the floors' server apart (floor.Serve)
// instead of the table: its value is the directory under which the
// server makes its log. --floor-apart runs the table's own executable so.
const serverEnv = "BENCH_FLOOR_SERVER"

// startServer starts a fresh floors' server, its log under dir: in this
// process, or with apart in a process of its own (this executable again).
func startServer(dir string, apart bool) (server, error) {
	if apart {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--floor-apart: %w", err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), serverEnv+"="+dir)
		cmd.Stderr = os.Stderr
		return floor.StartApart(cmd)
	}
	srv, err := floor.Start(dir)
	if err != nil {
		return nil, err
	}
	return inProcess{srv}, nil
}

// window is how one window of a floor runs: its warm-up, its length,
// where the server runs and its log lies.
type window struct {
	warmup, length time.Duration
	dir            string
	apart          bool
}

// measure runs drive against a fresh floors' server for a warm-up and a
// window, and returns what it recorded: its requests, and the floor's CPU
// and the log's fsyncs in the window. The warm-up begins with the first
// request acknowledged, so that setting up the clients (the turn floor's
// two connections and streams a session, one after the other) is never
// measured, however slow the machine.
func (w window) measure(ctx context.Context, drive func(addr string, st *load.Stats, stop <-chan struct{}) error) (floorRun, error) {
	srv, err := startServer(w.dir, w.apart)
	if err != nil {
		return floorRun{}, err
	}
	st := load.NewStats()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- drive(srv.Addr(), st, stop) }()
	run, runErr, over := w.record(ctx, srv, st, done)
	st.Shut(time.Now())
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

// record waits for the first acknowledgement, the warm-up and the window,
// and reads the CPU and the log's fsyncs at either end of the window. It
// reports whether drive has returned (its error is then runErr's).
func (w window) record(ctx context.Context, srv server, st *load.Stats, done <-chan error) (run floorRun, runErr error, over bool) {
	var l0 floor.Stats
	var cpu0 time.Duration
	select {
	case <-st.Started():
		st.Open(time.Now().Add(w.warmup))
	case <-time.After(floorSetup):
		return run, fmt.Errorf("the floor acknowledged no request within %v of starting", floorSetup), false
	case <-ctx.Done():
		return run, nil, false
	case runErr = <-done:
		return run, runErr, true
	}
	select {
	case <-time.After(w.warmup):
		cpu0 = floor.ProcessCPU()
		if l0, runErr = srv.Stats(); runErr != nil {
			return run, runErr, false
		}
	case <-ctx.Done():
		return run, nil, false
	case runErr = <-done:
		return run, runErr, true
	}
	select {
	case <-time.After(w.length):
	case <-ctx.Done():
	case runErr = <-done:
		over = true
	}
	cpu1 := floor.ProcessCPU()
	l1, err := srv.Stats()
	if runErr == nil {
		runErr = err
	}
	run.cpu, run.syncs, run.syncing = cpu1-cpu0+l1.CPU-l0.CPU, l1.Syncs-l0.Syncs, l1.Syncing-l0.Syncing
	return run, runErr, over
}

// floors are a run's floors, each measured in two windows: one before
// the run and one after it, so that a drift of the machine's speed during
// the run weighs on both sides of a ratio.
type floors struct {
	w               window
	payload         int
	inFlight, conns int // the floor's requests in flight and connections
	pairs           int // the turn floor's sessions; 0: no turn floor (the sessions workload)
	base, turn      []floorRun
}

// measure runs one window of each floor.
func (f *floors) measure(ctx context.Context) error {
	b, err := f.w.measure(ctx, func(addr string, st *load.Stats, stop <-chan struct{}) error {
		return floor.Drive(ctx, addr, floor.Load{Conc: f.inFlight, Conns: f.conns, Payload: f.payload, Record: st.Acked}, stop)
	})
	if err != nil {
		return err
	}
	f.base = append(f.base, b)
	if f.pairs == 0 {
		return nil
	}
	t, err := f.w.measure(ctx, func(addr string, st *load.Stats, stop <-chan struct{}) error {
		return floor.DriveTurns(ctx, addr, floor.Turns{Pairs: f.pairs, Payload: f.payload, Acked: st.Acked,
			Told: func(start, done time.Time) { st.ToldAfter(start, done.Sub(start)) }}, stop)
	})
	if err != nil {
		return err
	}
	f.turn = append(f.turn, t)
	return nil
}

// reports merges the windows measured into the floors' reports (the turn
// floor's nil without it).
func (f *floors) reports() (*floorReport, *floorReport, error) {
	b, err := merge(f.inFlight, min(f.conns, f.inFlight), false, f.base)
	if err != nil {
		return nil, nil, fmt.Errorf("the floor: %w", err)
	}
	b.Apart = f.w.apart
	if f.pairs == 0 {
		return b, nil, nil
	}
	t, err := merge(f.pairs, 2*f.pairs, true, f.turn)
	if err != nil {
		return nil, nil, fmt.Errorf("the turn floor: %w", err)
	}
	t.Apart = f.w.apart
	return b, t, nil
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
