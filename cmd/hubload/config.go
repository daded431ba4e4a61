package main

import (
	"errors"
	"flag"
	"io"
	"net"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/exitcode"
)

// Limits of the command line: hubload is a bounded tool.
const (
	maxDuration = 10 * time.Minute
	maxAgents   = 100_000
	maxSessions = 100_000
	maxPayload  = 1_000_000 // the hub stores envelopes up to 1 MiB by default
)

// config is the parsed command line.
type config struct {
	hub      string        // the hub's loopback address
	agents   int           // agents in load mode
	sessions int           // workflow sessions in load mode
	payload  int           // text bytes per envelope
	duration time.Duration // the measurement window (load) or how long to stay (idle)
	warmup   time.Duration // turns taken before the window opens
	maxTurns int           // the graph's max_turns; 0: none
	conns    int           // gRPC connections; 0: one per agent
	verify   string        // append acknowledged sends to this file
	check    string        // check this verify file against the hub's logs
	operator string        // the agent --check reads the logs as
	idle     int           // idle mode: open this many idle subscriptions
	hubPID   int           // report this process's RSS; 0: do not
	hubHTTP  string        // the hub's HTTP address, for its /metrics in --idle mode; "": none
	json     bool          // print the report as JSON
	cpuProf  string        // write hubload's own CPU profile here

	workload    string // load mode: "turns" (steady turn-taking), "sessions" or "delegation"
	conc        int    // sessions workload: sessions in flight
	baseline    bool   // also measure the bare floor (internal/baseline) in the run
	baselineDir string // the parent directory of the baseline's log
	floorApart  bool   // run the floors' server in a process of its own
	table       bool   // run every row of issue 10's table, each with its floors
	transport   string // how agents send: agentsdk.TransportStream or TransportUnary
	terse       bool   // agents subscribe terse (their turns and ends only)
	version     bool   // print the build's version and commit, run nothing
}

// Workloads of the load mode.
const (
	workloadTurns    = "turns"
	workloadSessions = "sessions"
	// workloadDelegation measures a delegation round trip beside a turn
	// (delegation.go).
	workloadDelegation = "delegation"
	// defaultSessionsRun is --sessions for the sessions workload.
	defaultSessionsRun = 200
)

// parseConfig parses and validates args; every failure is a usage error.
func parseConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("hubload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.hub, "hub", "127.0.0.1:7420", "the hub's gRPC address (loopback only); for a cluster, every node's, comma-separated (agents are spread over them)")
	fs.IntVar(&c.agents, "agents", 16, "total agents")
	fs.IntVar(&c.sessions, "sessions", 0, "workflow sessions, each of at least 2 agents (default agents/2)")
	fs.IntVar(&c.payload, "payload", 256, "text `bytes` per envelope")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure (at most 10m); in --idle mode, how long to stay")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "how long to send before measuring")
	fs.IntVar(&c.maxTurns, "max-turns", 0, "close each session after this many turns (0: no cap)")
	fs.IntVar(&c.conns, "conns", 0, "gRPC connections shared by the agents (0: one per agent)")
	fs.StringVar(&c.verify, "verify", "", "append every acknowledged send to this `file` as \"SESSION SEQ CLIENT_MSG_ID\"")
	fs.StringVar(&c.check, "check", "", "check that every send listed in this `file` (see --verify) is in the hub's logs")
	fs.StringVar(&c.operator, "operator", "operator", "the agent with operator rights that --check reads the logs as")
	fs.IntVar(&c.idle, "idle", 0, "open this many idle subscriptions and wait (memory measurements)")
	fs.IntVar(&c.hubPID, "hub-pid", 0, "report this hub process's RSS from /proc")
	fs.StringVar(&c.hubHTTP, "hub-http", "", "the hub's HTTP `address` (loopback), for its /metrics: in idle mode its goroutines, heap and stacks per subscription, after a GC forced through /debug/pprof as --operator; in the workloads what its log did in the window (commits, appends per commit, mean fsync)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
	fs.StringVar(&c.cpuProf, "cpuprofile", "", "write hubload's own CPU profile to this `file` (load mode)")
	fs.StringVar(&c.workload, "workload", workloadTurns, "`turns` (sessions taking turns steadily), sessions (three-agent sessions, open to close, served by agentsdk.Serve) or delegation (a delegation round trip beside a turn, in --sessions sessions, default 1)")
	fs.IntVar(&c.conc, "conc", 1, "sessions workload: sessions in flight")
	fs.BoolVar(&c.baseline, "baseline", false, "also measure, in this run, the floor: gRPC unary → wal group commit (sync) → ack at the same concurrency, and print ratios")
	fs.StringVar(&c.transport, "transport", agentsdk.TransportStream, "how agents send and are told: `stream` (one agent stream per agent, agentsdk's default) or unary (a Send call per envelope and a Subscribe stream)")
	fs.BoolVar(&c.terse, "terse", true, "agents subscribe terse: their streams carry their turns and ends, not every envelope of their sessions (--terse=false: everything, as with an observer)")
	fs.BoolVar(&c.floorApart, "floor-apart", false, "with --baseline: serve the floors from a process of their own (hubload run again), beside this one's clients as hubd is beside its agents, rather than from this process")
	fs.BoolVar(&c.table, "table", false, "run every row of issue 10's targets against the hub, each with its floors in the same minute (--baseline implied; --duration per run), and print them as a table of ratios and verdicts")
	fs.StringVar(&c.baselineDir, "baseline-dir", "", "the `dir` under which the baseline's log is made (default: the system's temporary directory; use the hub's disk)")
	fs.BoolVar(&c.version, "version", false, "print the version, the commit and the Go version hubload was built with, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, exitcode.New(0, err)
		}
		return c, exitcode.Usage("%v", err)
	}
	if fs.NArg() != 0 {
		return c, exitcode.Usage("unexpected argument %q", fs.Arg(0))
	}
	if c.version {
		return c, nil
	}
	if c.table {
		// The table sets each run's workload and its size itself.
		var set []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "agents", "sessions", "conc", "workload", "max-turns", "conns", "verify", "check", "idle", "cpuprofile":
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return c, exitcode.Usage("--table sets each run itself: it excludes %s", strings.Join(set, ", "))
		}
		c.baseline = true
	}
	switch {
	case c.sessions != 0:
	case c.workload == workloadSessions:
		c.sessions = defaultSessionsRun
	case c.workload == workloadDelegation:
		c.sessions = 1
	default:
		c.sessions = max(c.agents/2, 1)
	}
	return c, c.validate()
}

// validate checks the bounds and the combinations of the flags.
func (c *config) validate() error {
	for _, addr := range strings.Split(c.hub, ",") {
		if err := checkLoopback("--hub", addr); err != nil {
			return err
		}
	}
	if c.hubHTTP != "" {
		if err := checkLoopback("--hub-http", c.hubHTTP); err != nil {
			return err
		}
		if c.check != "" {
			return exitcode.Usage("--hub-http is for --idle and the load workloads, not --check")
		}
	}
	modes := 0
	for _, on := range []bool{c.check != "", c.idle != 0, c.verify != ""} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return exitcode.Usage("--check, --idle and --verify exclude each other")
	case c.agents < 2 || c.agents > maxAgents:
		return exitcode.Usage("--agents %d: want 2 to %d", c.agents, maxAgents)
	case c.sessions < 1 || c.sessions > maxSessions:
		return exitcode.Usage("--sessions %d: want 1 to %d", c.sessions, maxSessions)
	case c.payload < 1 || c.payload > maxPayload:
		return exitcode.Usage("--payload %d: want 1 to %d bytes", c.payload, maxPayload)
	case c.duration <= 0 || c.duration > maxDuration:
		return exitcode.Usage("--duration %v: want more than 0 and at most %v", c.duration, maxDuration)
	case c.warmup < 0 || c.warmup > maxDuration:
		return exitcode.Usage("--warmup %v: want 0 to %v", c.warmup, maxDuration)
	case c.workload == workloadDelegation && (modes > 0 || c.conns != 0 || c.baseline):
		return exitcode.Usage("--workload delegation excludes --check, --idle, --verify, --conns and --baseline")
	case c.maxTurns < 0:
		return exitcode.Usage("--max-turns %d: want 0 (no cap) or more", c.maxTurns)
	case c.conns < 0:
		return exitcode.Usage("--conns %d: want 0 (one per agent) or more", c.conns)
	case c.idle < 0 || c.idle > maxAgents:
		return exitcode.Usage("--idle %d: want 0 to %d", c.idle, maxAgents)
	case c.hubPID < 0:
		return exitcode.Usage("--hub-pid %d: want a process id", c.hubPID)
	case c.workload != workloadTurns && c.workload != workloadSessions && c.workload != workloadDelegation:
		return exitcode.Usage("--workload %q: want %s, %s or %s", c.workload, workloadTurns, workloadSessions, workloadDelegation)
	case c.transport != agentsdk.TransportStream && c.transport != agentsdk.TransportUnary:
		return exitcode.Usage("--transport %q: want %s or %s", c.transport, agentsdk.TransportStream, agentsdk.TransportUnary)
	case c.conc < 1 || c.conc > maxSessions:
		return exitcode.Usage("--conc %d: want 1 to %d", c.conc, maxSessions)
	case c.workload == workloadSessions && (modes > 0 || c.maxTurns != 0):
		return exitcode.Usage("--workload sessions excludes --check, --idle, --verify and --max-turns")
	case c.floorApart && !c.baseline:
		return exitcode.Usage("--floor-apart is for --baseline")
	case c.baseline && modes > 0:
		return exitcode.Usage("--baseline is for the load mode: it excludes --check, --idle and --verify")
	}
	return nil
}

// checkLoopback accepts, for flag, host:port whose host is "localhost" or a loopback
// IP literal; other names are not resolved but refused.
func checkLoopback(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return exitcode.Usage("%s %q: want host:port: %v", flag, addr, err)
	}
	if port == "" {
		return exitcode.Usage("%s %q: no port", flag, addr)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return exitcode.Usage("%s %q: hubload only drives a hub on a loopback address (127.0.0.1, ::1, localhost)", flag, addr)
}

// connsFor is how many connections n agents share.
func (c *config) connsFor(n int) int {
	if c.conns == 0 || c.conns > n {
		return n
	}
	return c.conns
}
