package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/wal"
)

// Config describes a hubd server.
type Config struct {
	Listen   string // host:port; "127.0.0.1:0" picks a free port
	DataDir  string // the write-ahead log's directory
	InMemory bool   // keep the log in memory (tests, examples)
	NoSync   bool   // do not fsync before acknowledging (benchmarks only)

	Tokens    *hubgrpc.Tokens // nil: development mode, loopback only
	Operators []string        // agents with operator rights (mTLS or dev mode)
	TLSCert   string          // server certificate file (PEM); with TLSKey
	TLSKey    string
	ClientCA  string // require client certificates signed by this CA (mTLS)

	Hub         hub.Config // limits, clock, hooks; Log, Adapters and Logger are filled in, and its Hooks run after the server's logging (see logHooks)
	MaxMsgBytes int        // largest request; default the hub's envelope limit + 64 KiB
	Logger      zerolog.Logger
}

// DevOperator is the agent name with operator rights in development mode
// when no operators are configured.
const DevOperator = "operator"

// Server is a running hubd: log, hub, gRPC service.
type Server struct {
	cfg    Config
	wal    *wal.Log
	hub    *hub.Hub
	grpc   *grpc.Server
	health *health.Server
	lis    net.Listener
	served chan error
}

// Start opens the log, hydrates the hub and serves gRPC on cfg.Listen.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
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
	l, err := wal.Open(wal.Options{Dir: cfg.DataDir, InMemory: cfg.InMemory, NoSync: cfg.NoSync, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("opening the write-ahead log: %w", err)
	}
	hc := cfg.Hub
	hc.Log, hc.Adapters, hc.Logger = WALLog(l), Adapters(nil), cfg.Logger
	hc.Hooks = logHooks(cfg.Logger, hc.Hooks)
	h, err := hub.New(ctx, hc)
	if err != nil {
		l.Close()
		return nil, err
	}
	opts, err := serverOptions(cfg, hc)
	if err != nil {
		h.Close()
		l.Close()
		return nil, err
	}
	svc := hubgrpc.New(h, hubgrpc.Config{Auth: auth, Logger: cfg.Logger})
	g := grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(svc.UnaryInterceptor), grpc.ChainStreamInterceptor(svc.StreamInterceptor))...)
	svc.Register(g)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	reflection.Register(g)
	s := &Server{cfg: cfg, wal: l, hub: h, grpc: g, health: hs, lis: lis, served: make(chan error, 1)}
	go func() { s.served <- g.Serve(lis) }()
	announce(cfg, auth.Dev, lis.Addr())
	return s, nil
}

// announce logs, once, where the server listens and on what data, after a
// warning in development mode.
func announce(cfg Config, dev bool, addr net.Addr) {
	if dev {
		cfg.Logger.Warn().Msg("no tokens: development mode, any agent name is accepted (loopback only)")
	}
	data := cfg.DataDir
	if cfg.InMemory {
		data = "(in memory)"
	}
	cfg.Logger.Info().Str("listen", addr.String()).Str("data", data).Msg("hubd listening")
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

func serverOptions(cfg Config, hc hub.Config) ([]grpc.ServerOption, error) {
	maxMsg := cfg.MaxMsgBytes
	if maxMsg == 0 {
		env := hc.MaxEnvelopeBytes
		if env == 0 {
			env = 1 << 20
		}
		maxMsg = env + 64<<10
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMsg),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		if cfg.ClientCA != "" {
			return nil, errors.New("--client-ca needs --tls-cert and --tls-key")
		}
		return opts, nil
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
	return append(opts, grpc.Creds(credentials.NewTLS(tc))), nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Hub returns the server's hub.
func (s *Server) Hub() *hub.Hub { return s.hub }

// Shutdown stops the server gracefully: health turns NOT_SERVING, new calls
// are refused, the hub ends every stream and finishes in-flight sends, the
// gRPC server drains (forcibly once ctx is done), and the log closes last.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	hubErr := s.hub.Close()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
	}
	walErr := s.wal.Close()
	s.cfg.Logger.Info().Msg("hubd stopped")
	return errors.Join(hubErr, walErr)
}

// Done yields the gRPC server's exit error once it stops serving.
func (s *Server) Done() <-chan error { return s.served }
