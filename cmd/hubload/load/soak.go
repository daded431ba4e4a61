package load

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/exitcode"
)

// The soak (hubload --soak) runs a hubd of its own and holds it under
// load for a while, in two phases:
//
//  1. Steady load: --sessions conversations kept open at once, senders
//     sending into them and now and then closing one and opening another
//     in its place (so ended sessions pile up in the log), for
//     --duration; the hub's RSS (from /proc/PID/status) is printed every
//     --interval. It fails when the RSS at the end is more than
//     --max-rss-growth times the highest RSS of the first quarter (the
//     warm-up: badger's memtables fill then): the hub's memory is bounded
//     by what is live, not by what was written.
//  2. Crash rounds: --rounds times, load for about --round-load, then
//     kill -9 the hub in the middle of it, start it again on the same
//     data, and check that every send it acknowledged is in its log (as
//     --check does): acked = found, or it fails.
//
// With --measure-ended N it first measures what ended sessions cost: the
// hub's RSS and Go heap (after a collection, from /debug/pprof) empty,
// after N sessions were opened, talked in and closed, and after a restart
// on that log, with the ratios to the empty hub.
//
// The long soak (10k sessions for 10 minutes, 100 rounds) is run on
// demand (docs/OPERATIONS.md); cmd/hubd's tests run a short one.
type soakConfig struct {
	hubd      string
	data      string
	sessions  int
	senders   int
	conns     int
	payload   int
	duration  time.Duration
	interval  time.Duration
	rounds    int
	roundLoad time.Duration
	maxGrowth float64
	ended     int
}

// parseSoak parses the soak's command line (after --soak).
func parseSoak(args []string, stderr io.Writer) (soakConfig, error) {
	var c soakConfig
	fs := flag.NewFlagSet("hubload --soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.hubd, "hubd", "", "the hubd `binary` the soak runs (required)")
	fs.StringVar(&c.data, "data", "", "the hub's data `directory` (default: a new temporary one, removed after)")
	fs.IntVar(&c.sessions, "sessions", 10_000, "conversations kept open at once")
	fs.IntVar(&c.senders, "senders", 32, "concurrent senders")
	fs.IntVar(&c.conns, "conns", 8, "gRPC connections")
	fs.IntVar(&c.payload, "payload", 256, "text `bytes` per envelope")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long the steady load lasts (0: skip it)")
	fs.DurationVar(&c.interval, "interval", 10*time.Second, "how often the hub's RSS is printed")
	fs.IntVar(&c.rounds, "rounds", 10, "kill -9 rounds after the steady load")
	fs.DurationVar(&c.roundLoad, "round-load", 2*time.Second, "about how long each round loads the hub before killing it")
	fs.IntVar(&c.ended, "measure-ended", 0, "first measure the hub's memory empty, after this many sessions opened and closed, and after a restart (0: skip)")
	fs.Float64Var(&c.maxGrowth, "max-rss-growth", 1.5, "fail when the RSS at the end exceeds this many times the highest RSS of the first quarter of --duration (the warm-up)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, exitcode.New(0, err)
		}
		return c, exitcode.Usage("%v", err)
	}
	switch {
	case fs.NArg() != 0:
		return c, exitcode.Usage("--soak: unexpected argument %q", fs.Arg(0))
	case c.hubd == "":
		return c, exitcode.Usage("--soak needs --hubd, the hubd binary to run")
	case c.sessions < 1 || c.sessions > MaxSessions:
		return c, exitcode.Usage("--sessions %d: want 1 to %d", c.sessions, MaxSessions)
	case c.senders < 1 || c.conns < 1 || c.payload < 1 || c.payload > maxPayload:
		return c, exitcode.Usage("--senders, --conns and --payload must be positive (payload at most %d)", maxPayload)
	case c.duration < 0 || c.duration > 24*time.Hour || c.interval <= 0:
		return c, exitcode.Usage("--duration %v, --interval %v: want 0 to 24h and a positive interval", c.duration, c.interval)
	case c.rounds < 0 || c.rounds > 1000 || c.roundLoad <= 0:
		return c, exitcode.Usage("--rounds %d, --round-load %v: want 0 to 1000 rounds of a positive load", c.rounds, c.roundLoad)
	case c.ended < 0 || c.ended > 10_000_000:
		return c, exitcode.Usage("--measure-ended %d: want 0 to 10,000,000", c.ended)
	case c.maxGrowth < 1:
		return c, exitcode.Usage("--max-rss-growth %v: want at least 1", c.maxGrowth)
	}
	return c, nil
}

// runSoak runs the soak (see soakConfig).
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseSoak(args, stderr)
	if err != nil {
		return err
	}
	if c.data == "" {
		dir, err := os.MkdirTemp("", "hubload-soak-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.data = dir
	}
	addrs, err := freeLoopback(2)
	if err != nil {
		return err
	}
	addr, haddr := addrs[0], "off"
	if c.ended > 0 {
		haddr = addrs[1] // for the heap profile
	}
	s := &soak{c: c, addr: addr, haddr: haddr, out: stdout, stderr: stderr, text: pad(c.payload)}
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.kill()
	if c.ended > 0 {
		if err := s.measureEnded(ctx); err != nil {
			return err
		}
	}
	if err := s.openAll(ctx); err != nil {
		return err
	}
	if c.duration > 0 {
		if err := s.steady(ctx); err != nil {
			return err
		}
	}
	for r := 1; r <= c.rounds; r++ {
		if err := s.round(ctx, r); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "soak: passed (%d sessions, %v steady, %d kill -9 rounds)\n", c.sessions, c.duration, c.rounds)
	return nil
}

// soak is a running soak: the hub it runs and the sessions it keeps open.
type soak struct {
	c      soakConfig
	addr   string
	haddr  string // the hub's HTTP address, for its heap profile; "off": none
	out    io.Writer
	stderr io.Writer

	cmd  *exec.Cmd
	pool *pool
	text string

	mu   sync.Mutex
	live []string // open sessions; a closed one is replaced
	seq  atomic.Uint64

	sends, ended atomic.Int64
}

// agents are the soak's agents: creators and their partners, one pair per
// connection.
func (s *soak) agents() []string {
	var names []string
	for i := range s.c.conns {
		names = append(names, "soak-a"+strconv.Itoa(i))
	}
	return names
}

// start runs hubd on the soak's address and data and connects to it.
func (s *soak) start(ctx context.Context) error {
	cmd := exec.Command(s.c.hubd, "serve", "--listen", s.addr, "--data", s.c.data, "--http", s.haddr,
		"--log-format", "json", "--log-level", "warn")
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.c.hubd, err)
	}
	s.cmd = cmd
	// Wait for the port first: gRPC's reconnect backoff would otherwise
	// add up to seconds to the restart measured, and a start slower than
	// usual (a loaded machine) could outlast the dial's wait.
	if err := waitListening(ctx, s.addr, startTimeout); err != nil {
		s.kill()
		return err
	}
	p, err := dial(ctx, s.addr, s.agents(), s.c.conns)
	if err != nil {
		s.kill()
		return err
	}
	s.pool = p
	return nil
}

// startTimeout is how long the soak waits for a hub it started to listen.
const startTimeout = time.Minute

// waitListening polls addr until it accepts a TCP connection or timeout
// passes.
func waitListening(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the hub did not listen on %s within %v: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill ends the hub with SIGKILL and waits for it.
func (s *soak) kill() {
	if s.pool != nil {
		s.pool.close()
		s.pool = nil
	}
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// stop ends the hub with SIGTERM (it drains and closes its log) and
// waits for it.
func (s *soak) stop() {
	if s.pool != nil {
		s.pool.close()
		s.pool = nil
	}
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// rss is the hub's resident set, in MiB.
func (s *soak) rss() float64 { return readProc(s.cmd.Process.Pid).rssMiB() }

// open opens one conversation of creator i's pair.
func (s *soak) open(ctx context.Context, i int) (string, error) {
	c := s.pool.client(i)
	partner := "soak-b" + strconv.Itoa(i%s.c.conns)
	sess, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(partner)})
	if err != nil {
		return "", err
	}
	return sess.ID(), nil
}

// openAll opens the sessions kept open.
func (s *soak) openAll(ctx context.Context) error {
	t0 := time.Now()
	s.live = make([]string, s.c.sessions)
	err := forEach(s.c.sessions, func(i int) error {
		id, err := s.open(ctx, i)
		s.live[i] = id
		return err
	})
	if err != nil {
		return fmt.Errorf("opening the sessions: %w", err)
	}
	fmt.Fprintf(s.out, "soak: %d sessions open in %v; hub rss %.1f MiB\n", s.c.sessions, time.Since(t0).Round(time.Millisecond), s.rss())
	return nil
}

// send sends one text into live session k as its creator; it returns the
// acknowledged record.
func (s *soak) send(ctx context.Context, k int) (ackRecord, error) {
	s.mu.Lock()
	id := s.live[k]
	s.mu.Unlock()
	msg := "soak-" + strconv.FormatUint(s.seq.Add(1), 10)
	ack, err := s.pool.client(k).SendText(ctx, id, s.text, agentsdk.WithClientMsgID(msg))
	if err != nil {
		return ackRecord{}, err
	}
	s.sends.Add(1)
	return ackRecord{session: id, seq: ack.Seq, msgID: msg}, nil
}

// replace closes live session k and opens another in its place.
func (s *soak) replace(ctx context.Context, k int) error {
	s.mu.Lock()
	id := s.live[k]
	s.mu.Unlock()
	if _, err := s.pool.client(k).CloseSession(ctx, id, "soak"); err != nil {
		return err
	}
	s.ended.Add(1)
	nid, err := s.open(ctx, k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.live[k] = nid
	s.mu.Unlock()
	return nil
}

// load runs the senders until ctx ends: each sends into a random live
// session, and one turn in closeEvery replaces it instead (0: never).
// Acknowledged sends go to acks when it is not nil. Errors are counted,
// not returned: during a crash round they are expected.
func (s *soak) load(ctx context.Context, closeEvery int, acks func(ackRecord)) (failed int64) {
	var wg sync.WaitGroup
	var fails atomic.Int64
	for w := range s.c.senders {
		r := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for ctx.Err() == nil {
				k := r.IntN(s.c.sessions)
				if closeEvery > 0 && r.IntN(closeEvery) == 0 {
					if err := s.replace(ctx, k); err != nil {
						fails.Add(1)
					}
					continue
				}
				rec, err := s.send(ctx, k)
				if err != nil {
					fails.Add(1)
					continue
				}
				if acks != nil {
					acks(rec)
				}
			}
		})
	}
	wg.Wait()
	return fails.Load()
}

// steady is the first phase: load for the duration with the RSS printed.
func (s *soak) steady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.duration)
	defer cancel()
	first := s.rss()
	done := make(chan int64, 1)
	go func() { done <- s.load(ctx, 20, nil) }()
	t0 := time.Now()
	tick := time.NewTicker(s.c.interval)
	defer tick.Stop()
	peak, warm := first, first
	var last float64
	for {
		select {
		case <-tick.C:
			last = s.rss()
			peak = max(peak, last)
			if time.Since(t0) <= s.c.duration/4 {
				warm = max(warm, last)
			}
			fmt.Fprintf(s.out, "soak: t=%-6v rss=%.1f MiB live=%d ended=%d sends=%d\n", time.Since(t0).Round(time.Second),
				last, s.c.sessions, s.ended.Load(), s.sends.Load())
			continue
		case failed := <-done:
			last = s.rss()
			fmt.Fprintf(s.out, "soak: steady load over: rss %.1f MiB at the start, %.1f after the warm-up, %.1f at the end (%.2f×), %.1f at the peak; %d sends, %d sessions ended, %d failed calls\n",
				first, warm, last, last/warm, peak, s.sends.Load(), s.ended.Load(), failed)
		}
		break
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if last > s.c.maxGrowth*warm {
		return exitcode.New(1, fmt.Errorf("the hub's RSS grew from %.1f MiB after the warm-up to %.1f MiB, more than %.1f times", warm, last, s.c.maxGrowth))
	}
	return nil
}

// round is one crash round: load, kill -9 in the middle of it, restart,
// and check every acknowledged send of the round is in the log.
func (s *soak) round(ctx context.Context, n int) error {
	var mu sync.Mutex
	var acks []ackRecord
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.load(lctx, 50, func(r ackRecord) {
			mu.Lock()
			acks = append(acks, r)
			mu.Unlock()
		})
	}()
	d := s.c.roundLoad/2 + time.Duration(rand.Int64N(int64(s.c.roundLoad)))
	select {
	case <-time.After(d):
	case <-ctx.Done():
		stop()
		<-done
		return ctx.Err()
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL) // in the middle of the load
	_ = s.cmd.Wait()
	s.cmd = nil
	stop()
	<-done
	s.pool.close()
	s.pool = nil
	mu.Lock()
	recs := slices.Clone(acks)
	mu.Unlock()
	t0 := time.Now()
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("round %d: restarting the hub: %w", n, err)
	}
	restart := time.Since(t0)
	res, err := s.check(ctx, recs)
	if err != nil {
		return fmt.Errorf("round %d: %w", n, err)
	}
	fmt.Fprintf(s.out, "soak: round %d: killed after %v; restarted in %v; acked %d, found %d; rss %.1f MiB\n",
		n, d.Round(time.Millisecond), restart.Round(time.Millisecond), res.Acked, res.Found, s.rss())
	if err := res.verdict(); err != nil {
		_ = res.print(s.out, false)
		return fmt.Errorf("round %d: %w", n, err)
	}
	return nil
}

// check reads the logs of the sessions of recs, as an operator, and
// compares (see --check).
func (s *soak) check(ctx context.Context, recs []ackRecord) (checkResult, error) {
	p, err := dial(ctx, s.addr, []string{"operator"}, 1)
	if err != nil {
		return checkResult{}, err
	}
	defer p.close()
	res := checkResult{Acked: len(recs)}
	bySession := map[string][]ackRecord{}
	for _, r := range recs {
		bySession[r.session] = append(bySession[r.session], r)
	}
	for _, sid := range slices.Sorted(func(yield func(string) bool) {
		for k := range bySession { //hubd:orderless sorted
			if !yield(k) {
				return
			}
		}
	}) {
		lg, err := readSessionLog(ctx, p.client(0), sid)
		if err != nil {
			return res, err
		}
		res.Gaps = append(res.Gaps, lg.gaps...)
		res.Reopened = append(res.Reopened, lg.reopened...)
		res.compare(bySession[sid], lg)
	}
	return res, nil
}

// heapMiB is the hub's Go heap in use after a collection, in MiB, read
// from its heap profile (/debug/pprof/heap, as the development mode's
// operator); 0 when it cannot be read.
func (s *soak) heapMiB(ctx context.Context) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.haddr+"/debug/pprof/heap?debug=1&gc=1", nil)
	if err != nil {
		return 0
	}
	req.Header.Set(agentsdk.AgentHeader, "operator")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n / (1 << 20)
		}
	}
	return 0
}

// measureEnded opens, talks in and closes --measure-ended sessions and
// prints the hub's memory before, after, and after a restart on that log.
func (s *soak) measureEnded(ctx context.Context) error {
	time.Sleep(time.Second) // let the fresh hub settle
	rss0, heap0 := s.rss(), s.heapMiB(ctx)
	fmt.Fprintf(s.out, "soak: empty hub: rss %.1f MiB, heap %.1f MiB\n", rss0, heap0)
	t0 := time.Now()
	err := forEach(s.c.ended, func(i int) error {
		id, err := s.open(ctx, i)
		if err != nil {
			return err
		}
		if _, err := s.pool.client(i).SendText(ctx, id, s.text); err != nil {
			return err
		}
		_, err = s.pool.client(i).CloseSession(ctx, id, "measured")
		return err
	})
	if err != nil {
		return fmt.Errorf("--measure-ended: %w", err)
	}
	took := time.Since(t0)
	rss1, heap1 := s.rss(), s.heapMiB(ctx)
	fmt.Fprintf(s.out, "soak: after %d sessions opened and closed (%v): rss %.1f MiB (%.2f×), heap %.1f MiB (%.2f×)\n",
		s.c.ended, took.Round(time.Second), rss1, rss1/rss0, heap1, heap1/heap0)
	s.stop() // gracefully: a killed badger reloads its unflushed memtables at start
	t1 := time.Now()
	if err := s.start(ctx); err != nil {
		return err
	}
	up := time.Since(t1)
	time.Sleep(time.Second)
	rss2, heap2 := s.rss(), s.heapMiB(ctx)
	fmt.Fprintf(s.out, "soak: restarted on that log in %v: rss %.1f MiB (%.2f×), heap %.1f MiB (%.2f×)\n",
		up.Round(time.Millisecond), rss2, rss2/rss0, heap2, heap2/heap0)
	return nil
}

// pad is n bytes of text.
func pad(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// freeLoopback returns n distinct free loopback addresses.
func freeLoopback(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are chosen, so they differ
		out = append(out, l.Addr().String())
	}
	return out, nil
}
