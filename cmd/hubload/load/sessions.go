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
	"github.com/hubd/hubd/hubpb"
)

// sessionAgents is how many agents each session of the sessions workload
// has, each taking one turn.
const sessionAgents = 3

// sessionsTimeout bounds a sessions run (and a session's wait for its
// close).
const sessionsTimeout = MaxDuration

// sessLoad is one run of the sessions workload: three agents, each
// served by agentsdk.Serve, and openers opening sessions as the first.
type sessLoad struct {
	cfg     Config
	run     string
	names   []string
	text    string
	st      *Stats
	h2h     histogram    // handler return → next handler start, same session
	openRun histogram    // open called → session_closed seen by the opener
	turns   atomic.Int64 // handler calls begun in the window
	done    atomic.Int64 // sessions begun in the window and closed
	last    atomic.Int64 // when the last session closed (offset from st.base)
	diag    atomic.Int64 // diagnostics of the clients (stale turns, retries)
	first   atomic.Value // the first diagnostic (string)
	cpu     CPUReport    // over the whole run, per turn
	hubLog  *LogReport   // the hub's log over the whole run (--hub-http)

	mu     sync.Mutex
	tracks map[string]*sessTrack
}

// sessTrack is what the run knows of one session in flight.
type sessTrack struct {
	lastReturn time.Time     // when the last handler returned its reply
	closedAt   time.Time     // when the opener saw session_closed
	closed     chan struct{} // closed then
}

// SessionsReport is the outcome of a sessions run; --json prints it as is.
type SessionsReport struct {
	Workload      string     `json:"workload"`
	Transport     string     `json:"transport"`
	Conc          int        `json:"in_flight"`
	Sessions      int        `json:"sessions"`
	Payload       int        `json:"payload_bytes"`
	Window        float64    `json:"window_s"`
	Measured      int64      `json:"sessions_measured"`
	SessionsPerS  float64    `json:"sessions_per_s"`
	TurnsPerS     float64    `json:"turns_per_s"`
	OpenToClosed  Latency    `json:"open_to_closed"`
	HandlerToNext Latency    `json:"handler_to_handler"`
	Diagnostics   int64      `json:"client_diagnostics"`
	CPU           CPUReport  `json:"cpu"`
	HubLog        *LogReport `json:"hub_log,omitempty"`
}

// runSessions runs the sessions workload: --sessions sessions, --conc at
// a time, each opened by its first agent with three auto-accepting
// participants and a round-robin graph capped at three turns, so the hub
// closes it after the third; every agent serves its turns through
// agentsdk.Serve with the default view, replying --payload bytes.
func runSessions(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rep, err := Sessions(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if err := rep.print(stdout, cfg.JSON); err != nil {
		return err
	}
	return rep.Err()
}

// Err is the error of a run that measured nothing.
func (r *SessionsReport) Err() error {
	if r.Measured == 0 {
		return errors.New("no session was opened and closed in the measurement window (shorten --warmup or raise --sessions)")
	}
	return nil
}

// Sessions runs the sessions workload and returns its report; the
// clients' diagnostics, if any, go to stderr.
func Sessions(ctx context.Context, cfg Config, stderr io.Writer) (SessionsReport, error) {
	ctx, cancel := context.WithTimeout(ctx, sessionsTimeout)
	defer cancel()
	sl := &sessLoad{cfg: cfg, run: newRunID(), text: strings.Repeat("x", cfg.Payload), st: NewStats(), tracks: map[string]*sessTrack{}}
	for i := range sessionAgents {
		sl.names = append(sl.names, agentName(sl.run, "s", i))
	}
	p, err := dialWith(ctx, cfg.Hub, sl.names, cfg.ConnsFor(sessionAgents), cfg.Transport, sl.logf)
	if err != nil {
		return SessionsReport{}, err
	}
	defer p.close()
	serveCtx, stopServing := context.WithCancel(ctx)
	var served sync.WaitGroup
	serveErrs := make(chan error, sessionAgents)
	for i, name := range sl.names {
		opts := []agentsdk.ServeOption{}
		if i == 0 {
			opts = append(opts, agentsdk.WithSessionEnd(sl.ended))
		}
		if !cfg.Terse {
			opts = append(opts, agentsdk.WithObserver(func(*hubpb.Delivery) {})) // an observer's stream carries everything
		}
		c := p.client(i)
		served.Go(func() {
			if err := c.Serve(as(serveCtx, name), sl.handle, opts...); err != nil {
				serveErrs <- fmt.Errorf("serving as %s: %w", name, err)
				stopServing()
			}
		})
	}
	t0, w := time.Now(), startWindow(ctx, cfg)
	runErr := sl.open(serveCtx, p.client(0))
	use, hubLog, logErr := w.end(ctx)
	sl.cpu, sl.hubLog = use.report(time.Since(t0), uint64(3*cfg.Sessions)), hubLog
	if logErr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("--hub-http: %w", logErr))
	}
	stopServing()
	served.Wait()
	close(serveErrs)
	for err := range serveErrs {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		return SessionsReport{}, runErr
	}
	rep := sl.report()
	if n := rep.Diagnostics; n > 0 {
		fmt.Fprintf(stderr, "hubload: %d client diagnostics, the first: %v\n", n, sl.first.Load())
	}
	return rep, nil
}

// open opens cfg.sessions sessions from cfg.conc goroutines, each waiting
// for its session to close before opening the next, and measures each
// open → close.
func (sl *sessLoad) open(ctx context.Context, c *agentsdk.Client) error {
	sl.st.Open(time.Now().Add(sl.cfg.Warmup))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, sl.cfg.Conc)
	for range sl.cfg.Conc {
		wg.Go(func() {
			for int(next.Add(1)) <= sl.cfg.Sessions {
				if err := sl.session(ctx, c); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	sl.st.Shut(sl.st.base.Add(time.Duration(sl.last.Load())))
	return <-errs // nil when none failed
}

// session opens one session and waits until the opener sees it closed.
func (sl *sessLoad) session(ctx context.Context, c *agentsdk.Client) error {
	start := time.Now()
	info, err := c.Open(as(ctx, sl.names[0]), agentsdk.OpenOptions{Type: agentsdk.TypeWorkflow,
		Participants: agentsdk.AutoAccepted(sl.names...), Graph: agentsdk.RoundRobin(sl.names, sessionAgents),
		Labels: map[string]string{"hubload": sl.run}})
	if err != nil {
		return fmt.Errorf("opening a session as %s: %w", sl.names[0], err)
	}
	id := info.ID()
	tr := sl.track(id)
	select {
	case <-tr.closed:
	case <-ctx.Done():
		return fmt.Errorf("session %s did not close: %w", id, ctx.Err())
	}
	sl.mu.Lock()
	closedAt := tr.closedAt
	delete(sl.tracks, id)
	sl.mu.Unlock()
	if sl.st.in(start) {
		sl.openRun.record(closedAt.Sub(start))
		sl.done.Add(1)
	}
	at := int64(closedAt.Sub(sl.st.base))
	for cur := sl.last.Load(); at > cur && !sl.last.CompareAndSwap(cur, at); cur = sl.last.Load() {
	}
	return nil
}

// track returns session id's track, made on first use (a turn may be
// served before its Open returns).
func (sl *sessLoad) track(id string) *sessTrack {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	tr := sl.tracks[id]
	if tr == nil {
		tr = &sessTrack{closed: make(chan struct{})}
		sl.tracks[id] = tr
	}
	return tr
}

// handle is every agent's handler: it measures the time since the last
// handler of the session returned and replies with the payload.
func (sl *sessLoad) handle(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	now := time.Now()
	if sl.st.in(now) {
		sl.turns.Add(1)
	}
	tr := sl.track(t.SessionID)
	sl.mu.Lock()
	prev := tr.lastReturn
	sl.mu.Unlock()
	if !prev.IsZero() && sl.st.in(prev) {
		sl.h2h.record(now.Sub(prev))
	}
	if t.View == nil {
		return agentsdk.Reply{}, errors.New("the turn has no view")
	}
	sl.mu.Lock()
	tr.lastReturn = time.Now()
	sl.mu.Unlock()
	return agentsdk.ReplyText(sl.text), nil
}

// ended is told by the first agent's Serve (the opener's) of each
// session's end, and notes when it came.
func (sl *sessLoad) ended(e *hubpb.Envelope) {
	now := time.Now()
	tr := sl.track(e.GetSessionId())
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if tr.closedAt.IsZero() {
		tr.closedAt = now
		close(tr.closed)
	}
}

// logf counts the clients' diagnostics and keeps the first.
func (sl *sessLoad) logf(format string, args ...any) {
	if sl.diag.Add(1) == 1 {
		sl.first.Store(fmt.Sprintf(format, args...))
	}
}

// report builds the run's report.
func (sl *sessLoad) report() SessionsReport {
	w := sl.st.Window()
	r := SessionsReport{Workload: WorkloadSessions, Transport: sl.cfg.Transport, Conc: sl.cfg.Conc, Sessions: sl.cfg.Sessions, Payload: sl.cfg.Payload,
		Window: w.Seconds(), Measured: sl.done.Load(), OpenToClosed: summarize(&sl.openRun),
		HandlerToNext: summarize(&sl.h2h), Diagnostics: sl.diag.Load(), CPU: sl.cpu, HubLog: sl.hubLog}
	if w > 0 {
		r.SessionsPerS = float64(r.Measured) / w.Seconds()
		r.TurnsPerS = float64(sl.turns.Load()) / w.Seconds()
	}
	return r
}

// print writes the report, as JSON or as text.
func (r SessionsReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	_, err := io.WriteString(w, r.Text())
	return err
}

// Text is the human-readable report.
func (r SessionsReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hubload sessions: %d sessions of %d agents (agentsdk.Serve, default view, transport %s), %d in flight, payload %d B\n",
		r.Sessions, sessionAgents, r.Transport, r.Conc, r.Payload)
	fmt.Fprintf(&b, "measured %d in %.1fs = %.1f sessions/s, %.0f turns/s; open→closed %s; handler→handler %s; client diagnostics %d\n",
		r.Measured, r.Window, r.SessionsPerS, r.TurnsPerS, r.OpenToClosed.Text(), r.HandlerToNext.Text(), r.Diagnostics)
	c := r.CPU
	fmt.Fprintf(&b, "CPU of %.0f cores over the whole run: hubload %.2f (%.0fµs per turn)", c.Cores, c.Hubload, c.HubloadPerAccepted)
	if c.Hub != 0 {
		fmt.Fprintf(&b, ", hub %.2f (%.0fµs per turn)", c.Hub, c.HubPerAccepted)
	}
	fmt.Fprintf(&b, ", other processes %.2f\n", c.Other)
	if r.HubLog != nil {
		fmt.Fprintf(&b, "hub log over the whole run (its /metrics): %s\n", r.HubLog.Text())
	}
	return b.String()
}
