package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/natstest"
)

// TestE2EServeClusterBusSafety runs the real binary with a cluster bus
// anyone could use to act as any agent, or one in cleartext off loopback,
// or incomplete bus flags: each is refused at start (exit 2) with a
// message naming the flags; --insecure-nats starts, saying what it gives
// up.
func TestE2EServeClusterBusSafety(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-secret-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "nats.creds")
	if code, out, errs := hubd(t, "cluster", "creds", creds); code != 0 || !strings.Contains(out, "nkey: U") {
		t.Fatalf("cluster creds: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := hubd(t, "cluster", "creds", creds); code != 2 || !strings.Contains(errs, "exists") {
		t.Errorf("cluster creds over an existing file: exit %d, %s", code, errs)
	}
	open := filepath.Join(dir, "open.creds")
	b, _ := os.ReadFile(creds)
	if err := os.WriteFile(open, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	tls := natstest.WriteTLS(t, dir)
	embed := []string{"--embed-nats", "--node-id", "n1"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tokens and an open bus on all interfaces", append([]string{"--tokens", tokens, "--nats-listen", "0.0.0.0:4222"}, embed...),
			"the cluster bus on --nats-listen 0.0.0.0:4222 would accept clients with no credentials"},
		{"an open bus on all interfaces", append([]string{"--nats-listen", "0.0.0.0:4222"}, embed...), "give --nats-creds"},
		{"routes to other hosts without credentials", append([]string{"--nats-route-listen", "127.0.0.1:6222", "--nats-routes", "127.0.0.1:6222,h2:6222"}, embed...),
			"--nats-routes h2:6222 would accept clients with no credentials"},
		{"an external bus off loopback", []string{"--cluster", "nats://10.1.2.3:4222", "--node-id", "n1"}, "--cluster nats://10.1.2.3:4222 would accept"},
		{"tokens and an open bus on loopback", append([]string{"--tokens", tokens}, embed...), "would let any local process act as any agent: give --nats-creds"},
		{"credentials in cleartext on all interfaces", append([]string{"--nats-creds", creds, "--nats-listen", "0.0.0.0:4222"}, embed...),
			"the cluster bus on --nats-listen 0.0.0.0:4222 would carry calls and records in cleartext: give --nats-tls-cert"},
		{"credentials to an external bus in cleartext", []string{"--cluster", "nats://10.1.2.3:4222", "--node-id", "n1", "--nats-creds", creds}, "in cleartext"},
		{"credentials others may read", append([]string{"--nats-creds", open}, embed...), "is open to its group or others (mode 0644)"},
		{"a certificate without its key", append([]string{"--nats-creds", creds, "--nats-tls-cert", tls.Cert, "--nats-tls-ca", tls.CA}, embed...),
			"--nats-tls-cert and --nats-tls-key go together"},
		{"a certificate without a CA", append([]string{"--nats-creds", creds, "--nats-tls-cert", tls.Cert, "--nats-tls-key", tls.Key}, embed...),
			"--nats-tls-cert needs --nats-tls-ca"},
		{"bus flags without a cluster", []string{"--nats-creds", creds}, "need --cluster or --embed-nats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--http", "off", "--data", t.TempDir()}, tc.args...)
			code, _, errs := hubd(t, args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 with %q", code, errs, tc.want)
			}
		})
	}
	ports := natstest.FreePorts(t, 1)
	d := startDaemon(t, t.TempDir(), "127.0.0.1:0", "--http", "off", "--embed-nats", "--node-id", "n1", "--partitions", "2",
		"--nats-listen", "0.0.0.0:"+strconv.Itoa(ports[0]), "--insecure-nats")
	d.stop(syscall.SIGTERM)
	if code := d.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(d.log(), "--insecure-nats: the cluster bus asks for no credentials") {
		t.Errorf("--insecure-nats on 0.0.0.0: exit %d\n%s", code, d.log())
	}
}

// TestE2EClusterSecureBus: two nodes whose embedded NATS servers take
// the nodes' credentials and TLS (routes mutual TLS) form a cluster:
// `hubd cluster status` reads it with the credentials and the CA, calls
// for a session the other node serves are forwarded (proven calls over
// the routes) and listings gathered; a NATS client without TLS, with TLS
// but no credentials, or with other credentials is refused by the
// servers (and cluster status without the credentials says to give them).
func TestE2EClusterSecureBus(t *testing.T) {
	dir := t.TempDir()
	files := natstest.WriteTLS(t, dir)
	c := startNodesBus(t, 2, nil, &files)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ids []string
	for i := range c.nodes {
		resp, err := dialWith(t, c.nodes[i].addr, "x-hubd-agent", "alice").Open(ctx, &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatalf("open through %s: %v", c.ids[i], err)
		}
		ids = append(ids, resp.GetSession().GetMeta().GetSessionId())
	}
	for i, id := range ids {
		other := c.nodes[1-i].addr // the node that does not serve it
		if info, err := dialWith(t, other, "x-hubd-agent", "bob").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); err != nil ||
			info.GetMeta().GetSessionId() != id {
			t.Fatalf("GetSession(%s) through %s: %v, %v\n%s", id, c.ids[1-i], info, err, c.trouble())
		}
	}
	list, err := dialWith(t, c.nodes[0].addr, "x-hubd-agent", "bob").ListSessions(ctx, &hubpb.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 2 {
		t.Fatalf("ListSessions: %v, %v", list, err)
	}

	creds, err := bus.LoadCreds(c.bus[1])
	if err != nil {
		t.Fatal(err)
	}
	_, other := natstest.WriteCreds(t, dir, "other.creds")
	busTLS := files.Load(t)
	port := strings.TrimPrefix(c.nats[0], "tls://")
	for name, opts := range map[string][]nats.Option{
		"no TLS":            {creds.Option()},
		"no credentials":    {nats.Secure(busTLS.ClientConfig())},
		"other credentials": {nats.Secure(busTLS.ClientConfig()), other.Option()},
	} {
		nc, err := nats.Connect("nats://"+port, append(opts, nats.Timeout(5*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("a client with %s connected to %s's NATS server", name, c.ids[0])
		} else if want := map[string]string{"no TLS": "tls"}[name]; !strings.Contains(strings.ToLower(err.Error()), want) ||
			(want == "" && !strings.Contains(err.Error(), "Authorization Violation")) {
			t.Errorf("a client with %s: %v", name, err)
		}
	}
	if code, _, errs := hubd(t, "cluster", "status", "--nats", c.nats[0], "--nats-tls-ca", files.CA); code != 1 || !strings.Contains(errs, "give --nats-creds") {
		t.Errorf("cluster status without the credentials: exit %d, %s", code, errs)
	}
	nc, err := nats.Connect(c.nats[0], creds.Option(), nats.Secure(busTLS.ClientConfig()), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("a client with the nodes' credentials and TLS: %v", err)
	}
	nc.Close()
}
