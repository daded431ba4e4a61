package load

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
	MaxDuration = 10 * time.Minute
	maxAgents   = 100_000
	MaxSessions = 100_000
	maxPayload  = 1_000_000 // the hub stores envelopes up to 1 MiB by default
)

// Config is the parsed command line.
type Config struct {
	Hub        string        // the hub's loopback address
	Agents     int           // agents in load mode
	Sessions   int           // workflow sessions in load mode
	Payload    int           // text bytes per envelope
	Duration   time.Duration // the measurement window (load) or how long to stay (idle)
	Warmup     time.Duration // turns taken before the window opens
	MaxTurns   int           // the graph's max_turns; 0: none
	Conns      int           // gRPC connections; 0: one per agent
	Verify     string        // append acknowledged sends to this file
	Check      string        // check this verify file against the hub's logs
	Operator   string        // the agent --check reads the logs as
	Idle       int           // idle mode: open this many idle subscriptions
	HubPID     int           // report this process's RSS; 0: do not
	HubHTTP    string        // the hub's HTTP address, for its /metrics in --idle mode; "": none
	JSON       bool          // print the report as JSON
	CPUProfile string        // write hubload's own CPU profile here

	Workload string // load mode: "turns" (steady turn-taking), "sessions" or "delegation"
	Conc     int    // sessions workload: sessions in flight
	// Rate paces the turns workload: at most this many sends a second in
	// all, each session's turns spaced evenly (0: as fast as the hub
	// answers). Latency is measured from each send, not from its slot.
	Rate      int
	Transport string // how agents send: agentsdk.TransportStream or TransportUnary
	Terse     bool   // agents subscribe terse (their turns and ends only)
	Version   bool   // print the build's version and commit, run nothing
}

// Workloads of the load mode.
const (
	WorkloadTurns    = "turns"
	WorkloadSessions = "sessions"
	// WorkloadDelegation measures a delegation round trip beside a turn
	// (delegation.go).
	WorkloadDelegation = "delegation"
	// defaultSessionsRun is --sessions for the sessions workload.
	defaultSessionsRun = 200
)

// Parse parses and validates args; every failure is a usage error.
func Parse(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("hubload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Hub, "hub", "127.0.0.1:7420", "the hub's gRPC address (loopback only); for a cluster, every node's, comma-separated (agents are spread over them)")
	fs.IntVar(&c.Agents, "agents", 16, "total agents")
	fs.IntVar(&c.Sessions, "sessions", 0, "workflow sessions, each of at least 2 agents (default agents/2)")
	fs.IntVar(&c.Payload, "payload", 256, "text `bytes` per envelope")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to measure (at most 10m); in --idle mode, how long to stay")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "how long to send before measuring")
	fs.IntVar(&c.MaxTurns, "max-turns", 0, "close each session after this many turns (0: no cap)")
	fs.IntVar(&c.Conns, "conns", 0, "gRPC connections shared by the agents (0: one per agent)")
	fs.StringVar(&c.Verify, "verify", "", "append every acknowledged send to this `file` as \"SESSION SEQ CLIENT_MSG_ID\"")
	fs.StringVar(&c.Check, "check", "", "check that every send listed in this `file` (see --verify) is in the hub's logs")
	fs.StringVar(&c.Operator, "operator", "operator", "the agent with operator rights that --check reads the logs as")
	fs.IntVar(&c.Idle, "idle", 0, "open this many idle subscriptions and wait (memory measurements)")
	fs.IntVar(&c.HubPID, "hub-pid", 0, "report this hub process's RSS from /proc")
	fs.StringVar(&c.HubHTTP, "hub-http", "", "the hub's HTTP `address` (loopback), for its /metrics: in idle mode its goroutines, heap and stacks per subscription, after a GC forced through /debug/pprof as --operator; in the workloads what its log did in the window (commits, appends per commit, mean fsync)")
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write hubload's own CPU profile to this `file` (load mode)")
	fs.StringVar(&c.Workload, "workload", WorkloadTurns, "`turns` (sessions taking turns steadily), sessions (three-agent sessions, open to close, served by agentsdk.Serve) or delegation (a delegation round trip beside a turn, in --sessions sessions, default 1)")
	fs.IntVar(&c.Conc, "conc", 1, "sessions workload: sessions in flight")
	fs.IntVar(&c.Rate, "rate", 0, "turns workload: at most this many `sends` a second in all, each session's turns spaced evenly (0: as fast as the hub answers); below the hub's saturation, latency shows what other work in the hub costs the send path")
	fs.StringVar(&c.Transport, "transport", agentsdk.TransportStream, "how agents send and are told: `stream` (one agent stream per agent, agentsdk's default) or unary (a Send call per envelope and a Subscribe stream)")
	fs.BoolVar(&c.Terse, "terse", true, "agents subscribe terse: their streams carry their turns and ends, not every envelope of their sessions (--terse=false: everything, as with an observer)")
	fs.BoolVar(&c.Version, "version", false, "print the version, the commit and the Go version hubload was built with, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, exitcode.New(0, err)
		}
		return c, exitcode.Usage("%v", err)
	}
	if fs.NArg() != 0 {
		return c, exitcode.Usage("unexpected argument %q", fs.Arg(0))
	}
	if c.Version {
		return c, nil
	}
	switch {
	case c.Sessions != 0:
	case c.Workload == WorkloadSessions:
		c.Sessions = defaultSessionsRun
	case c.Workload == WorkloadDelegation:
		c.Sessions = 1
	default:
		c.Sessions = max(c.Agents/2, 1)
	}
	return c, c.Validate()
}

// Validate checks the bounds and the combinations of the flags.
func (c *Config) Validate() error {
	for _, addr := range strings.Split(c.Hub, ",") {
		if err := checkLoopback("--hub", addr); err != nil {
			return err
		}
	}
	if c.HubHTTP != "" {
		if err := checkLoopback("--hub-http", c.HubHTTP); err != nil {
			return err
		}
		if c.Check != "" {
			return exitcode.Usage("--hub-http is for --idle and the load workloads, not --check")
		}
	}
	modes := 0
	for _, on := range []bool{c.Check != "", c.Idle != 0, c.Verify != ""} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return exitcode.Usage("--check, --idle and --verify exclude each other")
	case c.Agents < 2 || c.Agents > maxAgents:
		return exitcode.Usage("--agents %d: want 2 to %d", c.Agents, maxAgents)
	case c.Sessions < 1 || c.Sessions > MaxSessions:
		return exitcode.Usage("--sessions %d: want 1 to %d", c.Sessions, MaxSessions)
	case c.Payload < 1 || c.Payload > maxPayload:
		return exitcode.Usage("--payload %d: want 1 to %d bytes", c.Payload, maxPayload)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return exitcode.Usage("--duration %v: want more than 0 and at most %v", c.Duration, MaxDuration)
	case c.Warmup < 0 || c.Warmup > MaxDuration:
		return exitcode.Usage("--warmup %v: want 0 to %v", c.Warmup, MaxDuration)
	case c.Workload == WorkloadDelegation && (modes > 0 || c.Conns != 0):
		return exitcode.Usage("--workload delegation excludes --check, --idle, --verify and --conns")
	case c.MaxTurns < 0:
		return exitcode.Usage("--max-turns %d: want 0 (no cap) or more", c.MaxTurns)
	case c.Conns < 0:
		return exitcode.Usage("--conns %d: want 0 (one per agent) or more", c.Conns)
	case c.Idle < 0 || c.Idle > maxAgents:
		return exitcode.Usage("--idle %d: want 0 to %d", c.Idle, maxAgents)
	case c.HubPID < 0:
		return exitcode.Usage("--hub-pid %d: want a process id", c.HubPID)
	case c.Workload != WorkloadTurns && c.Workload != WorkloadSessions && c.Workload != WorkloadDelegation:
		return exitcode.Usage("--workload %q: want %s, %s or %s", c.Workload, WorkloadTurns, WorkloadSessions, WorkloadDelegation)
	case c.Transport != agentsdk.TransportStream && c.Transport != agentsdk.TransportUnary:
		return exitcode.Usage("--transport %q: want %s or %s", c.Transport, agentsdk.TransportStream, agentsdk.TransportUnary)
	case c.Conc < 1 || c.Conc > MaxSessions:
		return exitcode.Usage("--conc %d: want 1 to %d", c.Conc, MaxSessions)
	case c.Rate < 0 || (c.Rate > 0 && c.Workload != WorkloadTurns):
		return exitcode.Usage("--rate %d: want 0 (no pacing) or more, with --workload turns", c.Rate)
	case c.Workload == WorkloadSessions && (modes > 0 || c.MaxTurns != 0):
		return exitcode.Usage("--workload sessions excludes --check, --idle, --verify and --max-turns")
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

// ConnsFor is how many connections n agents share.
func (c *Config) ConnsFor(n int) int {
	if c.Conns == 0 || c.Conns > n {
		return n
	}
	return c.Conns
}
