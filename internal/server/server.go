package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/metrics"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// Config describes a hubd server.
type Config struct {
	Listen   string // host:port; "127.0.0.1:0" picks a free port
	DataDir  string // the write-ahead log's directory
	InMemory bool   // keep the log in memory (tests, examples)
	NoSync   bool   // do not fsync before acknowledging (benchmarks only)
	// OnDamage says what to do when the log finds acknowledged records
	// missing at start: refuse to start (wal.RefuseDamaged, the zero
	// value) or quarantine the sessions affected (wal.MarkDamaged).
	OnDamage wal.DamagePolicy
	// MinFreeBytes is the free space kept on the data directory's disk;
	// below it sends are refused with DISK_FULL (0: wal's default, 256
	// MiB; negative: no check).
	MinFreeBytes int64

	Tokens    *hubgrpc.Tokens // nil: development mode, loopback only
	Operators []string        // agents with operator rights (mTLS or dev mode)
	TLSCert   string          // server certificate file (PEM); with TLSKey
	TLSKey    string
	ClientCA  string // require client certificates signed by this CA (mTLS)

	Hub hub.Config // limits, clock, hooks; Log, Adapters and Logger are filled in, and its Hooks run after the server's logging and metrics (see logHooks)
	// Feed bounds what subscribers may leave unread and the streams an
	// agent holds; its Logger is filled in, and a stream refused or cut
	// off at one of its bounds goes to Hub.Hooks.Limited (after the
	// metrics) as the hub's own refusals do, then to its Limited.
	Feed feed.Config
	// MaxMsgBytes is the largest request the hub reads (gRPC message or
	// HTTP body); default 4 × the envelope limit, at least 4 MiB, + 64
	// KiB. Up to twice it a larger one is refused with TOO_LARGE naming
	// the limit (see grpcRecvBytes).
	MaxMsgBytes int
	// MaxStreamsPerConn bounds the Subscribe and Watch streams of one
	// connection; default hubgrpc.DefaultMaxStreamsPerConn.
	MaxStreamsPerConn int
	Logger            zerolog.Logger

	// HTTP is the host:port of the HTTP side (JSON API, events, sign-in,
	// /metrics, /debug/pprof); "" serves none. In development mode it must
	// be a loopback address, like Listen. With TLSCert it serves TLS, and
	// with ClientCA it asks for (but does not require) client certificates.
	HTTP string
	// MetricsListen is a host:port serving GET /metrics alone, with no
	// credentials, for a Prometheus scraper; "" serves none. On the HTTP
	// address /metrics needs no credentials only when that address is
	// loopback, and is for operators otherwise.
	MetricsListen string
	// HTTPAnyPort serves HTTP on a free port of the same host when HTTP's
	// port is taken (with a warning), for a default address rather than
	// one the operator asked for.
	HTTPAnyPort bool
	// Heartbeat is the interval of the event streams' comment lines;
	// default hubhttp.DefaultHeartbeat.
	Heartbeat time.Duration
	// UI is served at / on the HTTP address; nil: the web view (package
	// hub/hubhttp/webui).
	UI http.Handler
	// Workflows are transition graphs by name, which MCP hosts open by
	// name at /mcp on the HTTP address.
	Workflows map[string]*structpb.Struct
	// A2A configures the A2A doors: the agents served to outside A2A
	// clients on the HTTP address, and the outside agents that take part
	// in sessions; nil: none.
	A2A *a2aconf.File
	// Tracer records the spans of calls; nil: none are recorded, but a
	// caller's traceparent still reaches the envelopes it produces.
	Tracer trace.TracerProvider
	// Cluster, when set, makes the server a node of a cluster on NATS
	// JetStream (DataDir, InMemory, NoSync, OnDamage and MinFreeBytes do
	// not apply): internal/cluster.
	Cluster *cluster.Config
}

// DevOperator is the agent name with operator rights in development mode
// when no operators are configured.
const DevOperator = "operator"

// Server is a running hubd: log, hub, gRPC service, and the HTTP side
// when configured.
type Server struct {
	cfg     Config
	wal     *wal.Log      // nil in a cluster
	node    *cluster.Node // nil on a single node
	hub     *hub.Hub
	feed    *feed.Feed
	grpc    *grpc.Server
	health  *health.Server
	writes  *writeHealth // whether the log takes writes (single node)
	lis     net.Listener
	http    *http.Server // nil without Config.HTTP
	httpLis net.Listener
	svc     *hubgrpc.Service
	metrics *metrics.Metrics
	maxMsg  int
	served  chan error

	// The metrics address (Config.MetricsListen); nil without it.
	metricsSrv *http.Server
	metricsLis net.Listener

	remotes *remotes // the outside A2A agents' bridges; nil: none
}

// ListenError is a failure to listen on one of the server's addresses:
// taken by another process, not an address of this machine, ...
type ListenError struct {
	// Side is "grpc" (Config.Listen) or "http" (Config.HTTP).
	Side string
	// Addr is the address, as configured.
	Addr string
	// Err is net.Listen's error.
	Err error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s on %s: %v", map[string]string{"grpc": "gRPC", "http": "HTTP"}[e.Side], e.Addr, e.Err)
}

// Unwrap returns net.Listen's error.
func (e *ListenError) Unwrap() error { return e.Err }

// Start opens the log, hydrates the hub and serves gRPC on cfg.Listen.
// A failure to listen is a *ListenError.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, &ListenError{Side: "grpc", Addr: cfg.Listen, Err: err}
	}
	s, err := StartOn(ctx, cfg, lis)
	if err != nil {
		lis.Close()
	}
	return s, err
}

// StartOn is Start on a listener the caller made (bufconn in tests).
func StartOn(ctx context.Context, cfg Config, lis net.Listener) (*Server, error) {
	auth, err := authFor(cfg, lis.Addr())
	if err != nil {
		return nil, err
	}
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	httpLis, err := listenHTTP(cfg, auth.Dev, tlsCfg)
	if err != nil {
		return nil, err
	}
	metricsLis, err := listenMetrics(cfg)
	if err != nil {
		closeAll(httpLis)
		return nil, err
	}
	s, err := start(ctx, cfg, auth, tlsCfg, lis)
	if err != nil {
		closeAll(httpLis, metricsLis)
		return nil, err
	}
	if httpLis != nil {
		if err := s.serveHTTP(auth, httpLis, tlsCfg); err != nil {
			closeAll(metricsLis)
			s.Shutdown(context.Background())
			return nil, err
		}
	}
	s.serveMetrics(metricsLis)
	if err := s.startRemotes(auth.Dev); err != nil {
		s.Shutdown(context.Background())
		return nil, err
	}
	announce(cfg, auth.Dev, lis.Addr(), httpLis, metricsLis)
	return s, nil
}

// start opens the log, hydrates the hub and serves gRPC on lis.
func start(ctx context.Context, cfg Config, auth hubgrpc.Authenticator, tlsCfg *tls.Config, lis net.Listener) (*Server, error) {
	hs := health.NewServer()
	writes := &writeHealth{hs: hs, lg: cfg.Logger}
	var (
		l  *wal.Log
		n  *cluster.Node
		m  *metrics.Metrics
		hc = cfg.Hub
	)
	if cfg.Cluster != nil {
		var err error
		if n, err = cluster.Open(ctx, *cfg.Cluster, lis.Addr().String(), cfg.Logger); err != nil {
			return nil, err
		}
		m = metrics.New(nil)
		m.Registry().MustRegister(n.Foreign())
		hc = n.HubConfig(hc)
	} else {
		batch, err := LogBatchBytes(cfg.Hub)
		if err != nil {
			return nil, err
		}
		l, err = wal.Open(wal.Options{Dir: cfg.DataDir, InMemory: cfg.InMemory, NoSync: cfg.NoSync, Logger: cfg.Logger,
			OnDamage: cfg.OnDamage, MinFreeBytes: cfg.MinFreeBytes, OnSpace: writes.space, OnFailure: writes.storage,
			MaxBatchBytes: batch})
		if err != nil {
			return nil, fmt.Errorf("opening the write-ahead log: %w", openHint(cfg, err))
		}
		writes.space(l.Space())
		m = metrics.New(l.Stats)
		m.WatchStorage(l.Failure)
		hc.Log = observedLog{walLog{l}, m}
	}
	closeLog := func() {
		if l != nil {
			l.Close()
		}
		if n != nil {
			n.Close()
		}
	}
	hc.Adapters, hc.Logger = Adapters(nil), cfg.Logger
	// With tokens or certificates, an agent is put into a session without
	// acknowledging only by those it consented to (hub.Consent).
	hc.RequireConsent = hc.RequireConsent || !auth.Dev
	// An agent served over A2A takes tasks from any authenticated caller:
	// exposing it is its consent.
	for _, e := range cfg.A2A.Exposed() {
		if !hc.Consent.Allows("*", e.Agent) {
			hc.Consent = hc.Consent.With(e.Agent, "*")
		}
	}
	hc.Hooks = logHooks(cfg.Logger, m.Hooks(hc.Hooks))
	if cfg.Tracer != nil {
		hc.Tracer = cfg.Tracer.Tracer("github.com/hubd/hubd/hub")
	}
	began := time.Now()
	fc := cfg.Feed
	fc.Logger, fc.Limited = cfg.Logger, limitedHook(hc.Hooks.Limited, fc.Limited)
	if fc.DeltaDropped == nil {
		fc.DeltaDropped = m.DeltaDropped
	}
	h, f, err := feed.Open(ctx, hc, fc)
	if err != nil {
		closeLog()
		return nil, err
	}
	m.Hydrated(time.Since(began))
	m.Attach(readings{h, f})
	sc := hubgrpc.Config{Auth: auth, Logger: cfg.Logger, MaxStreamsPerConn: cfg.MaxStreamsPerConn, Tracer: cfg.Tracer,
		OnStreamRequest: m.StreamRequest, OnLimit: m.Limited}
	if n != nil {
		// The node service runs what the other nodes route here, on this
		// hub (a service with no Router); the clients' service routes.
		local := cluster.Local{Hub: h, Service: hubgrpc.New(h, f, hubgrpc.Config{Logger: cfg.Logger, Tracer: cfg.Tracer}),
			Options: commonOptions(cfg, hc), Tracer: cfg.Tracer}
		if err := n.Serve(ctx, local); err != nil {
			h.Close()
			closeLog()
			return nil, err
		}
		sc.Router = n
	}
	svc := hubgrpc.New(h, f, sc)
	g := grpc.NewServer(append(serverOptions(cfg, hc, tlsCfg),
		grpc.ChainUnaryInterceptor(unaryChain(cfg, m, svc, n, "grpc")...),
		grpc.ChainStreamInterceptor(m.StreamInterceptor, svc.StreamInterceptor))...)
	svc.Register(g)
	healthpb.RegisterHealthServer(g, hs)
	reflection.Register(g)
	s := &Server{cfg: cfg, wal: l, node: n, hub: h, feed: f, svc: svc, grpc: g, health: hs, writes: writes, lis: lis, metrics: m,
		maxMsg: maxMsgBytes(cfg, hc), served: make(chan error, 1)}
	go func() { s.served <- g.Serve(lis) }()
	return s, nil
}

// unaryChain is the interceptors of every unary call, gRPC or JSON:
// metrics (refusals count too), authentication, then tracing (an
// unauthenticated call starts no span), and in a cluster (n not nil)
// routing last: listings gathered from every node, calls forwarded to
// their session's owner (internal/cluster).
func unaryChain(cfg Config, m *metrics.Metrics, svc *hubgrpc.Service, n *cluster.Node, transport string) []grpc.UnaryServerInterceptor {
	chain := []grpc.UnaryServerInterceptor{m.UnaryInterceptor(transport), svc.UnaryInterceptor, hubgrpc.TraceInterceptor(cfg.Tracer)}
	if n != nil {
		chain = append(chain, n.Unary)
	}
	return chain
}

// announce logs, once, where the server listens, the web view's URL and
// on what data, after a warning in development mode.
func announce(cfg Config, dev bool, addr net.Addr, httpLis, metricsLis net.Listener) {
	if dev {
		cfg.Logger.Warn().Msg("no tokens: development mode, any agent name is accepted (loopback only)")
	}
	data := cfg.DataDir
	if cfg.InMemory {
		data = "(in memory)"
	}
	ev := cfg.Logger.Info().Str("listen", addr.String())
	if httpLis != nil {
		ev = ev.Str("http", httpLis.Addr().String()).Str("url", webURL(httpLis.Addr(), cfg.TLSCert != ""))
	}
	if metricsLis != nil {
		ev = ev.Str("metrics", metricsLis.Addr().String())
	}
	ev.Str("data", data).Msg("hubd listening")
}

// webURL is the web view's URL on the HTTP address addr: https with TLS;
// a wildcard host (0.0.0.0, ::) is named localhost, the machine itself.
func webURL(addr net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// authFor decides how callers authenticate: tokens, client certificates,
// or (without either, on loopback only) development mode.
func authFor(cfg Config, addr net.Addr) (hubgrpc.Authenticator, error) {
	a := hubgrpc.Authenticator{Tokens: cfg.Tokens, Operators: cfg.Operators}
	if cfg.Tokens != nil || cfg.ClientCA != "" {
		return a, nil
	}
	if !isLoopback(addr) {
		return a, fmt.Errorf("refusing to serve %v without --tokens or --client-ca: development mode is for loopback addresses only", addr)
	}
	a.Dev = true
	if len(a.Operators) == 0 {
		a.Operators = []string{DevOperator}
	}
	return a, nil
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.Network() == "bufconn" || addr.Network() == "pipe"
	}
	return tcp.IP.IsLoopback()
}

// hubRecordsBytes is room, in a write, for the records the hub adds to
// an agent's (opens, violations, closes, results).
const hubRecordsBytes = 64 << 10

// LogBatchBytes is the log's MaxBatchBytes for the hub limits of hc: room
// for the largest write the hub makes (two envelopes at the envelope
// limit, as a child's last turn and its result to the parent, metadata at
// its limit, and the hub's own records), at least wal's default. It is an
// error when the log cannot take that in one write: the envelope limit is
// too large for it.
func LogBatchBytes(hc hub.Config) (int, error) {
	hc = hc.WithDefaults()
	need := wal.WriteBytes(hc.MaxEnvelopeBytes, hc.MaxEnvelopeBytes, hc.MaxMetaBytes, hubRecordsBytes)
	if need > wal.MaxMaxBatchBytes || hc.MaxEnvelopeBytes > wal.MaxMaxBatchBytes {
		most := (wal.MaxMaxBatchBytes - wal.WriteBytes(0, 0, hc.MaxMetaBytes, hubRecordsBytes)) / 2
		return 0, fmt.Errorf("an envelope limit of %d bytes is more than the log takes in one write (%d bytes, with metadata of up to %d): at most %d",
			hc.MaxEnvelopeBytes, wal.MaxMaxBatchBytes, hc.MaxMetaBytes, most)
	}
	return max(need, wal.DefaultMaxBatchBytes), nil
}

// maxMsgBytes is the largest request the hub reads: Config.MaxMsgBytes,
// by default four times the hub's envelope limit, at least 4 MiB, + 64
// KiB. The codec refuses a larger one (that gRPC read, see grpcRecvBytes)
// with TOO_LARGE naming --max-request-bytes, before decoding it; up to it
// the hub refuses an envelope over its own limit with TOO_LARGE naming
// that.
func maxMsgBytes(cfg Config, hc hub.Config) int {
	if cfg.MaxMsgBytes != 0 {
		return cfg.MaxMsgBytes
	}
	env := hc.WithDefaults().MaxEnvelopeBytes
	return max(4*env, 4<<20) + 64<<10
}

// grpcRecvBytes is gRPC's own cap on a request: twice the hub's, so that
// a request past the hub's limit is still read and answered with
// TOO_LARGE and an ErrorInfo naming the limit. Past this cap gRPC refuses
// the request itself, from its length alone, with RESOURCE_EXHAUSTED
// "grpc: received message larger than max (N vs. M)" and no ErrorInfo
// (agentsdk maps it to ErrTooLarge).
func grpcRecvBytes(cfg Config, hc hub.Config) int { return 2 * maxMsgBytes(cfg, hc) }

// Flow-control windows, fixed: gRPC's dynamic windows estimate the
// bandwidth-delay product by a ping on each read of data with none
// outstanding, which for small request-reply frames is a ping and its ack
// per message on every connection.
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

func serverOptions(cfg Config, hc hub.Config, tlsCfg *tls.Config) []grpc.ServerOption {
	opts := append([]grpc.ServerOption{
		grpc.StatsHandler(hubgrpc.ConnStats()), // for the per-connection stream limit
		grpc.InTapHandle(hubgrpc.StreamTap),    // an idle agent stream holds one goroutine
	}, commonOptions(cfg, hc)...)
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	return opts
}

// commonOptions are the options of the clients' gRPC server and of a
// cluster node's node service: the request limits and codec, keepalives,
// flow-control windows. (The node service carries every stream a node
// routes to another on one connection: no per-connection stream limit.)
func commonOptions(cfg Config, hc hub.Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(grpcRecvBytes(cfg, hc)),
		grpc.ForceServerCodecV2(hubgrpc.CodecFor(hubgrpc.WireLimits{MaxRequestBytes: maxMsgBytes(cfg, hc),
			MaxEnvelopeBytes: hc.WithDefaults().MaxEnvelopeBytes})),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
	}
}

// tlsConfig loads the server's certificate and the client CA, if any; nil
// without TLS.
func tlsConfig(cfg Config) (*tls.Config, error) {
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		if cfg.ClientCA != "" {
			return nil, errors.New("--client-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS key pair: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.ClientCA != "" {
		pem, err := os.ReadFile(cfg.ClientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", cfg.ClientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Hub returns the server's hub.
func (s *Server) Hub() *hub.Hub { return s.hub }

// Feed returns the server's feed: the hub's deliveries and reads.
func (s *Server) Feed() *feed.Feed { return s.feed }

// readings is what the metrics read at each scrape: the hub's counts and
// quarantined sessions, and its feed's listings.
type readings struct {
	*hub.Hub
	*feed.Feed
}

// limitedHook calls first, then next (if any), with every limit a
// stream is refused or cut off at.
func limitedHook(first, next func(string)) func(string) {
	switch {
	case first == nil:
		return next
	case next == nil:
		return first
	}
	return func(limit string) {
		first(limit)
		next(limit)
	}
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Shutdown stops the server gracefully, within ctx: health turns
// NOT_SERVING, new calls are refused, the hub ends every stream (event
// streams end with DRAINING) and finishes in-flight sends, the gRPC and
// HTTP servers drain (forcibly once ctx is done), and the log closes
// last. Nothing acknowledged depends on the log's close (the synced
// journal holds it), so when ctx ends first, or the log's storage has
// failed, Shutdown stops waiting, logs "log not closed cleanly" and
// returns an error: the process should exit (non-zero), and the next
// start replays the journal.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	s.stopRemotes()
	var handErr error
	if s.node != nil {
		// Hand the partitions back first: peers take them at once, and
		// the streams of their sessions end with NOT_OWNER, not DRAINING.
		handErr = s.node.HandBack(ctx)
	}
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	httpDone := s.shutdownHTTP(ctx)
	if s.metricsSrv != nil {
		s.metricsSrv.Close() // a scrape is cut: the next one goes to the next hub
	}
	hubErr := within(ctx, "the hub's changes in flight", s.hub.Close)
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
	}
	<-httpDone
	var walErr error
	if s.wal != nil {
		walErr = s.wal.Shutdown(ctx)
		if walErr != nil {
			s.cfg.Logger.Error().Err(walErr).Msg("log not closed cleanly; the next start replays its journal")
		}
	}
	if s.node != nil {
		walErr = s.node.Close()
	}
	s.cfg.Logger.Info().Msg("hubd stopped")
	return errors.Join(handErr, hubErr, walErr)
}

// within runs f and returns its error, or gives up waiting for it once
// ctx is done (f goes on in the background: the process is exiting).
func within(ctx context.Context, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("stopped waiting for %s: %w", what, ctx.Err())
	}
}

// Done yields the gRPC server's exit error once it stops serving.
func (s *Server) Done() <-chan error { return s.served }

// Served returns the partitions this node serves (hydrated, lease held),
// ascending; nil on a single node.
func (s *Server) Served() []int {
	if s.node == nil {
		return nil
	}
	return s.node.Served()
}

// PartitionOf returns the partition of a tree given its root session id,
// -1 on a single node.
func (s *Server) PartitionOf(root session.ID) int {
	if s.node == nil {
		return -1
	}
	return s.node.PartitionOf(root)
}

// Node returns the server's part in a cluster; nil on a single node.
func (s *Server) Node() *cluster.Node { return s.node }
