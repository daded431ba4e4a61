package bus

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// NATSConfig configures an embedded NATS server with JetStream: what
// `hubd serve --embed-nats` runs inside each hubd process, so a three-node
// deployment is three hubd processes and nothing else.
type NATSConfig struct {
	// Name is the server's name, unique in the cluster (required): the
	// node id is a good choice.
	Name string
	// StoreDir is JetStream's storage directory (required).
	StoreDir string
	// Host is the client listen address; default 127.0.0.1.
	Host string
	// Port is the client port; 0 means a random free port (-1 to the
	// server).
	Port int
	// ClusterName names the NATS cluster; default "hubd".
	ClusterName string
	// ClusterHost is the route listen address; default Host.
	ClusterHost string
	// ClusterPort is the route port. 0 runs a single server with no
	// routes: streams must then have one replica.
	ClusterPort int
	// Routes are the route URLs (nats-route://host:port or host:port) of
	// every server of the cluster; this server's own may be among them.
	// Required with a ClusterPort: a clustered JetStream server with no
	// routes refuses to start.
	Routes []string
	// Creds, when set, make the server accept one user alone: the nodes'
	// (Creds.Option), with NodePermissions; a client with no credentials
	// or others is refused at connect. Routes are then authenticated too,
	// with a user and password derived from Creds, which every server of
	// the cluster holds. Without Creds the server accepts anyone.
	Creds *Creds
	// TLS, when set with a certificate, makes the client listener TLS
	// only (clients verify the certificate) and routes mutual TLS, both
	// ends verified against the CA. The node itself connects in-process
	// (InProcess), needing neither.
	TLS *TLS
	// MaxBatchInflightPerStream raises the server's limit of atomic batches
	// open at once per stream (the server's default is 50); 0 keeps it.
	MaxBatchInflightPerStream int
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10s.
	ReadyTimeout time.Duration
	// Logger receives the server's warnings and errors; default none.
	Logger zerolog.Logger
}

// ErrNATSConfig reports an invalid NATSConfig.
var ErrNATSConfig = errors.New("bus: invalid NATS config")

// Validate reports a missing required field or an unusable route.
func (c NATSConfig) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, fmt.Errorf("%w: Name is required", ErrNATSConfig))
	}
	if c.StoreDir == "" {
		errs = append(errs, fmt.Errorf("%w: StoreDir is required", ErrNATSConfig))
	}
	if c.ClusterPort != 0 && len(c.Routes) == 0 {
		errs = append(errs, fmt.Errorf("%w: a cluster needs Routes (JetStream refuses a cluster with none)", ErrNATSConfig))
	}
	if _, err := routeURLs(c.Routes); err != nil {
		errs = append(errs, err)
	}
	if c.TLS != nil && !c.TLS.serves() {
		errs = append(errs, fmt.Errorf("%w: TLS without a certificate to serve", ErrNATSConfig))
	}
	return errors.Join(errs...)
}

// Options returns the nats-server options of c: JetStream on, with
// SyncAlways (`sync_interval: always`): every write is fsynced before it
// is acknowledged, which hubd's promise that an acknowledged envelope is
// never lost requires; authentication and TLS as Creds and TLS say.
func (c NATSConfig) Options() (*server.Options, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := c.Port
	if port == 0 {
		port = -1
	}
	o := &server.Options{
		ServerName:   c.Name,
		Host:         host,
		Port:         port,
		JetStream:    true,
		StoreDir:     c.StoreDir,
		SyncAlways:   true,
		SyncInterval: 2 * time.Minute, // what `sync_interval: always` sets beside SyncAlways
		NoSigs:       true,
		JetStreamLimits: server.JSLimitOpts{
			MaxBatchInflightPerStream: c.MaxBatchInflightPerStream,
		},
	}
	if c.ClusterPort != 0 {
		routes, _ := routeURLs(c.Routes)
		ch := c.ClusterHost
		if ch == "" {
			ch = host
		}
		name := c.ClusterName
		if name == "" {
			name = "hubd"
		}
		o.Cluster = server.ClusterOpts{Name: name, Host: ch, Port: c.ClusterPort}
		o.Routes = routes
	}
	c.secure(o)
	return o, nil
}

// tlsTimeout bounds a TLS handshake, in seconds.
const tlsTimeout = 2

// secure sets o's authentication and TLS from c.Creds and c.TLS.
func (c NATSConfig) secure(o *server.Options) {
	if c.Creds != nil {
		o.Nkeys = []*server.NkeyUser{{Nkey: c.Creds.PublicKey(), Permissions: NodePermissions()}}
		if o.Cluster.Port != 0 {
			user, pass := c.Creds.routeAuth()
			o.Cluster.Username, o.Cluster.Password = user, pass
			for _, r := range o.Routes {
				r.User = url.UserPassword(user, pass)
			}
		}
	}
	if c.TLS != nil {
		o.TLSConfig, o.TLSTimeout = c.TLS.serverConfig(), tlsTimeout
		if o.Cluster.Port != 0 {
			o.Cluster.TLSConfig, o.Cluster.TLSTimeout = c.TLS.routeConfig(), tlsTimeout
		}
	}
}

// routeURLs parses route addresses, adding the nats-route scheme to bare
// host:port ones.
func routeURLs(routes []string) ([]*url.URL, error) {
	out := make([]*url.URL, 0, len(routes))
	for _, r := range routes {
		if _, _, err := net.SplitHostPort(r); err == nil {
			r = "nats-route://" + r
		}
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%w: route %q: want nats-route://host:port", ErrNATSConfig, r)
		}
		out = append(out, u)
	}
	return out, nil
}

// ErrNATSStart reports an embedded NATS server that failed as it started,
// most often because a port it was given is taken; the error names the
// server's own message.
var ErrNATSStart = errors.New("bus: nats server failed to start")

// StartNATS starts an embedded NATS server with JetStream as c describes
// and waits until it accepts connections. In a cluster JetStream is usable
// only once a meta leader is elected, a little later: clients retry their
// first requests (see wal/jetstream.Open). A server that cannot listen on
// a port it was given fails at once with ErrNATSStart (it does not wait
// out ReadyTimeout). Stop it with Shutdown.
func StartNATS(c NATSConfig) (*server.Server, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	return c.Start(o)
}

// Start starts a server with the options o, as StartNATS does with
// c.Options(): for options NATSConfig does not describe (a test's
// accounts), c giving the name, the readiness wait and the logger.
func (c NATSConfig) Start(o *server.Options) (*server.Server, error) {
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("bus: nats server %s: %w", c.Name, err)
	}
	fatal := make(chan string, 1)
	s.SetLoggerV2(natsLogger{l: c.Logger.With().Str("nats_server", c.Name).Logger(), fatal: fatal}, false, false, false)
	s.Start()
	wait := c.ReadyTimeout
	if wait == 0 {
		wait = 10 * time.Second
	}
	for deadline := time.Now().Add(wait); ; {
		// Readiness is polled in short slices: a listener that failed
		// leaves the server never ready, and its fatal message says why.
		if s.ReadyForConnections(50 * time.Millisecond) {
			return s, nil
		}
		select {
		case msg := <-fatal:
			s.Shutdown()
			return nil, fmt.Errorf("%w: %s: %s", ErrNATSStart, c.Name, msg)
		default:
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return nil, fmt.Errorf("bus: nats server %s not ready after %v", c.Name, wait)
		}
	}
}

// InProcess is the client option that connects to s inside the process
// (no socket, no TLS: what a node uses for its own embedded server).
func InProcess(s *server.Server) nats.Option { return nats.InProcessServer(s) }

// ClientURL returns the URL a client connects to s with.
func ClientURL(s *server.Server) string { return s.ClientURL() }

// RouteURL formats host and port as a route URL for NATSConfig.Routes.
func RouteURL(host string, port int) string {
	return "nats-route://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// natsLogger bridges the server's log to zerolog: warnings and errors
// only, the notices being too chatty for a hub's log. The first fatal
// message also goes to fatal, for StartNATS to report.
type natsLogger struct {
	l     zerolog.Logger
	fatal chan<- string
}

func (n natsLogger) Noticef(string, ...any) {}
func (n natsLogger) Debugf(string, ...any)  {}
func (n natsLogger) Tracef(string, ...any)  {}
func (n natsLogger) Warnf(f string, a ...any) {
	n.l.Warn().Str("from", "nats").Msg(fmt.Sprintf(f, a...))
}
func (n natsLogger) Errorf(f string, a ...any) {
	n.l.Error().Str("from", "nats").Msg(fmt.Sprintf(f, a...))
}
func (n natsLogger) Fatalf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	n.l.Error().Str("from", "nats").Str("level_nats", "fatal").Msg(msg)
	select {
	case n.fatal <- msg:
	default:
	}
}
