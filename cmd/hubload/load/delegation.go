package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// delegationTurnCap is max_turns of a delegation workload's parent
// sessions: far above what a run takes, so the hub never closes them,
// and explicit, so no default cap applies.
const delegationTurnCap = 1 << 30

// delegationLoad is the delegation workload: in each of --sessions
// workflow sessions a delegator and a peer take turns in round robin,
// both served by agentsdk.Serve; on each of its turns the delegator
// delegates (blocking) to a child workflow whose worker, also served,
// finishes at once, and answers with the result. Two latencies are
// measured side by side in the same sessions and the same window:
//
//   - a turn: from one handler's return to the next speaker's handler
//     being called (the SDK posts the reply, the hub commits it and tells
//     the next speaker, whose Serve fetches its view and calls it);
//   - a delegation round trip: Turn.Delegate from call to return (the
//     child's open and the delegation in one write, the worker's turn, the
//     child's close and its result in the parent in one write, the
//     delegator told).
type delegationLoad struct {
	cfg       Config
	run       string
	measuring atomic.Bool
	stopping  atomic.Bool
	turns     histogram // handler return → next handler called
	rounds    histogram // Turn.Delegate call → return
	failed    atomic.Int64
	firstErr  atomic.Value // error
}

// delegationPair is one parent session's two speakers and the time the
// last handler returned (unix nanos), to time the next one.
type delegationPair struct {
	delegator, peer, worker string
	session                 string // the parent, once opened
	returned                atomic.Int64
}

// delegationReport is the outcome; --json prints it as is.
type delegationReport struct {
	Workload   string  `json:"workload"`
	Sessions   int     `json:"sessions"`
	Window     float64 `json:"window_s"`
	Turn       Latency `json:"turn_handler_to_handler"`
	Delegation Latency `json:"delegation_round_trip"`
	RatioP50   float64 `json:"delegation_p50_over_turn_p50"`
	Failed     int64   `json:"failed"`
}

// runDelegation runs the delegation workload and prints its report.
func runDelegation(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	d := &delegationLoad{cfg: cfg, run: newRunID()}
	pairs := make([]*delegationPair, cfg.Sessions)
	var names []string
	for i := range pairs {
		pairs[i] = &delegationPair{delegator: agentName(d.run, "d", i), peer: agentName(d.run, "p", i), worker: agentName(d.run, "w", i)}
		names = append(names, pairs[i].delegator, pairs[i].peer, pairs[i].worker)
	}
	p, err := dial(ctx, cfg.Hub, names, len(names))
	if err != nil {
		return err
	}
	defer p.close()
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	var served sync.WaitGroup
	for i, pr := range pairs {
		for k, h := range []agentsdk.Handler{d.delegatorTurn(pr), d.peerTurn(pr), d.workerTurn} {
			c := p.client(3*i + k)
			served.Go(func() { d.serve(serving, c, h) })
		}
	}
	start := time.Now()
	if err := forEach(len(pairs), func(i int) error { return d.open(ctx, p.client(3*i), pairs[i]) }); err != nil {
		return err
	}
	window := d.measure(ctx)
	d.stopping.Store(true)
	d.waitEnded(ctx, p, pairs, stderr)
	stopServing()
	served.Wait()
	rep := d.report(window)
	if err := rep.print(stdout, cfg.JSON); err != nil {
		return err
	}
	if e, _ := d.firstErr.Load().(error); e != nil {
		return fmt.Errorf("%d turns failed (after %v), the first: %w", d.failed.Load(), time.Since(start).Round(time.Millisecond), e)
	}
	if rep.Delegation.Count == 0 || rep.Turn.Count == 0 {
		return errors.New("no delegation round trip or no turn in the measurement window")
	}
	return nil
}

// open opens a pair's parent session as its delegator.
func (d *delegationLoad) open(ctx context.Context, c *agentsdk.Client, pr *delegationPair) error {
	s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeWorkflow,
		Participants: agentsdk.AutoAccepted(pr.delegator, pr.peer),
		Graph:        agentsdk.RoundRobin([]string{pr.delegator, pr.peer}, delegationTurnCap),
		Labels:       map[string]string{"hubload": d.run}})
	if err != nil {
		return fmt.Errorf("opening a session as %s: %w", pr.delegator, err)
	}
	if s.GetState() != agentsdk.StateOpen {
		return fmt.Errorf("session %s opened in state %s, want %s", s.ID(), s.GetState(), agentsdk.StateOpen)
	}
	pr.session = s.ID()
	return nil
}

// serve serves one agent until ctx ends.
func (d *delegationLoad) serve(ctx context.Context, c *agentsdk.Client, h agentsdk.Handler) {
	if err := c.Serve(ctx, h); err != nil && ctx.Err() == nil {
		d.fail(err)
	}
}

// measure waits out the warm-up, then the window; it returns the window's
// length (shorter if ctx ended first).
func (d *delegationLoad) measure(ctx context.Context) time.Duration {
	if !sleepFor(ctx, d.cfg.Warmup) {
		return 0
	}
	d.measuring.Store(true)
	t0 := time.Now()
	sleepFor(ctx, d.cfg.Duration)
	d.measuring.Store(false)
	return time.Since(t0)
}

// waitEnded waits, at most drainTimeout, for every parent session to be
// finished by its delegator, then closes those still open.
func (d *delegationLoad) waitEnded(ctx context.Context, p *pool, pairs []*delegationPair, stderr io.Writer) {
	deadline := time.Now().Add(drainTimeout)
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(time.Second))
	defer cancel()
	err := forEach(len(pairs), func(i int) error {
		c, id := p.client(3*i), pairs[i].session
		for time.Now().Before(deadline) {
			s, err := c.GetSession(ctx, id)
			if err != nil {
				return err
			}
			if s.Ended() {
				return nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, err := c.CloseSession(ctx, id, "")
		return errors.Join(fmt.Errorf("session %s still open after %v: closed", id, drainTimeout), err)
	})
	if err != nil {
		fmt.Fprintf(stderr, "hubload: %v\n", err)
	}
}

// delegatorTurn delegates to the pair's worker and answers with the
// result; once the run stops it finishes the session instead.
func (d *delegationLoad) delegatorTurn(pr *delegationPair) agentsdk.Handler {
	return func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
		d.turnBegins(pr)
		if d.stopping.Load() {
			return agentsdk.ReplyPacket(agentsdk.NewPacket("done").Finish("done", "")), nil
		}
		t0 := time.Now()
		r, err := t.Delegate(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeWorkflow, Graph: agentsdk.NewGraph(pr.worker),
			Participants: agentsdk.AutoAccepted(pr.worker), Task: "work"})
		if err != nil {
			d.fail(err)
			return agentsdk.Reply{}, err
		}
		if d.measuring.Load() {
			d.rounds.record(time.Since(t0))
		}
		return d.turnEnds(pr, agentsdk.ReplyText("result: "+r.GetSummary())), nil
	}
}

// peerTurn answers at once.
func (d *delegationLoad) peerTurn(pr *delegationPair) agentsdk.Handler {
	return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
		d.turnBegins(pr)
		return d.turnEnds(pr, agentsdk.ReplyText("next")), nil
	}
}

// workerTurn finishes the child session at once.
func (d *delegationLoad) workerTurn(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
	return agentsdk.ReplyPacket(agentsdk.NewPacket("worked").Finish("", "worked")), nil
}

// turnBegins records the time since the pair's previous handler returned.
func (d *delegationLoad) turnBegins(pr *delegationPair) {
	if at := pr.returned.Swap(0); at != 0 && d.measuring.Load() {
		d.turns.record(time.Duration(time.Now().UnixNano() - at))
	}
}

// turnEnds stamps the time a handler returns r.
func (d *delegationLoad) turnEnds(pr *delegationPair, r agentsdk.Reply) agentsdk.Reply {
	pr.returned.Store(time.Now().UnixNano())
	return r
}

// fail counts a failed turn and keeps the first error.
func (d *delegationLoad) fail(err error) {
	d.failed.Add(1)
	d.firstErr.CompareAndSwap(nil, err)
}

// report summarises the run.
func (d *delegationLoad) report(window time.Duration) delegationReport {
	r := delegationReport{Workload: "delegation", Sessions: d.cfg.Sessions, Window: window.Seconds(),
		Turn: summarize(&d.turns), Delegation: summarize(&d.rounds), Failed: d.failed.Load()}
	if r.Turn.P50 > 0 {
		r.RatioP50 = r.Delegation.P50 / r.Turn.P50
	}
	return r
}

// print writes the report as text or JSON.
func (r delegationReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workload delegation: %d sessions in flight, window %.1fs\n", r.Sessions, r.Window)
	fmt.Fprintf(&b, "turn, handler to handler:  %s\n", r.Turn.Text())
	fmt.Fprintf(&b, "delegation round trip:     %s\n", r.Delegation.Text())
	fmt.Fprintf(&b, "delegation p50 / turn p50: %.2f\n", r.RatioP50)
	if r.Failed > 0 {
		fmt.Fprintf(&b, "failed: %d\n", r.Failed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sleepFor waits d or until ctx is done; it reports whether d elapsed.
func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
