package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubhttp"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/telemetry"
	"github.com/hubd/hubd/wal"
)

// DefaultListen is where hubd serves unless told otherwise.
const DefaultListen = "127.0.0.1:7420"

type serveFlags struct {
	listen, data, tokens, tlsCert, tlsKey, clientCA, logFormat, logLevel, operators string
	http, otlpEndpoint, onDamage, minFreeDisk, metricsListen, workflows, a2a        string
	httpSet                                                                         bool // --http was given
	fsync, insecureTokens                                                           bool
	inviteTimeout, heartbeat, drainTimeout                                          time.Duration
	maxEnvelope, maxOpen, subscriberBuffer, maxDepth                                int
	cluster                                                                         clusterFlags
	streamsPerConn, streamsPerAgent, subscriberBytes                                int
	treeSessions, childrenPerTurn, agentBytes, totalBytes, maxRequest               int
	deltasPerSecond, deltaBytesPerTurn                                              int
	autoAcceptFrom                                                                  string
	retention                                                                       retentionFlags
}

// register defines serve's flags, each also set by its variable (env.go)
// and returns their names.
func (f *serveFlags) register(fs *flag.FlagSet) []string {
	return envFlags(fs, f.define)
}

// define defines serve's flags.
func (f *serveFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", DefaultListen, "gRPC `address` to serve (host:port)")
	fs.StringVar(&f.data, "data", "./hubd-data", "`directory` of the write-ahead log (created if missing)")
	fs.StringVar(&f.tokens, "tokens", "", "tokens `file`: one \"agent token [operator]\" per line; without it only a loopback address is served, in development mode")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "server certificate (PEM `file`)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "server key (PEM `file`)")
	fs.BoolVar(&f.insecureTokens, "insecure-tokens", false, "serve --tokens without TLS on a non-loopback address (bearer tokens then cross the network in cleartext: a trusted network only)")
	fs.StringVar(&f.clientCA, "client-ca", "", "require client certificates signed by this CA (PEM `file`); a certificate's common name is its agent")
	fs.StringVar(&f.operators, "operators", "", "comma-separated `agents` with operator rights when they authenticate by certificate or in development mode (default operator in development mode)")
	fs.StringVar(&f.logFormat, "log-format", "auto", "log `format`: json, console, or auto (console on a terminal, else json)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug (adds every envelope and rejection), info, warn, error")
	fs.BoolVar(&f.fsync, "fsync", true, "fsync the log before acknowledging; false loses acknowledged envelopes on a crash (benchmarks only)")
	fs.DurationVar(&f.inviteTimeout, "invite-timeout", 5*time.Minute, "default time invitees have to acknowledge")
	fs.IntVar(&f.maxEnvelope, "max-envelope-bytes", 1<<20, "largest envelope stored, in bytes")
	fs.IntVar(&f.maxRequest, "max-request-bytes", 0, "largest request read, gRPC message or HTTP body, in bytes (0: 4 × --max-envelope-bytes, at least 4 MiB, + 64 KiB)")
	fs.IntVar(&f.maxOpen, "max-open-per-agent", hub.DefaultMaxOpenPerAgent, "most sessions pending or open that one agent created, children it delegated included (0: no limit)")
	fs.IntVar(&f.treeSessions, "max-tree-sessions", hub.DefaultMaxTreeSessions, "most sessions pending or open in one delegation tree, its root included (0: no limit)")
	fs.IntVar(&f.childrenPerTurn, "max-children-per-turn", hub.DefaultMaxChildrenPerTurn, "most children delegations open in one session on one turn, background ones included (0: no limit)")
	fs.IntVar(&f.deltasPerSecond, "max-deltas-per-second", hub.DefaultMaxDeltasPerSecond, "most deltas (pieces of a reply being written, forwarded and never logged) one session's writer sends in a second; past it a delta is refused with LIMIT_REACHED (0: no limit)")
	fs.IntVar(&f.deltaBytesPerTurn, "max-delta-bytes-per-turn", hub.DefaultMaxDeltaBytesPerTurn, "most bytes of delta text forwarded on one turn of a session; past it a delta is refused with LIMIT_REACHED (0: no limit)")
	fs.IntVar(&f.subscriberBuffer, "subscriber-buffer", 4096, "deliveries buffered per subscriber before it is cut off")
	fs.IntVar(&f.subscriberBytes, "subscriber-buffer-bytes", feed.DefaultSubscriberBufferBytes, "bytes of envelopes buffered per subscriber before it is cut off")
	fs.IntVar(&f.agentBytes, "agent-buffer-bytes", feed.DefaultAgentBufferBytes, "bytes of envelopes buffered unread over all of one agent's streams (every connection) before the stream a delivery is for is cut off (0: no bound)")
	fs.IntVar(&f.totalBytes, "total-buffer-bytes", feed.DefaultTotalBufferBytes, "bytes of envelopes buffered unread over every stream of the hub before the stream a delivery is for is cut off (0: no bound)")
	fs.IntVar(&f.streamsPerConn, "max-streams-per-conn", hubgrpc.DefaultMaxStreamsPerConn, "most AgentStream, Subscribe and Watch streams one connection holds at once")
	fs.IntVar(&f.streamsPerAgent, "max-streams-per-agent", 256, "most AgentStream, Subscribe and Watch streams one agent holds at once over all its connections")
	fs.StringVar(&f.autoAcceptFrom, "auto-accept-from", "", "consent `file`: lines \"invitee creator...\" (\"*\": anyone) saying who may add an agent to a session without its acknowledgement (auto_accept); with --tokens or --client-ca, an auto_accept not listed there is an invite the agent must acknowledge (development mode lets anyone)")
	fs.IntVar(&f.maxDepth, "max-depth", 8, "deepest a child session may be (delegation)")
	fs.StringVar(&f.onDamage, "on-damage", "refuse", "when acknowledged records are found missing at start: \"refuse\" to start, or \"quarantine\" the sessions affected and serve the rest (see docs/OPERATIONS.md)")
	fs.StringVar(&f.minFreeDisk, "min-free-disk", "256MiB", "free space kept on the data directory's disk; below it sends are refused with DISK_FULL until space is freed (`size`: 512MiB, 2GB, 0 for none)")
	fs.StringVar(&f.a2a, "a2a", "", "the A2A `file`: hubd agents served to outside A2A clients (agent cards and the JSON-RPC binding on the HTTP address) and outside A2A agents that take part in sessions (see docs/INTEROP.md)")
	fs.StringVar(&f.workflows, "workflows", "", "a `directory` of transition graphs (NAME.json) that MCP hosts open by name at /mcp (open_session's \"workflow\")")
	fs.StringVar(&f.http, "http", "", "HTTP `address` of the web view, the JSON API, event streams, /metrics and /debug/pprof (host:port; \"off\" for none); default in development mode: the --listen host and the next port (127.0.0.1:7421), otherwise none")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM or SIGINT, how long to let sends in flight finish and the log close before exiting anyway (non-zero, \"log not closed cleanly\"; the next start replays the synced journal, so nothing acknowledged is lost)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "`address` (host:port) serving GET /metrics alone, with no credentials, for a Prometheus scraper; on the --http address /metrics needs no credentials only when that address is loopback, and an operator's otherwise")
	fs.DurationVar(&f.heartbeat, "sse-heartbeat", hubhttp.DefaultHeartbeat, "interval of the comment lines that keep idle event streams open through proxies")
	f.retention.define(fs)
	f.cluster.register(fs)
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "export traces to this OTLP `URL` (like OTEL_EXPORTER_OTLP_ENDPOINT, which is read when this is unset; OTEL_EXPORTER_OTLP_PROTOCOL picks grpc or http/protobuf); without either, no traces are exported")
}

// runServe runs the hub until ctx is done, then shuts it down gracefully.
// It logs to stderr; stdout has only --help.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("serve", "[flags]", "Run the hub until interrupted (SIGINT or SIGTERM), then stop gracefully.", stdout)
	var f serveFlags
	env := f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("serve: unexpected argument %q", fs.Arg(0))
	}
	if err := fromEnv(fs, env); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) { f.httpSet = f.httpSet || fl.Name == "http" })
	lg, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := f.config(lg)
	if err != nil {
		return err
	}
	tracing, err := telemetry.Setup(ctx, telemetry.Config{Endpoint: f.otlpEndpoint, ServiceVersion: moduleVersion()})
	if err != nil {
		return exitcode.Usage("serve: %v", err)
	}
	defer shutdownTracing(tracing, lg)
	cfg.Tracer = tracing.Provider
	if tracing.Exporting() {
		lg.Info().Str("otlp", tracing.Endpoint).Msg("exporting traces")
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return listenError(err)
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Done():
		lg.Error().Err(err).Msg("gRPC server stopped")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// listenError names the flag of an address serve could not listen on
// ("serve: --listen 127.0.0.1:7420 is in use (another hubd?): bind:
// address already in use"); other errors are returned as they are.
func listenError(err error) error {
	var le *server.ListenError
	if !errors.As(err, &le) {
		return err
	}
	flagName := map[string]string{"grpc": "--listen", "http": "--http"}[le.Side]
	cause := le.Err
	var op *net.OpError
	if errors.As(cause, &op) {
		cause = op.Err // without "listen tcp ADDR: ", which the message says
	}
	if errors.Is(le.Err, syscall.EADDRINUSE) {
		return fmt.Errorf("serve: %s %s is in use (another hubd?): %w", flagName, le.Addr, cause)
	}
	return fmt.Errorf("serve: %s %s: %w", flagName, le.Addr, cause)
}

func (f *serveFlags) config(lg zerolog.Logger) (server.Config, error) {
	cfg := server.Config{Listen: f.listen, DataDir: f.data, NoSync: !f.fsync, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
		ClientCA: f.clientCA, Operators: splitNames(f.operators), Logger: lg}
	cfg.Hub.InviteTimeout, cfg.Hub.MaxEnvelopeBytes = f.inviteTimeout, f.maxEnvelope
	cfg.Feed.SubscriberBuffer, cfg.Hub.MaxDepth = f.subscriberBuffer, f.maxDepth
	if err := f.fanOut(&cfg.Hub, &cfg.Feed); err != nil {
		return cfg, err
	}
	if f.maxEnvelope < 1 {
		return cfg, exitcode.Usage("serve: --max-envelope-bytes %d: want at least 1", f.maxEnvelope)
	}
	if f.maxRequest < 0 || (f.maxRequest > 0 && f.maxRequest < f.maxEnvelope) || f.maxRequest > 1<<30 {
		return cfg, exitcode.Usage("serve: --max-request-bytes %d: want 0 (the default) or from --max-envelope-bytes (%d) to 1 GiB", f.maxRequest, f.maxEnvelope)
	}
	cfg.MaxMsgBytes = f.maxRequest
	if _, err := server.LogBatchBytes(cfg.Hub); err != nil {
		return cfg, exitcode.Usage("serve: --max-envelope-bytes %d: %v", f.maxEnvelope, err)
	}
	cfg.Feed.SubscriberBufferBytes, cfg.Feed.MaxStreamsPerAgent, cfg.MaxStreamsPerConn = f.subscriberBytes, f.streamsPerAgent, f.streamsPerConn
	if f.subscriberBytes < 1 || f.streamsPerAgent < 1 || f.streamsPerConn < 1 {
		return cfg, exitcode.Usage("serve: --subscriber-buffer-bytes, --max-streams-per-agent and --max-streams-per-conn must be at least 1")
	}
	if f.maxDepth < 1 {
		return cfg, exitcode.Usage("serve: --max-depth %d: want at least 1", f.maxDepth)
	}
	if f.drainTimeout <= 0 {
		return cfg, exitcode.Usage("serve: --drain-timeout %v: want a positive duration", f.drainTimeout)
	}
	if f.heartbeat <= 0 {
		return cfg, exitcode.Usage("serve: --sse-heartbeat %v: want a positive duration", f.heartbeat)
	}
	cfg.Heartbeat = f.heartbeat
	wf, err := loadWorkflows(f.workflows)
	if err != nil {
		return cfg, exitcode.Usage("serve: --workflows: %v", err)
	}
	cfg.Workflows = wf
	if cfg.A2A, err = loadA2A(f.a2a); err != nil {
		return cfg, exitcode.Usage("serve: --a2a: %v", err)
	}
	switch f.onDamage {
	case "refuse":
		cfg.OnDamage = wal.RefuseDamaged
	case "quarantine":
		cfg.OnDamage = wal.MarkDamaged
	default:
		return cfg, exitcode.Usage("serve: --on-damage %q: want refuse or quarantine", f.onDamage)
	}
	free, err := parseSize(f.minFreeDisk)
	if err != nil {
		return cfg, exitcode.Usage("serve: --min-free-disk %q: %v", f.minFreeDisk, err)
	}
	cfg.MinFreeBytes = free
	if free == 0 {
		cfg.MinFreeBytes = -1 // the flag's 0 is "none"; wal's 0 is its default
	}
	cfg.HTTP, cfg.HTTPAnyPort, cfg.MetricsListen = f.httpAddr(), !f.httpSet, f.metricsListen
	if err := f.checkSafety(); err != nil {
		return cfg, err
	}
	f.cluster.listen = f.listen
	if err := f.cluster.checkBus(f.tokens != "" || f.clientCA != ""); err != nil {
		return cfg, err
	}
	if cfg.Cluster, err = f.cluster.config(f.data); err != nil {
		return cfg, err
	}
	f.cluster.warn(lg)
	if f.tokens != "" {
		file, err := openTokens(f.tokens)
		if err != nil {
			return cfg, err
		}
		defer file.Close()
		if cfg.Tokens, err = hubgrpc.ParseTokens(file); err != nil {
			return cfg, exitcode.Usage("serve: %s: %v", f.tokens, err)
		}
	}
	if f.autoAcceptFrom != "" {
		file, err := os.Open(f.autoAcceptFrom)
		if err != nil {
			return cfg, exitcode.Usage("serve: %v", err)
		}
		defer file.Close()
		if cfg.Hub.Consent, err = hub.ParseConsent(file); err != nil {
			return cfg, exitcode.Usage("serve: %s: %v", f.autoAcceptFrom, err)
		}
	}
	if err := f.retention.config(&cfg.Hub, f.data); err != nil {
		return cfg, err
	}
	if !f.fsync {
		lg.Warn().Msg("--fsync=false: acknowledged envelopes can be lost on a crash")
	}
	return cfg, nil
}

// fanOut sets the hub's fan-out limits and the agents' and the hub's
// buffer bounds (its feed's) from their flags, where 0 means none (the
// configs' negative).
func (f *serveFlags) fanOut(hc *hub.Config, fc *feed.Config) error {
	for _, l := range []struct {
		flag string
		v    int
		to   *int
	}{{"--max-open-per-agent", f.maxOpen, &hc.MaxOpenPerAgent}, {"--max-tree-sessions", f.treeSessions, &hc.MaxTreeSessions},
		{"--max-children-per-turn", f.childrenPerTurn, &hc.MaxChildrenPerTurn},
		{"--max-deltas-per-second", f.deltasPerSecond, &hc.MaxDeltasPerSecond}, {"--max-delta-bytes-per-turn", f.deltaBytesPerTurn, &hc.MaxDeltaBytesPerTurn},
		{"--agent-buffer-bytes", f.agentBytes, &fc.AgentBufferBytes}, {"--total-buffer-bytes", f.totalBytes, &fc.TotalBufferBytes}} {
		switch {
		case l.v < 0:
			return exitcode.Usage("serve: %s %d: want a positive limit, or 0 for none", l.flag, l.v)
		case l.v == 0:
			*l.to = -1
		default:
			*l.to = l.v
		}
	}
	return nil
}

// checkSafety refuses flags that would serve unsafely or fail obscurely:
// a TLS certificate without its key (or the reverse), and bearer tokens
// in cleartext on a non-loopback address unless --insecure-tokens.
func (f *serveFlags) checkSafety() error {
	switch {
	case f.tlsCert != "" && f.tlsKey == "":
		return exitcode.Usage("serve: --tls-cert %s needs --tls-key (the certificate's private key)", f.tlsCert)
	case f.tlsKey != "" && f.tlsCert == "":
		return exitcode.Usage("serve: --tls-key %s needs --tls-cert (the server certificate)", f.tlsKey)
	}
	if f.tokens == "" || f.tlsCert != "" || f.insecureTokens {
		return nil
	}
	for _, a := range [][2]string{{"--listen", f.listen}, {"--http", f.httpAddr()}} {
		if a[1] != "" && !loopbackAddr(a[1]) {
			return exitcode.Usage("serve: --tokens without TLS on %s %s would send bearer tokens in cleartext: give --tls-cert and --tls-key, serve on a loopback address, or accept the risk with --insecure-tokens", a[0], a[1])
		}
	}
	return nil
}

// loopbackAddr reports whether host:port names a loopback host.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openTokens opens the tokens file, refusing one that others than its
// owner may write (anyone who can edit it can make themselves an agent
// or an operator).
func openTokens(path string) (*os.File, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Usage("serve: %v", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, exitcode.Usage("serve: %v", err)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		file.Close()
		return nil, exitcode.Usage("serve: tokens file %s is writable by its group or others (mode %04o): make it writable by its owner alone (chmod go-w %s)", path, perm, path)
	}
	return file, nil
}

// httpAddr is the HTTP side's address: --http when given ("off" or "":
// none); otherwise, in development mode (no --tokens, no --client-ca),
// the --listen host with the next port (port 0 stays 0, for tests; a
// taken port gives way to a free one, see server.Config.HTTPAnyPort), and
// none outside it.
func (f *serveFlags) httpAddr() string {
	if f.httpSet {
		if f.http == "off" {
			return ""
		}
		return f.http
	}
	if f.tokens != "" || f.clientCA != "" {
		return ""
	}
	host, port, err := net.SplitHostPort(f.listen)
	if err != nil {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n >= 65535 {
		return ""
	}
	if n > 0 {
		n++
	}
	return net.JoinHostPort(host, strconv.Itoa(n))
}

// shutdownTracing flushes the spans still buffered, for at most 5 s.
func shutdownTracing(t *telemetry.Tracing, lg zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		lg.Warn().Err(err).Msg("exporting the last spans")
	}
}

// moduleVersion is the binary's module version, "(devel)" when built from
// a work tree.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// newLogger builds the process logger. The console format is for people
// at a terminal: zerolog's ConsoleWriter decodes each JSON line again to
// lay it out, which at thousands of sessions a second is several percent
// of the hub's CPU, so auto writes JSON to anything else (a file,
// journald, a container's log).
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Nop(), exitcode.Usage("--log-level %q: want debug, info, warn or error", level)
	}
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "console"
		}
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !isTerminal(w)}
	default:
		return zerolog.Nop(), exitcode.Usage("--log-format %q: want json, console or auto", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether x, a reader or a writer, is a character
// device (a terminal).
func isTerminal(x any) bool {
	f, ok := x.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseSize reads a size in bytes: a whole number with an optional unit,
// B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (of 1024).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a whole number of bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB)")
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}
