package demo

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// Agent is one scripted agent of an example.
type Agent struct {
	Name   string
	Handle agentsdk.Handler
	// Serve are extra options for its Serve (a view, ...).
	Serve []agentsdk.ServeOption
}

// Scenario is an example: its agents, and how the first of them opens the
// session.
type Scenario struct {
	// Agents serve their turns; Agents[0] opens the session.
	Agents []Agent
	// Open opens the session as Agents[0].
	Open func(ctx context.Context, c *agentsdk.Client) (*agentsdk.Session, error)
	// Flags, when set, defines the example's own flags; they are parsed
	// before any agent runs.
	Flags func(fs *flag.FlagSet)
	// Timeout is the default of --timeout (30s when 0).
	Timeout time.Duration
}

// config is what the flags say.
type config struct {
	hub       string
	tokenFile string
	timeout   time.Duration
	verbose   bool
}

func parse(name string, args []string, stderr io.Writer, sc Scenario) (config, error) {
	var c config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.hub, "hub", "", "the hub's host:port (default: start one in this process)")
	fs.StringVar(&c.tokenFile, "token-file", "", `agents' tokens, one "name token" a line (default: development mode names)`)
	timeout := sc.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	fs.DurationVar(&c.timeout, "timeout", timeout, "give up after this long")
	if sc.Flags != nil {
		sc.Flags(fs)
	}
	fs.BoolVar(&c.verbose, "v", false, "log the SDK's diagnostics to stderr")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

// Main runs an example's run function with the process's arguments and
// streams, and exits non-zero on error.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}

// Run runs a scenario: against the hub of --hub, or a fresh in-process
// one; it prints each turn as "[seq] speaker: text" and then
// "closed: <reason>" to stdout.
func Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer, sc Scenario) error {
	cfg, err := parse(name, args, stderr, sc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	addr := cfg.hub
	if addr == "" {
		h, err := hubtest.Start(ctx, hubtest.Options{})
		if err != nil {
			return fmt.Errorf("starting an in-process hub: %w", err)
		}
		defer h.Close()
		addr = h.Addr()
	}
	tokens, err := readTokens(cfg.tokenFile)
	if err != nil {
		return err
	}
	logf := func(string, ...any) {}
	if cfg.verbose {
		var mu sync.Mutex
		logf = func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	clients, err := dialAll(ctx, addr, sc.Agents, tokens, logf)
	for _, c := range clients {
		defer c.Close()
	}
	if err != nil {
		return err
	}
	return play(ctx, sc, clients, stdout)
}

// play serves every agent, opens the session and prints it until it ends.
func play(ctx context.Context, sc Scenario, clients []*agentsdk.Client, out io.Writer) error {
	serving, stop := context.WithCancel(ctx)
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Serve(serving, sc.Agents[i].Handle, sc.Agents[i].Serve...); err != nil {
				errs <- fmt.Errorf("%s: %w", sc.Agents[i].Name, err)
				stop()
			}
		}()
	}
	reason, err := transcript(serving, sc, clients[0], out)
	stop()
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err == nil {
		fmt.Fprintln(out, "closed:", reason)
	}
	return err
}

// transcript opens the session and follows it to its end.
func transcript(ctx context.Context, sc Scenario, opener *agentsdk.Client, out io.Writer) (string, error) {
	s, err := sc.Open(ctx, opener)
	if err != nil {
		return "", fmt.Errorf("opening the session: %w", err)
	}
	end, err := opener.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		if agentsdk.IsTurn(e) {
			fmt.Fprintln(out, Line(e))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("following session %s: %w", s.ID(), err)
	}
	return end.GetEnded().GetReason(), nil
}

// Line formats a turn: "[seq] speaker: text", with a packet's routing and
// context updates in brackets.
func Line(e *hubpb.Envelope) string {
	s := fmt.Sprintf("[%d] %s: %s", e.GetSeq(), e.GetFrom(), agentsdk.TextOf(e))
	p := e.GetPacket()
	if p == nil {
		return s
	}
	var notes []string
	switch r := p.GetRouting(); r.GetKind() {
	case agentsdk.RoutingHandoff:
		notes = append(notes, strings.TrimSpace("handoff "+r.GetTool()+" "+r.GetTarget()))
	case agentsdk.RoutingFinish:
		notes = append(notes, "finish "+r.GetReason())
	case agentsdk.RoutingEscalate:
		notes = append(notes, "escalate")
	}
	set := p.GetContextUpdates().GetSet()
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v, err := hubpb.MarshalJSON(set[k])
		if err != nil {
			v = []byte("?")
		}
		notes = append(notes, fmt.Sprintf("set %s=%s", k, v))
	}
	for _, k := range p.GetContextUpdates().GetDelete() {
		notes = append(notes, "delete "+k)
	}
	if len(notes) > 0 {
		s += " [" + strings.Join(notes, "; ") + "]"
	}
	return s
}

func dialAll(ctx context.Context, addr string, agents []Agent, tokens map[string]string, logf func(string, ...any)) ([]*agentsdk.Client, error) {
	var clients []*agentsdk.Client
	for _, a := range agents {
		opts := agentsdk.Options{Name: a.Name, Logf: logf}
		if tokens != nil {
			if opts.Token = tokens[a.Name]; opts.Token == "" {
				return clients, fmt.Errorf("the token file has no token for %q", a.Name)
			}
		}
		c, err := agentsdk.Dial(ctx, addr, opts)
		if err != nil {
			return clients, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// readTokens reads "name token" lines (the hub's tokens file works too);
// no file means development mode (nil).
func readTokens(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tokens := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if fields := strings.Fields(line); len(fields) >= 2 {
			tokens[fields[0]] = fields[1]
		}
	}
	return tokens, sc.Err()
}
