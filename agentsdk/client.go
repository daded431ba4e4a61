package agentsdk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hubd/hubd/hubpb/hubsvc"
)

// AgentHeader is the metadata key that names the caller to a hub in
// development mode (no tokens, loopback only).
const AgentHeader = "x-hubd-agent"

// Options configure a Client. The zero value of every field but Name (or
// Token) means its default.
type Options struct {
	// Name is the agent's name. Without a Token it is sent as the
	// x-hubd-agent metadata (the hub's development mode, loopback only).
	// With a Token the hub knows the agent from the token; Name may then be
	// left empty, or must be the token's agent (Serve uses it to recognise
	// its invites, Client.Name reports it).
	Name string
	// Token, when set, is sent as "authorization: Bearer <token>" on every
	// call.
	Token string
	// TLS, when set, secures the connection; nil means plaintext, which
	// carries a Token only to a loopback address unless Insecure is set.
	// With a client certificate (mTLS) the hub names the agent by the
	// certificate's common name, and Name and Token may be empty.
	TLS *tls.Config
	// Insecure allows a Token over plaintext to a non-loopback target (a
	// trusted network, or a custom dialer in DialOptions).
	Insecure bool
	// DialOptions are appended to the client's own (and so override them).
	// The client's own fix gRPC's flow-control windows at 1 MiB a stream
	// and 4 MiB a connection, as the hub does: gRPC's dynamic windows cost
	// a ping and its ack per message read. A link whose bandwidth times
	// round trip exceeds them (bulk transfers over a WAN) can raise them
	// with grpc.WithInitialWindowSize and grpc.WithInitialConnWindowSize.
	DialOptions []grpc.DialOption
	// SendAttempts caps how many times a send (or another idempotent
	// call: delegate, answer) is tried when the hub is unavailable; 0 (the
	// default) leaves it to RetryBudget, 1 disables retries.
	SendAttempts int
	// RetryBudget is how long a send keeps being retried while the hub is
	// unavailable (a restart, a network blip), from its first try: between
	// tries the client waits for the connection to be ready again, and
	// every try carries the same client message id, so the hub writes the
	// send once. Default DefaultRetryBudget; negative: no retries.
	RetryBudget time.Duration
	// Peers are the gRPC addresses of the other nodes of a hubd cluster
	// (docs/SCALING.md), for failover: the Client's one connection goes
	// to the first of target and Peers that answers, and moves to the
	// next when its node stops answering (gRPC's pick_first over every
	// address). Any node runs any call and stream for any session, so
	// nothing else changes: streams cut by a node's end are resumed from
	// the cursors as after any disconnect.
	Peers []string
	// Transport is how the Client sends: TransportStream (the default:
	// one agent stream carries its sends, and Serve's deliveries) or
	// TransportUnary (a Send call per envelope, a Subscribe stream for
	// Serve). A hub without the stream gets unary calls.
	Transport string
	// Logf, when set, receives the client's diagnostics (reconnects,
	// stale turns, ignored errors), one line per call.
	Logf func(format string, args ...any)
}

// Client is a connection to a hub as one agent. It is safe for concurrent
// use. Close it when done.
type Client struct {
	conn     *grpc.ClientConn
	rpc      hubsvc.HubClient
	name     string
	attempts int
	budget   time.Duration
	logf     func(format string, args ...any)

	life   context.Context // the Client's streams live in it; Close cancels it
	closed context.CancelFunc
	smu    sync.Mutex
	unary  bool         // no agent stream: Options, or an older hub
	stream *AgentStream // the Client's own stream for its sends
}

// DefaultRetryBudget is Options.RetryBudget's default: longer than a hub
// takes to restart, short enough for an agent to give up on a hub that
// is gone.
const DefaultRetryBudget = 10 * time.Second

// Dial connects to the hub at target ("host:port", or any gRPC target) as
// the agent of opts, and waits until the connection is ready or ctx is
// done: a wrong address fails here, not at the first call, so bound ctx.
func Dial(ctx context.Context, target string, opts Options) (*Client, error) {
	if opts.Name == "" && opts.Token == "" && !hasClientCert(opts.TLS) {
		return nil, errors.New("agentsdk: Options.Name, Options.Token or a client certificate is required")
	}
	if opts.Transport != "" && opts.Transport != TransportStream && opts.Transport != TransportUnary {
		return nil, fmt.Errorf("agentsdk: Options.Transport %q: want %q or %q", opts.Transport, TransportStream, TransportUnary)
	}
	for _, a := range append([]string{target}, opts.Peers...) {
		if opts.Token != "" && opts.TLS == nil && !opts.Insecure && !isLoopback(a) {
			return nil, fmt.Errorf("agentsdk: refusing to send a token over plaintext to %s: set Options.TLS (or Options.Insecure on a trusted network)", a)
		}
	}
	dialTarget, do := target, dialOptions(opts)
	if len(opts.Peers) > 0 {
		dt, r, err := failover(target, opts.Peers)
		if err != nil {
			return nil, fmt.Errorf("agentsdk: dial %s: %w", target, err)
		}
		dialTarget, do = dt, append([]grpc.DialOption{r}, do...)
	}
	conn, err := grpc.NewClient(dialTarget, do...)
	if err != nil {
		return nil, fmt.Errorf("agentsdk: dial %s: %w", target, err)
	}
	if err := waitReady(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("agentsdk: dial %s: %w", target, err)
	}
	c := &Client{conn: conn, rpc: hubsvc.NewHubClient(conn), name: opts.Name, attempts: opts.SendAttempts, budget: opts.RetryBudget, logf: opts.Logf,
		unary: opts.Transport == TransportUnary}
	c.life, c.closed = context.WithCancel(context.Background())
	if c.attempts < 0 {
		c.attempts = 0
	}
	switch {
	case c.budget == 0:
		c.budget = DefaultRetryBudget
	case c.budget < 0:
		c.attempts = 1
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	return c, nil
}

// The fixed flow-control windows (see Options.DialOptions), as the hub's.
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

func dialOptions(opts Options) []grpc.DialOption {
	var do []grpc.DialOption
	if opts.TLS != nil {
		do = append(do, grpc.WithTransportCredentials(credentials.NewTLS(opts.TLS)))
	} else {
		do = append(do, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	switch {
	case opts.Token != "":
		do = append(do, grpc.WithPerRPCCredentials(bearer(opts.Token)))
	case opts.Name != "":
		do = append(do, grpc.WithPerRPCCredentials(devName(opts.Name)))
	}
	// gRPC's default reconnect backoff grows to two minutes; an agent
	// wants its hub back within seconds of a restart.
	bo := backoff.DefaultConfig
	bo.BaseDelay, bo.MaxDelay = 100*time.Millisecond, 5*time.Second
	do = append(do, grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithChainUnaryInterceptor(traceMetadata),
		grpc.WithStaticStreamWindowSize(streamWindow), grpc.WithStaticConnWindowSize(connWindow),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(hubsvc.ClientCodec())))
	return append(do, opts.DialOptions...)
}

// hasClientCert reports whether a TLS config presents a client
// certificate (mTLS: the hub names the agent by its common name).
func hasClientCert(c *tls.Config) bool {
	return c != nil && (len(c.Certificates) > 0 || c.GetClientCertificate != nil)
}

// waitReady connects conn and waits until it is ready or ctx is done.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("connection %s: %w", strings.ToLower(s.String()), ctx.Err())
		}
	}
}

// isLoopback reports whether a gRPC target names a loopback host or a unix
// socket.
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") {
		return true
	}
	if i := strings.Index(target, ":///"); i >= 0 {
		target = target[i+4:]
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearer sends a token on every call.
type bearer string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: Dial already refused plaintext to a
// non-loopback target unless the caller allowed it.
func (bearer) RequireTransportSecurity() bool { return false }

// devName names the agent in development mode.
type devName string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (d devName) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{AgentHeader: string(d)}, nil
}

// RequireTransportSecurity is false: development mode is loopback only.
func (devName) RequireTransportSecurity() bool { return false }

// Close closes the connection. Streams and calls in flight fail.
func (c *Client) Close() error {
	c.closed()
	return c.conn.Close()
}

// Name returns the agent's name as given in Options (empty when a Token
// alone identifies the agent).
func (c *Client) Name() string { return c.name }

// Raw returns the generated gRPC client on the same connection and
// credentials, for calls the SDK does not wrap.
func (c *Client) Raw() hubsvc.HubClient { return c.rpc }
