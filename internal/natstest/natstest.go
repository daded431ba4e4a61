package natstest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// Cluster is a set of embedded NATS servers routed to each other (or one
// server alone).
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	configs []bus.NATSConfig
	edit    func(bus.NATSConfig, *server.Options) error
	servers []*server.Server // nil for a server shut down
}

// An Option changes every server's configuration.
type Option func(*bus.NATSConfig)

// WithCreds makes the servers accept the nodes' user of creds alone (and
// Connect connect as it).
func WithCreds(creds *bus.Creds) Option {
	return func(c *bus.NATSConfig) { c.Creds = creds }
}

// WithTLS makes the servers' clients and routes use TLS (and Connect too).
func WithTLS(tls *bus.TLS) Option {
	return func(c *bus.NATSConfig) { c.TLS = tls }
}

// RunServer starts one JetStream server with no routes: streams on it must
// have one replica.
func RunServer(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	dir := tempDir(t)
	c.startAll(func() []bus.NATSConfig {
		cfg := bus.NATSConfig{Name: "n0", StoreDir: filepath.Join(dir, "n0"), Port: FreePorts(t, 1)[0]}
		for _, o := range opts {
			o(&cfg)
		}
		return []bus.NATSConfig{cfg}
	}, nil)
	return c
}

// RunServerConf starts one JetStream server whose options are read from
// conf, a nats-server configuration (accounts, users), beside the port
// and store directory the test picks.
func RunServerConf(t testing.TB, conf string) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	dir := tempDir(t)
	file := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	c.startAll(func() []bus.NATSConfig {
		return []bus.NATSConfig{{Name: "n0", StoreDir: filepath.Join(dir, "n0"), Port: FreePorts(t, 1)[0]}}
	}, func(cfg bus.NATSConfig, o *server.Options) error {
		parsed, err := server.ProcessConfigFile(file)
		if err != nil {
			return err
		}
		o.Accounts, o.Nkeys, o.Users, o.NoAuthUser = parsed.Accounts, parsed.Nkeys, parsed.Users, parsed.NoAuthUser
		return nil
	})
	return c
}

// RunCluster starts n JetStream servers routed to each other, named n0,
// n1, ….
func RunCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	dir := tempDir(t)
	c.startAll(func() []bus.NATSConfig {
		ports := FreePorts(t, 2*n) // client ports, then route ports
		routes := make([]string, n)
		for i := range n {
			routes[i] = bus.RouteURL("127.0.0.1", ports[n+i])
		}
		cfgs := make([]bus.NATSConfig, n)
		for i := range n {
			name := fmt.Sprintf("n%d", i)
			cfgs[i] = bus.NATSConfig{
				Name:        name,
				StoreDir:    filepath.Join(dir, name),
				Port:        ports[i],
				ClusterName: "test",
				ClusterPort: ports[n+i],
				Routes:      routes,
			}
			for _, o := range opts {
				o(&cfgs[i])
			}
		}
		return cfgs
	}, nil)
	return c
}

// readyTimeout is how long a test server may take to listen: JetStream is
// enabled first, and on a machine whose disk other tests keep busy that
// took more than the default 10 s.
const readyTimeout = 30 * time.Second

// startAttempts bounds how often startAll picks new ports.
const startAttempts = 5

// startAll starts the servers configs returns (each given readyTimeout;
// edit, if set, changes each one's options) and registers their
// shutdown. A port taken between its pick and the server's listen (by
// another test process) fails that server at once: the servers started
// are stopped and all start again on new ports.
func (c *Cluster) startAll(configs func() []bus.NATSConfig, edit func(bus.NATSConfig, *server.Options) error) {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		cfgs := configs()
		for i := range cfgs {
			cfgs[i].ReadyTimeout = readyTimeout
		}
		servers := make([]*server.Server, 0, len(cfgs))
		var err error
		for _, cfg := range cfgs {
			var s *server.Server
			if s, err = start(cfg, edit); err != nil {
				break
			}
			servers = append(servers, s)
		}
		c.edit = edit
		if err == nil {
			c.mu.Lock()
			c.configs, c.servers = cfgs, servers
			c.mu.Unlock()
			for i := range cfgs {
				c.t.Cleanup(func() { c.Shutdown(i) })
			}
			return
		}
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
		if !errors.Is(err, bus.ErrNATSStart) || attempt == startAttempts {
			c.t.Fatalf("natstest: %v", err)
		}
		c.t.Logf("natstest: %v; starting again on new ports", err)
		for _, cfg := range cfgs {
			// A new start needs empty stores: JetStream remembers its peers.
			if err := os.RemoveAll(cfg.StoreDir); err != nil {
				c.t.Fatalf("natstest: %v", err)
			}
		}
	}
}

// start starts one server, its options changed by edit if set.
func start(cfg bus.NATSConfig, edit func(bus.NATSConfig, *server.Options) error) (*server.Server, error) {
	if edit == nil {
		return bus.StartNATS(cfg)
	}
	o, err := cfg.Options()
	if err != nil {
		return nil, err
	}
	if err := edit(cfg, o); err != nil {
		return nil, err
	}
	return cfg.Start(o)
}

// tempDir is a directory removed after the servers stop. Not t.TempDir:
// a server may still be removing an abandoned batch's files when it has
// stopped, and t.TempDir fails the test when its removal races that.
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	t.Cleanup(func() {
		for range 5 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

// FreePorts returns n distinct loopback ports that were free a moment
// ago, for servers that must be told their ports before they start (a
// NATS cluster's routes, hubd's flags). They are picked below the kernel's
// ephemeral range, where a port the kernel hands out meanwhile (the source
// port of some other test's outgoing connection, or another Listen on
// port 0) cannot land; a port another process picks the same way can
// still, rarely, be taken before it is used.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	low := ephemeralLow()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if span := low - 10000; span > 1000 && tries < 50*n {
			addr = fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(span))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				t.Fatalf("natstest: allocating a port: %v", err)
			}
			continue
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range
// (Linux's default, 32768, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}

// Len returns how many servers the cluster was started with.
func (c *Cluster) Len() int { return len(c.configs) }

// Server returns server i, or nil if it is shut down.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Index returns the index of the server named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, cfg := range c.configs {
		if cfg.Name == name {
			return i
		}
	}
	return -1
}

// StoreDir returns the JetStream store directory of server i.
func (c *Cluster) StoreDir(i int) string { return c.configs[i].StoreDir }

// URL returns the client URL of server i (valid after a restart too: the
// ports are fixed).
func (c *Cluster) URL(i int) string {
	scheme := "nats"
	if c.configs[i].TLS != nil {
		scheme = "tls"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, c.configs[i].Port)
}

// URLs returns every server's client URL, comma separated, as nats.Connect
// takes them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.configs))
	for i := range c.configs {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// Shutdown stops server i (a graceful shutdown: its stream and consumer
// leaders hand off). It does nothing to a server already stopped.
func (c *Cluster) Shutdown(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts server i again on its ports and store directory. A port
// still taken (by a connection of another process) is tried again for up
// to ten seconds.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	var s *server.Server
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		s, err = start(c.configs[i], c.edit)
		if err == nil || !errors.Is(err, bus.ErrNATSStart) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		c.t.Fatalf("natstest: restarting %s: %v", c.configs[i].Name, err)
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
}

// Connect opens a client connection to the given servers (all of them if
// none), reconnecting for ever, closed by t.Cleanup: as the nodes' user
// and with TLS if the servers were started so.
func (c *Cluster) Connect(t testing.TB, servers ...int) *nats.Conn {
	t.Helper()
	var opts []nats.Option
	if cr := c.configs[0].Creds; cr != nil {
		opts = append(opts, cr.Option())
	}
	if tc := c.configs[0].TLS; tc != nil {
		opts = append(opts, nats.Secure(tc.ClientConfig()))
	}
	return c.ConnectWith(t, opts, servers...)
}

// ConnectWith opens a client connection to the given servers (all of
// them if none) with opts, as Connect does.
func (c *Cluster) ConnectWith(t testing.TB, opts []nats.Option, servers ...int) *nats.Conn {
	t.Helper()
	if len(servers) == 0 {
		for i := range c.configs {
			servers = append(servers, i)
		}
	}
	urls := make([]string, len(servers))
	for j, i := range servers {
		urls[j] = c.URL(i)
	}
	nc, err := nats.Connect(strings.Join(urls, ","), append([]nats.Option{
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.Timeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("natstest: connecting to %v: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
