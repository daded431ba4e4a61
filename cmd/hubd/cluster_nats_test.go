package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/natstest"
)

// natsServerBinary builds nats-server from the module go.mod already
// requires, once per run.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	return buildBinary(t, "github.com/nats-io/nats-server/v2")
}

// natsProc is one nats-server process of a natsProcs cluster.
type natsProc struct {
	name    string
	conf    string // its configuration file
	client  int    // client port
	monitor int    // HTTP monitoring port
	cmd     *exec.Cmd
	logs    procOutput
	exited  chan struct{}
}

func (p *natsProc) log() string { return p.logs.String() }

// natsProcs is a NATS cluster of separate nats-server processes: a server
// can be killed with SIGKILL without a hubd process going with it.
type natsProcs struct {
	bin   string
	procs []*natsProc
}

// startNATSProcs starts n nats-server processes routed to each other on
// loopback, each with JetStream on file storage in its own directory and
// `sync_interval: always`, as docs/SCALING.md asks of an external cluster.
func startNATSProcs(t *testing.T, n int) *natsProcs {
	t.Helper()
	c := &natsProcs{bin: natsServerBinary(t)}
	ports := natstest.FreePorts(t, 3*n) // client, route, monitoring per server
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
	}
	dir := t.TempDir()
	for i := range n {
		p := &natsProc{name: fmt.Sprintf("s%d", i+1), client: ports[i], monitor: ports[2*n+i]}
		p.conf = filepath.Join(dir, p.name+".conf")
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
max_payload: 1MB
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: hubd-e2e
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, p.name, p.client, p.monitor, filepath.Join(dir, p.name), ports[n+i], strings.Join(routes, ", "))
		if err := os.WriteFile(p.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.procs = append(c.procs, p)
		c.start(t, i)
	}
	return c
}

// start starts server i from its configuration (again, after a kill: the
// same ports and store directory).
func (c *natsProcs) start(t *testing.T, i int) {
	t.Helper()
	p := c.procs[i]
	p.cmd = exec.Command(c.bin, "-c", p.conf)
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, exited := p.cmd, p.exited
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { c.kill(i) })
}

// kill stops server i with SIGKILL and waits for it to exit.
func (c *natsProcs) kill(i int) {
	p := c.procs[i]
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// urls returns every server's client URL, comma-separated.
func (c *natsProcs) urls() string {
	var out []string
	for _, p := range c.procs {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", p.client))
	}
	return strings.Join(out, ",")
}

// index returns the index of the server named name, or -1.
func (c *natsProcs) index(name string) int {
	for i, p := range c.procs {
		if p.name == name {
			return i
		}
	}
	return -1
}

// healthy reports whether server i's JetStream is current: its
// monitoring endpoint's /healthz (every stream and consumer it holds a
// replica of caught up).
func (c *natsProcs) healthy(i int) bool {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.procs[i].monitor))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startNodesOn starts three hubd nodes on an external NATS cluster of
// separate processes (--cluster, no --embed-nats), with extra serve flags.
func startNodesOn(t *testing.T, ns *natsProcs, extra ...string) *hubCluster {
	t.Helper()
	const n = 3
	ports := natstest.FreePorts(t, n)
	c := &hubCluster{}
	dir := t.TempDir()
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		c.ids = append(c.ids, id)
		c.nats = append(c.nats, fmt.Sprintf("nats://127.0.0.1:%d", ns.procs[i%len(ns.procs)].client))
		args := []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--http", "off",
			"--data", filepath.Join(dir, id), "--log-format", "json", "--node-id", id,
			"--partitions", strconv.Itoa(e2ePartitions), "--cluster", ns.urls()}
		c.args = append(c.args, append(args, extra...))
		c.nodes = append(c.nodes, nil)
	}
	c.startAll(t, 30*time.Second)
	return c
}

// TestE2EClusterKillNATSLeader kills, with SIGKILL, the nats-server
// process that leads the busiest partition stream, under hubload --verify
// spread over three hubd nodes (the NATS servers are separate processes,
// so no hubd dies with it): the stream elects a new leader among the two
// survivors, the writes that paused for the election go on being
// acknowledged, the killed server restarts and catches up, and hubload
// --check finds every acknowledged envelope, each session's seqs dense and
// no ended session reopened.
func TestE2EClusterKillNATSLeader(t *testing.T) {
	t.Parallel() // mostly waiting on leases and restarts: it overlaps another such test
	ns := startNATSProcs(t, 3)
	// A lease above the time an election takes (about 5 s here), as in
	// production: the leases ride out the election and the writes resume
	// where they paused, on the same owners.
	c := startNodesOn(t, ns, "--lease-ttl", "10s")
	nc, err := nats.Connect(ns.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	load := buildBinary(t, "./cmd/hubload")
	verify := filepath.Join(t.TempDir(), "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", c.addrs(), "--agents", "12", "--sessions", "6", "--duration", "90s",
		"--warmup", "0s", "--verify", verify)
	defer lg.Process.Kill()
	progress := func(what string, n int, within time.Duration) time.Duration {
		t.Helper()
		start, from := time.Now(), countLines(verify)
		for countLines(verify) < from+n && time.Since(start) < within {
			time.Sleep(20 * time.Millisecond)
		}
		if got := countLines(verify) - from; got < n {
			t.Fatalf("%s: %d sends acknowledged in %v, want %d\nload:\n%s", what, got, within, n, lgOut.String())
		}
		return time.Since(start)
	}
	progress("before the kill", 300, 30*time.Second)

	// The busiest partition stream, and the server that leads it.
	stream, leader, msgs := "", "", uint64(0)
	for k := range e2ePartitions {
		name := fmt.Sprintf("HUB_P%02d", k)
		var si *nats.StreamInfo
		waitFor(t, "stream info "+name, 15*time.Second, func() bool {
			si, err = js.StreamInfo(name)
			return err == nil
		})
		if si.Cluster == nil || si.Cluster.Leader == "" {
			t.Fatalf("stream %s has no leader: %+v", name, si.Cluster)
		}
		if si.State.Msgs > msgs {
			stream, leader, msgs = name, si.Cluster.Leader, si.State.Msgs
		}
	}
	victim := ns.index(leader)
	if victim < 0 {
		t.Fatalf("stream %s is led by %q, not one of the servers started", stream, leader)
	}
	before := countLines(verify)
	stall := watchStall(ctx, verify)
	killed := time.Now()
	ns.kill(victim)
	t.Logf("killed %s, leader of %s (%d messages), after %d acknowledged sends", leader, stream, msgs, before)

	// The stream elects a new leader among the survivors.
	var newLeader string
	waitFor(t, stream+" elects a new leader", 30*time.Second, func() bool {
		si, err := js.StreamInfo(stream)
		if err == nil && si.Cluster != nil && si.Cluster.Leader != "" && si.Cluster.Leader != leader {
			newLeader = si.Cluster.Leader
			return true
		}
		return false
	})
	elected := time.Since(killed)
	// The writes resume: the load is acknowledged again, on the stream
	// that lost its leader too.
	resumed := progress("after the leader's kill", 300, 30*time.Second)
	var after uint64
	waitFor(t, stream+" takes writes again", 30*time.Second, func() bool {
		si, err := js.StreamInfo(stream)
		if err == nil {
			after = si.State.Msgs
		}
		return after > msgs
	})
	t.Logf("%s elected %s %v after the kill; 300 more sends acknowledged %v after that; the longest stretch with no send acknowledged: %v; %s grew from %d to %d messages",
		stream, newLeader, elected.Round(time.Millisecond), resumed.Round(time.Millisecond), stall().Round(time.Millisecond),
		stream, msgs, after)

	// The killed server restarts from its store directory and catches up.
	ns.start(t, victim)
	waitFor(t, leader+" restarted and current", 60*time.Second, func() bool { return ns.healthy(victim) })
	progress("after the restart", 100, 30*time.Second)

	lg.Process.Signal(syscall.SIGINT)
	lg.Wait()
	acked := countLines(verify)
	out, err := exec.CommandContext(ctx, load, "--hub", c.addrs(), "--check", verify).CombinedOutput()
	first := strings.SplitN(string(out), "\n", 2)[0]
	if err != nil || first != fmt.Sprintf("acked %d, found %d", acked, acked) {
		t.Fatalf("check after kill -9 of a NATS stream leader: %v\n%s\nload:\n%s\nkilled server's log:\n%s",
			err, out, lgOut.String(), ns.procs[victim].log())
	}
	for i, d := range c.nodes {
		if n := strings.Count(d.log(), "partition no longer served"); n > 0 {
			t.Logf("%s gave up %d partitions during the election", c.ids[i], n)
		}
	}
	t.Logf("%s; load: %s", first, strings.SplitN(lgOut.String(), "\n", 3)[1])
}

// watchStall samples how many sends path lists, every 10ms until ctx
// ends; the function it returns gives the longest stretch so far in which
// the count did not grow.
func watchStall(ctx context.Context, path string) func() time.Duration {
	var mu sync.Mutex
	var longest time.Duration
	go func() {
		last, since := countLines(path), time.Now()
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			n := countLines(path)
			mu.Lock()
			if n != last {
				last, since = n, time.Now()
			} else {
				longest = max(longest, time.Since(since))
			}
			mu.Unlock()
		}
	}()
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return longest
	}
}
