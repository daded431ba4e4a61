package hubhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/huba2a"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubhttp/gateway"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/a2aconf"
)

// DefaultHeartbeat is how often an idle event stream gets a comment line.
const DefaultHeartbeat = 15 * time.Second

// DefaultMaxBodyBytes is the largest request body by default: the hub's
// default envelope limit and room for the rest of a request.
const DefaultMaxBodyBytes = 1<<20 + 64<<10

// Config configures the HTTP side. Feed, Service and Authenticate are
// required; the zero value of every other field means its default.
type Config struct {
	// Feed serves the event streams (feed.Feed.Watch).
	Feed *feed.Feed
	// Service is the gRPC service the JSON API calls (hubgrpc.Service).
	Service hubsvc.HubServer
	// Authenticate is the gRPC service's authentication
	// (hubgrpc.Service.UnaryInterceptor); the event streams, sign-in and
	// pprof authenticate with it.
	Authenticate grpc.UnaryServerInterceptor
	// Interceptors run around every call of the JSON API, the first
	// outermost: the same chain as the gRPC server's (metrics,
	// Authenticate, tracing). Authenticate must be among them.
	Interceptors []grpc.UnaryServerInterceptor
	// Dev is development mode: browsers may sign in with a name (from a
	// loopback address only).
	Dev bool
	// DevOperator, in development mode, is the operator a browser on this
	// machine is signed in as by POST /v1/auth/dev, without a name or a
	// token (the web view does it by itself); "" offers no such sign-in.
	DevOperator string
	// Heartbeat is how often an idle event stream gets a comment line;
	// default DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxBodyBytes bounds a request's body, like the gRPC server's largest
	// message; default DefaultMaxBodyBytes. A larger one is refused with
	// TOO_LARGE (HTTP 413) naming --max-request-bytes.
	MaxBodyBytes int64
	// MaxEnvelopeBytes is the hub's envelope limit: a JSON body holds at
	// most half as many keys and values, or is refused with TOO_LARGE
	// before it is decoded; default 1 MiB.
	MaxEnvelopeBytes int
	// OnLimit, when set, is told of every request refused at a limit
	// before the interceptors see it (a body too large), by the limit's
	// name (hub.LimitError.Limit).
	OnLimit func(limit string)
	// Metrics is served at GET /metrics when set: to operators only,
	// unless OpenMetrics.
	Metrics http.Handler
	// Health, when set, says why the hub takes no writes (its disk is
	// below its reserve, its storage failed), or nil while it does: GET
	// /healthz then answers 503 with that reason.
	Health func() error
	// OpenMetrics serves Metrics to anyone: for an HTTP address that is
	// loopback, whose callers are all on the machine (the Prometheus
	// convention of an unauthenticated scrape; elsewhere, serve it on an
	// address of its own, see MetricsHandler).
	OpenMetrics bool
	// Streams, when set, is told of every event stream: kind "events" when
	// it starts, and why it ended through the function it returns (nil:
	// the client left).
	Streams func(kind string) (ended func(err error))
	// UI is served at / when set (the web view). It may call Identify.
	UI http.Handler
	// SecureCookies marks the sign-in cookie Secure even on plain HTTP
	// (behind a proxy that terminates TLS); it is Secure on TLS anyway.
	SecureCookies bool
	// SignInTTL is how long a browser's sign-in lasts; default
	// DefaultSignInTTL.
	SignInTTL time.Duration
	// MaxSignIns bounds the sign-ins kept at once; default
	// DefaultMaxSignIns.
	MaxSignIns int
	// Now is the clock sign-ins expire by; default time.Now.
	Now func() time.Time
	// Logger receives errors that carry no reason (bugs); default none.
	Logger zerolog.Logger
	// Version is the hub's version, as MCP hosts see it at /mcp.
	Version string
	// Workflows are the transition graphs by name that the MCP tool
	// open_session offers ("workflow": NAME).
	Workflows map[string]*structpb.Struct
	// A2A are the agents served to outside A2A clients (package huba2a),
	// and A2ASecurity how their callers authenticate ("bearer", "mtls",
	// "dev"), for their cards.
	A2A         []a2aconf.Exposed
	A2ASecurity []string
}

// Validate reports a missing required field.
func (c *Config) Validate() error {
	var errs []error
	if c.Feed == nil {
		errs = append(errs, errors.New("hubhttp: Config.Feed is required"))
	}
	if c.Service == nil {
		errs = append(errs, errors.New("hubhttp: Config.Service is required"))
	}
	if c.Authenticate == nil {
		errs = append(errs, errors.New("hubhttp: Config.Authenticate is required"))
	}
	for i, ic := range c.Interceptors {
		if ic == nil {
			errs = append(errs, fmt.Errorf("hubhttp: Config.Interceptors[%d] is nil", i))
		}
	}
	if c.Heartbeat < 0 || c.MaxBodyBytes < 0 || c.MaxEnvelopeBytes < 0 || c.SignInTTL < 0 || c.MaxSignIns < 0 {
		errs = append(errs, errors.New("hubhttp: negative Config.Heartbeat, MaxBodyBytes, MaxEnvelopeBytes, SignInTTL or MaxSignIns"))
	}
	return errors.Join(errs...)
}

// API is the HTTP side of a hub, an http.Handler. The package doc lists
// its routes.
type API struct {
	cfg     Config
	lg      zerolog.Logger
	handler http.Handler
	signIns *signIns
}

// New builds the HTTP side.
func New(cfg Config) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxEnvelopeBytes == 0 {
		cfg.MaxEnvelopeBytes = 1 << 20
	}
	if cfg.SignInTTL == 0 {
		cfg.SignInTTL = DefaultSignInTTL
	}
	if cfg.MaxSignIns == 0 {
		cfg.MaxSignIns = DefaultMaxSignIns
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &API{cfg: cfg, lg: cfg.Logger, signIns: newSignIns(cfg.MaxSignIns, cfg.SignInTTL, cfg.Now)}
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newJSONForm()),
		runtime.WithIncomingHeaderMatcher(forwardHeader),
		runtime.WithErrorHandler(a.gatewayError),
		runtime.WithRoutingErrorHandler(routingError),
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
	)
	conn := newInproc(&hubsvc.Hub_ServiceDesc, cfg.Service, chain(cfg.Interceptors...))
	client := hubsvc.NewHubClient(conn)
	if err := gateway.RegisterHubHandlerClient(context.Background(), gw, client); err != nil {
		return nil, fmt.Errorf("hubhttp: registering the JSON API: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", jsonBodies(a.checkBody(gw)))
	mux.HandleFunc("GET /v1/sessions/{session_id}/events", a.events)
	mux.Handle(mcpPath, a.mcpHandler(client))
	if len(cfg.A2A) > 0 {
		huba2a.New(huba2a.Config{Agents: cfg.A2A, Client: client, Watch: cfg.Feed, Identify: a.Identify,
			Forward: []string{"authorization", hubgrpc.AgentHeader}, Security: cfg.A2ASecurity, Version: cfg.Version}).Register(mux)
	}
	mux.HandleFunc("POST /v1/auth/signin", a.signIn)
	mux.HandleFunc("POST /v1/auth/dev", a.devSignIn)
	mux.HandleFunc("POST /v1/auth/signout", a.signOut)
	mux.HandleFunc("GET /v1/auth/whoami", a.whoAmI)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cfg.Health != nil {
			if err := cfg.Health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not serving writes: %v\n", err)
				return
			}
		}
		w.Write([]byte("ok\n"))
	})
	if cfg.Metrics != nil && cfg.OpenMetrics {
		mux.Handle("GET /metrics", cfg.Metrics)
	} else if cfg.Metrics != nil {
		mux.Handle("GET /metrics", a.operatorOnly("/metrics", cfg.Metrics))
	}
	a.pprof(mux)
	if cfg.UI != nil {
		mux.Handle("/", cfg.UI)
	}
	a.handler = http.NewCrossOriginProtection().Handler(a.credentials(mux))
	return a, nil
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// forwardHeader says which HTTP headers reach the service as gRPC
// metadata besides Authorization (which the gateway always passes): the
// development-mode agent and the W3C trace context.
func forwardHeader(key string) (string, bool) {
	switch k := strings.ToLower(key); k {
	case hubgrpc.AgentHeader, "traceparent", "tracestate":
		return k, true
	}
	return "", false
}

// pprof mounts Go's profiler under /debug/pprof/, for operators only.
func (a *API) pprof(mux *http.ServeMux) {
	const what = "/debug/pprof"
	mux.Handle("/debug/pprof/", a.operatorOnly(what, http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", a.operatorOnly(what, http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", a.operatorOnly(what, http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", a.operatorOnly(what, http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", a.operatorOnly(what, http.HandlerFunc(pprof.Trace)))
}

// operatorOnly lets only operators through to what.
func (a *API) operatorOnly(what string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.identify(r, "/hubd.http/Operator")
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if !id.Operator {
			a.fail(w, r, fmt.Errorf("%q is not an operator; %s is for operators: %w", id.Agent, what, hub.ErrPermissionDenied))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MetricsHandler serves metrics at GET /metrics and nothing else, to
// anyone: for an address of its own (hubd serve --metrics-listen), which
// the operator chose to open to its scraper.
func MetricsHandler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	return mux
}
