package natstest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster"
)

// Cluster is a set of embedded NATS servers routed to each other (or one
// server alone).
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	configs []cluster.NATSConfig
	servers []*server.Server // nil for a server shut down
}

// RunServer starts one JetStream server with no routes: streams on it must
// have one replica.
func RunServer(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	cfg := cluster.NATSConfig{Name: "n0", StoreDir: filepath.Join(tempDir(t), "n0"), Port: freePort(t)}
	c.start(cfg)
	return c
}

// RunCluster starts n JetStream servers routed to each other, named n0,
// n1, ….
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	clientPorts, routePorts := make([]int, n), make([]int, n)
	routes := make([]string, n)
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
		routes[i] = cluster.RouteURL("127.0.0.1", routePorts[i])
	}
	dir := tempDir(t)
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		c.start(cluster.NATSConfig{
			Name:        name,
			StoreDir:    filepath.Join(dir, name),
			Port:        clientPorts[i],
			ClusterName: "test",
			ClusterPort: routePorts[i],
			Routes:      routes,
		})
	}
	return c
}

// start starts a server and registers its shutdown.
func (c *Cluster) start(cfg cluster.NATSConfig) {
	c.t.Helper()
	s, err := cluster.StartNATS(cfg)
	if err != nil {
		c.t.Fatalf("natstest: %v", err)
	}
	c.mu.Lock()
	i := len(c.configs)
	c.configs = append(c.configs, cfg)
	c.servers = append(c.servers, s)
	c.mu.Unlock()
	c.t.Cleanup(func() { c.Shutdown(i) })
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

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: allocating a port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// URL returns the client URL of server i (valid after a restart too: the
// ports are fixed).
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.configs[i].Port)
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

// Restart starts server i again on its ports and store directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	s, err := cluster.StartNATS(c.configs[i])
	if err != nil {
		c.t.Fatalf("natstest: restarting %s: %v", c.configs[i].Name, err)
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
}

// Connect opens a client connection to the given servers (all of them if
// none), reconnecting for ever, closed by t.Cleanup.
func (c *Cluster) Connect(t testing.TB, servers ...int) *nats.Conn {
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
	nc, err := nats.Connect(strings.Join(urls, ","),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("natstest: connecting to %v: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
