package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// drainTimeout is how long sends in flight may take to finish once the
// window has closed, before the run cancels them.
const drainTimeout = 10 * time.Second

// openers is how many sessions are opened (and closed) concurrently.
const openers = 16

// load is one load run: its agents, sessions and workers.
type load struct {
	cfg      Config
	run      string
	agents   []*agent
	sessions []*sessRun
	workers  []*worker
	open     atomic.Int64  // sessions not ended
	allEnded chan struct{} // closed when every session has ended
	stop     chan struct{} // closed when no new send may start
	hubLog   *LogReport    // the hub's log in the window (--hub-http)
	logErr   error         // reading it failed
}

// runLoad runs the load mode and prints its report.
func runLoad(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rep, err := Turns(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if err := rep.print(stdout, cfg.JSON); err != nil {
		return err
	}
	return rep.Err()
}

// Err is the error of a run that measured nothing.
func (r *Report) Err() error {
	if r.Accepted == 0 {
		return errors.New("no send was acknowledged in the measurement window")
	}
	return nil
}

// Turns runs the turns workload and returns its report.
func Turns(ctx context.Context, cfg Config, stderr io.Writer) (rep Report, err error) {
	var vl *verifyLog
	if cfg.Verify != "" {
		if vl, err = openVerify(cfg.Verify); err != nil {
			return rep, err
		}
		defer func() { err = errors.Join(err, vl.close()) }()
	}
	before := readProc(cfg.HubPID)
	l := newLoad(cfg)
	p, err := dialWith(ctx, cfg.Hub, l.names(), cfg.ConnsFor(cfg.Agents), cfg.Transport, nil)
	if err != nil {
		return rep, err
	}
	defer p.close()
	// Calls outlive ctx (an interrupt ends the run like --duration does)
	// until the run gives up on them.
	calls, giveUp := context.WithCancel(context.WithoutCancel(ctx))
	defer giveUp()
	l.connect(p, calls)
	defer l.closeSessions(stderr)
	if err := l.openSessions(calls); err != nil {
		return rep, err
	}
	st := NewStats()
	cpu := l.drive(ctx, calls, giveUp, st, vl)
	if l.logErr != nil {
		return rep, fmt.Errorf("--hub-http: %w", l.logErr)
	}
	return l.report(st, cpu, before, readProc(cfg.HubPID)), nil
}

// drive runs the agents through the warm-up and the window, then lets the
// sends in flight finish and ends the streams. It returns the CPU used in
// the window.
func (l *load) drive(ctx, calls context.Context, giveUp context.CancelFunc, st *Stats, vl *verifyLog) cpuUse {
	subs, endStreams := context.WithCancel(calls)
	defer endStreams()
	var streams, workers sync.WaitGroup
	st.Open(time.Now().Add(l.cfg.Warmup))
	l.start(subs, st, vl, &streams, &workers)
	cpu := l.measure(ctx, st)
	l.drain(&workers, giveUp)
	endStreams()
	streams.Wait()
	return cpu
}

// newLoad builds the agents of a run, not yet connected.
func newLoad(cfg Config) *load {
	l := &load{cfg: cfg, run: newRunID(), allEnded: make(chan struct{}), stop: make(chan struct{})}
	for i := range cfg.Agents {
		l.agents = append(l.agents, &agent{name: agentName(l.run, "a", i), index: i,
			workers: map[string]*worker{}, cursors: map[string]uint64{}, terse: cfg.Terse})
	}
	return l
}

// names returns the agents' names, in order.
func (l *load) names() []string {
	out := make([]string, len(l.agents))
	for i, a := range l.agents {
		out[i] = a.name
	}
	return out
}

// connect gives each agent its client and the context of its calls.
func (l *load) connect(p *pool, calls context.Context) {
	for i, a := range l.agents {
		a.client, a.calls, a.overStream = p.client(i), as(calls, a.name), l.cfg.Transport == agentsdk.TransportStream
	}
}

// openSessions opens every session (as its first agent, all participants
// auto-accepting, so each is open at once) and builds its workers.
func (l *load) openSessions(ctx context.Context) error {
	plan := assign(l.cfg.Agents, l.cfg.Sessions)
	l.sessions = make([]*sessRun, len(plan))
	l.open.Store(int64(len(plan)))
	err := forEach(len(plan), func(j int) error {
		s, err := l.openSession(ctx, plan[j])
		l.sessions[j] = s
		return err
	})
	if err != nil {
		return err
	}
	text := strings.Repeat("x", l.cfg.Payload)
	for j, s := range l.sessions {
		for _, i := range plan[j] {
			w := newWorker(l.agents[i], s, l.run, text)
			l.agents[i].workers[s.id] = w
			l.workers = append(l.workers, w)
		}
	}
	return nil
}

// openSession opens one session of the agents members, in speaking order.
func (l *load) openSession(ctx context.Context, members []int) (*sessRun, error) {
	creator := l.agents[members[0]]
	names := make([]string, len(members))
	for k, i := range members {
		names[k] = l.agents[i].name
	}
	info, err := creator.client.Open(as(ctx, creator.name), agentsdk.OpenOptions{Type: agentsdk.TypeWorkflow,
		Participants: agentsdk.AutoAccepted(names...), Graph: graph(names, l.cfg.MaxTurns),
		Labels: map[string]string{"hubload": l.run}})
	if err != nil {
		return nil, fmt.Errorf("opening a session as %s: %w", creator.name, err)
	}
	s := &sessRun{id: info.ID(), creator: creator, done: make(chan struct{}), onEnd: l.ended}
	if l.cfg.Rate > 0 && l.cfg.Workload == WorkloadTurns {
		s.pace = &pacer{interval: time.Duration(float64(time.Second) * float64(l.cfg.Sessions) / float64(l.cfg.Rate))}
	}
	if info.GetState() != agentsdk.StateOpen {
		return s, fmt.Errorf("session %s opened in state %s, want %s", s.id, info.GetState(), agentsdk.StateOpen)
	}
	return s, nil
}

// ended counts a session's end.
func (l *load) ended() {
	if l.open.Add(-1) == 0 {
		close(l.allEnded)
	}
}

// start starts every worker, then every agent's stream (which tells the
// first speakers their pending turns).
func (l *load) start(subs context.Context, st *Stats, vl *verifyLog, streams, workers *sync.WaitGroup) {
	for _, w := range l.workers {
		workers.Go(func() { w.run(l.stop, st, vl) })
	}
	for _, a := range l.agents {
		streams.Go(func() { a.listen(subs, st) })
	}
}

// measure waits out the warm-up, then the window (which st opens at its
// end), each cut short by ctx (an interrupt) or by every session having
// ended. It returns the CPU time used in the window.
func (l *load) measure(ctx context.Context, st *Stats) cpuUse {
	var use cpuUse
	if l.sleep(ctx, l.cfg.Warmup) {
		w := startWindow(ctx, l.cfg)
		l.sleep(ctx, l.cfg.Duration)
		use, l.hubLog, l.logErr = w.end(ctx)
	}
	st.Shut(time.Now())
	return use
}

// sleep waits d, or until ctx is done or every session has ended; it
// reports whether d elapsed.
func (l *load) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-l.allEnded:
	}
	return false
}

// drain stops new sends and waits for those in flight, giving up on them
// (cancelling every call) after drainTimeout.
func (l *load) drain(workers *sync.WaitGroup, giveUp context.CancelFunc) {
	close(l.stop)
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		giveUp()
		<-done
	}
}

// closeSessions closes, as their creators, the sessions still open; a
// failure is only reported (the hub may be down).
func (l *load) closeSessions(stderr io.Writer) {
	var failed atomic.Int64
	err := forEach(len(l.sessions), func(j int) error {
		s := l.sessions[j]
		if s == nil || s.ended() {
			return nil
		}
		if _, err := s.creator.client.CloseSession(s.creator.calls, s.id, ""); err != nil {
			failed.Add(1)
			return err
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "hubload: %d sessions could not be closed, the first: %v\n", failed.Load(), err)
	}
}

// forEach calls f(0..n-1) from up to openers goroutines and returns the
// first error.
func forEach(n int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  atomic.Int64
	)
	for range min(n, openers) {
		wg.Go(func() {
			for j := int(next.Add(1) - 1); j < n; j = int(next.Add(1) - 1) {
				if err := f(j); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
