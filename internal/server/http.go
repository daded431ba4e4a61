package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubhttp"
	"github.com/hubd/hubd/hub/hubhttp/webui"
	"github.com/hubd/hubd/internal/buildinfo"
)

// listenHTTP opens the HTTP side's listener, if Config.HTTP asks for one.
// Development mode serves loopback addresses only, as for gRPC.
func listenHTTP(cfg Config, dev bool, tlsCfg *tls.Config) (net.Listener, error) {
	if cfg.HTTP == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", cfg.HTTP)
	if err != nil && cfg.HTTPAnyPort {
		host, _, _ := net.SplitHostPort(cfg.HTTP)
		cfg.Logger.Warn().Err(err).Str("http", cfg.HTTP).Msg("HTTP address taken; serving HTTP on a free port")
		lis, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	if err != nil {
		return nil, &ListenError{Side: "http", Addr: cfg.HTTP, Err: err}
	}
	if dev && !isLoopback(lis.Addr()) {
		lis.Close()
		return nil, fmt.Errorf("refusing to serve HTTP on %v without --tokens or --client-ca: development mode is for loopback addresses only", lis.Addr())
	}
	return lis, nil
}

// serveHTTP serves the HTTP side on lis: the JSON API through the same
// service and interceptors as gRPC, events, sign-in, metrics and pprof.
// With TLS, client certificates are asked for but not required, so a
// browser signs in with a token.
func (s *Server) serveHTTP(auth hubgrpc.Authenticator, lis net.Listener, tlsCfg *tls.Config) error {
	ui, lend := s.cfg.UI, &uiAuth{}
	if ui == nil {
		w, err := webui.New(webui.Config{Feed: s.feed, Auth: lend})
		if err != nil {
			return err
		}
		ui = w
	}
	now := time.Now
	if c := s.cfg.Hub.Clock; c != nil {
		now = c.Now // sign-ins expire by the hub's clock
	}
	api, err := hubhttp.New(hubhttp.Config{
		Feed: s.feed, Service: s.svc, Authenticate: s.svc.UnaryInterceptor,
		Interceptors: unaryChain(s.cfg, s.metrics, s.svc, s.node, "http"),
		Dev:          auth.Dev, DevOperator: devOperator(auth), Heartbeat: s.cfg.Heartbeat, MaxBodyBytes: int64(s.maxMsg),
		MaxEnvelopeBytes: s.cfg.Hub.WithDefaults().MaxEnvelopeBytes,
		Metrics:          s.metrics.Handler(), Streams: s.metrics.Stream, OnLimit: s.metrics.Limited, UI: ui, Logger: s.cfg.Logger,
		Now: now, OpenMetrics: isLoopback(lis.Addr()), Health: s.writes.Err,
		Version: buildinfo.Read().Version, Workflows: s.cfg.Workflows,
		A2A: s.cfg.A2A.Exposed(), A2ASecurity: a2aSecurity(s.cfg, auth.Dev),
	})
	if err != nil {
		return err
	}
	lend.API = api // before anything is served
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: log.New(httpLog{s.cfg.Logger}, "", 0)}
	if tlsCfg != nil {
		srv.TLSConfig = tlsCfg.Clone()
		if srv.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert {
			srv.TLSConfig.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	s.http, s.httpLis = srv, lis
	go func() {
		var err error
		if tlsCfg != nil {
			err = srv.ServeTLS(lis, "", "")
		} else {
			err = srv.Serve(lis)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error().Err(err).Msg("HTTP server stopped")
		}
	}()
	return nil
}

// devOperator is the operator a browser on this machine is signed in as
// in development mode: the first of Config.Operators, DevOperator by
// default; "" outside development mode.
func devOperator(auth hubgrpc.Authenticator) string {
	if !auth.Dev || len(auth.Operators) == 0 {
		return ""
	}
	return auth.Operators[0]
}

// listenMetrics opens the metrics address's listener, if
// Config.MetricsListen asks for one.
func listenMetrics(cfg Config) (net.Listener, error) {
	if cfg.MetricsListen == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return lis, nil
}

// serveMetrics serves GET /metrics alone, with no credentials, on lis (nil:
// none).
func (s *Server) serveMetrics(lis net.Listener) {
	if lis == nil {
		return
	}
	srv := &http.Server{Handler: hubhttp.MetricsHandler(s.metrics.Handler()), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: log.New(httpLog{s.cfg.Logger}, "", 0)}
	s.metricsSrv, s.metricsLis = srv, lis
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error().Err(err).Msg("metrics server stopped")
		}
	}()
}

// MetricsAddr is the address of Config.MetricsListen's listener, "" when
// there is none.
func (s *Server) MetricsAddr() string {
	if s.metricsLis == nil {
		return ""
	}
	return s.metricsLis.Addr().String()
}

// closeAll closes the listeners that are not nil.
func closeAll(ls ...net.Listener) {
	for _, l := range ls {
		if l != nil {
			l.Close()
		}
	}
}

// uiAuth lends the web view the API's authentication; the API is set
// once built (it serves the web view, so it comes after it).
type uiAuth struct{ *hubhttp.API }

// shutdownHTTP stops the HTTP side: no new connections; it is done once
// every request has finished (event streams end when the hub closes) or
// ctx is done, when the rest are cut.
func (s *Server) shutdownHTTP(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if s.http == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := s.http.Shutdown(ctx); err != nil {
			s.http.Close()
		}
	}()
	return done
}

// HTTPAddr is the address of the HTTP side, "" when there is none.
func (s *Server) HTTPAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

// httpLog writes net/http's own messages (TLS handshakes that failed, ...)
// to the server's log at warning level.
type httpLog struct{ lg zerolog.Logger }

func (h httpLog) Write(p []byte) (int, error) {
	h.lg.Warn().Str("component", "http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// a2aSecurity is how callers of the A2A side authenticate: with bearer
// tokens, client certificates, or (development mode) a name.
func a2aSecurity(cfg Config, dev bool) []string {
	if dev {
		return []string{"dev"}
	}
	var out []string
	if cfg.Tokens != nil {
		out = append(out, "bearer")
	}
	if cfg.ClientCA != "" {
		out = append(out, "mtls")
	}
	return out
}
