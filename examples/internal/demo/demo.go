package demo

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
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
	Name string
	// Handle serves the agent's turns; nil: it takes no turns (a person
	// who only answers questions, say).
	Handle agentsdk.Handler
	// Serve are extra options for its Serve (a view, ...).
	Serve []agentsdk.ServeOption
	// Run, when set, runs beside Handle once the session is open, with
	// the agent's client and the session: a person answering questions,
	// say. It returns nil when it is done (or when ctx ends); an error
	// ends the example.
	Run func(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session) error
}

// Scenario is an example: its agents, and how the first of them opens the
// session.
type Scenario struct {
	// Agents serve their turns; Agents[0] opens the session.
	Agents []Agent
	// Open opens the session as Agents[0], with labels (the run's, see
	// [Label]) among its own.
	Open func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error)
	// Flags, when set, defines the example's own flags; they are parsed
	// before any agent runs.
	Flags func(fs *flag.FlagSet)
	// Timeout is the default of --timeout (30s when 0).
	Timeout time.Duration
	// Format, when set, formats the transcript: the lines it returns for
	// an envelope ("" for none) are printed instead of each turn's Line.
	Format func(e *hubpb.Envelope, s *Sessions) string
	// Tree, when set, makes the transcript the session's whole call tree
	// (see [Tree]).
	Tree *Tree
	// Report, when set, prints after the session has ended and the agents
	// have stopped, before the "closed:" line (the call tree, the
	// usage, ...). c is the opener's client.
	Report func(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session, out io.Writer) error
}

// Tree is a transcript of a session's whole call tree, followed with
// [agentsdk.Client.FollowTree]: each line the scenario's Format returns
// (Event by default) is indented two spaces per call depth. The agents
// begin serving once the feed is watching, so it shows the envelopes of
// every session in the order the hub wrote them.
type Tree struct {
	// As is the agent whose client follows the tree ("": the opener). It
	// must be an operator or take part in every session of the tree (a
	// session it may not read is left out, an envelope it may not read
	// too). An agent not among the scenario's agents is dialled to watch
	// only: "operator" is an operator in development mode; with
	// --token-file, give it an operator's token.
	As string
	// Terse leaves out what descendants say to each other: of theirs only
	// questions, answers, delegations and results are shown.
	Terse bool
}

// Label is the label that marks the sessions of one run of an example:
// its value is the example's name and a random suffix ("pipeline-3f9a2c1e").
// An agent serves every session its name is invited to, whoever opened it:
// every agent of an example serves only the sessions of its run (the one
// the run opened, and those delegated from them), so that a session a
// person opened with an agent of the same name is left alone.
const Label = "example"

// runSessions are the sessions of one run of an example: the one it
// opened, labelled with the run, and those delegated from the sessions of
// the run (their opener chose their labels).
type runSessions struct {
	labels map[string]string // {Label: the run}
	mu     sync.Mutex
	ours   map[string]bool
}

func newRun(name string) *runSessions {
	return &runSessions{labels: map[string]string{Label: fmt.Sprintf("%s-%08x", name, rand.Uint32())}, ours: map[string]bool{}}
}

// serves is every agent's session filter. A session is delegated from one
// its delegating agent served: the parent is known before its child is
// asked about.
func (r *runSessions) serves(s *agentsdk.Session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := s.GetMeta()
	if m.GetLabels()[Label] == r.labels[Label] || r.ours[m.GetParentSessionId()] {
		r.ours[m.GetSessionId()] = true
		return true
	}
	return false
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
	agents := sc.Agents
	watcher := 0
	if sc.Tree != nil && sc.Tree.As != "" {
		watcher = slices.IndexFunc(agents, func(a Agent) bool { return a.Name == sc.Tree.As })
		if watcher < 0 {
			watcher = len(agents)
			agents = append(slices.Clip(agents), Agent{Name: sc.Tree.As})
		}
	}
	clients, err := dialAll(ctx, addr, agents, tokens, logf)
	for _, c := range clients {
		defer c.Close()
	}
	if err != nil {
		return err
	}
	return play(ctx, sc, newRun(name), agents, clients, clients[watcher], stdout)
}

// play serves every agent, opens the session and prints it until it ends.
// Without a tree, the agents serve from the start; with one, once the
// feed is watching.
func play(ctx context.Context, sc Scenario, r *runSessions, agents []Agent, clients []*agentsdk.Client, watcher *agentsdk.Client, out io.Writer) error {
	serving, stop := context.WithCancel(ctx)
	errs := make(chan error, 2*len(clients))
	var wg sync.WaitGroup
	goAgent := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && serving.Err() == nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				stop()
			}
		}()
	}
	serve := func() {
		for i, c := range clients {
			if h := agents[i].Handle; h != nil {
				opts := append(slices.Clip(agents[i].Serve), agentsdk.WithSessionFilter(r.serves))
				goAgent(agents[i].Name, func() error { return c.Serve(serving, h, opts...) })
			}
		}
	}
	runs := func(s *agentsdk.Session) {
		for i, c := range clients {
			if r := agents[i].Run; r != nil {
				goAgent(agents[i].Name, func() error { return r(serving, c, s) })
			}
		}
	}
	if sc.Tree == nil {
		serve()
	}
	var once sync.Once
	started := func(s *agentsdk.Session) {
		once.Do(func() {
			if sc.Tree != nil {
				serve()
			}
			runs(s)
		})
	}
	s, reason, err := transcript(serving, sc, maps.Clone(r.labels), clients[0], watcher, out, started)
	stop()
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err == nil && sc.Report != nil {
		err = sc.Report(ctx, clients[0], s, out)
	}
	if err == nil {
		fmt.Fprintln(out, "closed:", reason)
	}
	return err
}

// transcript opens the session and follows it to its end: its turns, the
// scenario's Format of its envelopes, or its whole tree. started is called
// once the feed watches, with the session.
func transcript(ctx context.Context, sc Scenario, labels map[string]string, opener, watcher *agentsdk.Client, out io.Writer, started func(*agentsdk.Session)) (*agentsdk.Session, string, error) {
	s, err := sc.Open(ctx, opener, labels)
	if err != nil {
		return nil, "", fmt.Errorf("opening the session: %w", err)
	}
	sessions := &Sessions{root: s.ID(),
		get:  func(id string) (*agentsdk.Session, error) { return watcher.GetSession(ctx, id) },
		tree: func() (*hubpb.TreeNode, error) { return watcher.Tree(ctx, s.ID()) }, known: map[string]*agentsdk.Session{s.ID(): s}}
	format := sc.Format
	if format == nil && sc.Tree != nil {
		format = Event
	}
	show := func(e *hubpb.Envelope) error {
		started(s)
		switch {
		case format != nil:
			text := format(e, sessions)
			if text == "" {
				return nil
			}
			indent := ""
			if sc.Tree != nil {
				indent = strings.Repeat("  ", int(e.GetCall().GetDepth()-s.GetMeta().GetDepth()))
			}
			for line := range strings.SplitSeq(text, "\n") {
				fmt.Fprintln(out, indent+line)
			}
		case agentsdk.IsTurn(e):
			fmt.Fprintln(out, Line(e))
		}
		return nil
	}
	var end *hubpb.Envelope
	if sc.Tree != nil {
		end, err = watcher.FollowTree(ctx, s.ID(), agentsdk.TreeOptions{Verbose: !sc.Tree.Terse}, show)
	} else {
		started(s)
		end, err = watcher.Follow(ctx, s.ID(), 1, show)
	}
	if err != nil {
		return s, "", fmt.Errorf("following session %s: %w", s.ID(), err)
	}
	return s, end.GetEnded().GetReason(), nil
}

// Line formats a turn: "[seq] speaker: text", with a packet's routing and
// context updates in brackets.
func Line(e *hubpb.Envelope) string {
	s := fmt.Sprintf("[%d] %s:", e.GetSeq(), e.GetFrom())
	if text := agentsdk.TextOf(e); text != "" {
		s += " " + text
	}
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
	case agentsdk.RoutingPassCaller:
		notes = append(notes, "pass_caller "+r.GetTarget())
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
