package bus_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/wal/jetstream"
)

// TestStartNATSSecure: two embedded servers with the nodes' credentials
// and TLS route to each other (mutual TLS, the route password derived
// from the credentials) and carry the nodes' messages; a client with no
// credentials, with other credentials, or without TLS is refused at
// connect; the nodes' user may publish only to the nodes' subjects; and
// a route without the CA's certificate, or with it but not the
// credentials, is refused.
func TestStartNATSSecure(t *testing.T) {
	dir := t.TempDir()
	_, creds := natstest.WriteCreds(t, dir, "nats.creds")
	_, other := natstest.WriteCreds(t, dir, "other.creds")
	files := natstest.WriteTLS(t, dir)
	tlsFiles := files.Load(t)
	c := natstest.RunCluster(t, 2, natstest.WithCreds(creds), natstest.WithTLS(tlsFiles))

	// The nodes' messages cross the route.
	nc0 := c.Connect(t, 0)
	sub, err := nc0.SubscribeSync("_INBOX.route-test")
	if err != nil {
		t.Fatal(err)
	}
	nc0.Flush()
	pub := c.Connect(t, 1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := pub.Publish("_INBOX.route-test", []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if m, err := sub.NextMsg(200 * time.Millisecond); err == nil && string(m.Data) == "hi" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message across the route (routes: %d)", c.Server(0).NumRoutes())
		}
	}

	// Clients without the nodes' credentials, or without TLS, are refused.
	for name, opts := range map[string][]nats.Option{
		"no credentials":    {nats.Secure(tlsFiles.ClientConfig())},
		"other credentials": {nats.Secure(tlsFiles.ClientConfig()), other.Option()},
		"a password":        {nats.Secure(tlsFiles.ClientConfig()), nats.UserInfo("hubd-route", "guess")},
		"no TLS":            {creds.Option()},
	} {
		nc, err := nats.Connect(strings.Replace(c.URL(0), "tls://", "nats://", 1), append(opts, nats.Timeout(5*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		want := "authorization violation"
		if name == "no TLS" {
			want = "tls" // the server requires it; without the CA the client cannot verify it
		}
		if !strings.Contains(strings.ToLower(err.Error()), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}

	// The nodes' user publishes to the nodes' subjects only.
	errs := make(chan error, 4)
	nc := c.ConnectWith(t, []nats.Option{creds.Option(), nats.Secure(tlsFiles.ClientConfig()),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })}, 0)
	if err := nc.Publish("elsewhere", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), `Permissions Violation for Publish to "elsewhere"`) {
			t.Errorf("publish outside the nodes' subjects: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("publish outside the nodes' subjects: no permissions violation")
	}

	// Routes: TLS without a certificate the CA signed, and a route
	// CONNECT without the derived password, are refused.
	route := c.Server(0).ClusterAddr().String()
	if err := routeHandshake(route, &tls.Config{InsecureSkipVerify: true}, ""); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a route with no client certificate: %v, want a TLS refusal", err)
	}
	rc := tlsFiles.ClientConfig()
	rc.ServerName = "127.0.0.1"
	if err := routeHandshake(route, rc, `{"user":"hubd-route","pass":"guess","name":"intruder","cluster":"test"}`); err == nil ||
		!strings.Contains(err.Error(), "Authorization Violation") {
		t.Errorf("a route with the CA's certificate but no password: %v, want an authorization violation", err)
	}
}

// routeHandshake speaks a route's protocol to addr: TLS with cfg (a TLS
// route listener expects it at once), then CONNECT (if given) and PING; it
// returns the server's error, or nil for a PONG.
func routeHandshake(addr string, cfg *tls.Config, connect string) error {
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(raw, cfg)
	if err := conn.Handshake(); err != nil {
		return err
	}
	if connect != "" {
		fmt.Fprintf(conn, "CONNECT %s\r\n", connect)
	}
	fmt.Fprint(conn, "PING\r\n")
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("%s", strings.TrimSpace(line))
		case strings.HasPrefix(line, "PONG"):
			return nil
		}
	}
}

// TestNodePermissions: the nodes' user may publish on the partition
// streams' subjects, whatever the log calls them.
func TestNodePermissions(t *testing.T) {
	want := jetstream.DefaultSubjectPrefix + ".>"
	if p := bus.NodePermissions(); !slices.Contains(p.Publish.Allow, want) {
		t.Fatalf("the nodes may publish on %v, not on the log's %s", p.Publish.Allow, want)
	}
}
