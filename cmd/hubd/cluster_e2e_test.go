package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// The cluster end-to-end tests run three real hubd processes, each with
// its embedded NATS server routed to the others (--embed-nats): the whole
// deployment of docs/SCALING.md, on loopback. P = 8, a 2s lease.
const (
	e2ePartitions = 8
	e2eLease      = 2 * time.Second
)

// hubCluster is three hubd nodes.
type hubCluster struct {
	nodes []*daemon
	ids   []string
	nats  []string   // client URLs of the NATS servers
	args  [][]string // each node's hubd arguments, for a restart
	bus   []string   // the flags a client of the NATS servers needs: the nodes' credentials, the CA
}

// startCluster starts three hubd nodes together (each waits for a NATS
// quorum before it listens) and returns once all three listen. With
// external, the NATS servers run in the test process (natstest) and the
// nodes connect to them (--cluster); otherwise each node embeds its own
// (--embed-nats).
func startCluster(t *testing.T, external bool, extra ...string) *hubCluster {
	t.Helper()
	var ext *natstest.Cluster
	if external {
		ext = natstest.RunCluster(t, 3)
	}
	return startNodes(t, 3, ext, extra...)
}

// startNodes starts n hubd nodes on ext's NATS servers, or (ext nil) each
// with its own embedded one, the nodes holding credentials, with extra
// serve flags.
func startNodes(t *testing.T, n int, ext *natstest.Cluster, extra ...string) *hubCluster {
	t.Helper()
	return startNodesBus(t, n, ext, nil, extra...)
}

// startNodesBus is startNodes, the embedded servers' clients and routes on
// TLS with the certificate of tls if given.
func startNodesBus(t *testing.T, n int, ext *natstest.Cluster, tls *natstest.TLSFiles, extra ...string) *hubCluster {
	t.Helper()
	external := ext != nil
	ports := natstest.FreePorts(t, 3*n) // gRPC, NATS client, NATS route per node
	c := &hubCluster{}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", ports[2*n+i]))
	}
	dir := t.TempDir()
	scheme := "nats"
	if !external {
		creds, _ := natstest.WriteCreds(t, dir, "nats.creds")
		c.bus = []string{"--nats-creds", creds}
		if tls != nil {
			c.bus, scheme = append(c.bus, "--nats-tls-ca", tls.CA), "tls"
			extra = append([]string{"--nats-tls-cert", tls.Cert, "--nats-tls-key", tls.Key}, extra...)
		}
	}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		c.ids = append(c.ids, id)
		d := &daemon{t: t, data: filepath.Join(dir, id), closed: make(chan struct{})}
		args := []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--http", "off",
			"--data", d.data, "--log-format", "json", "--node-id", id, "--partitions", strconv.Itoa(e2ePartitions),
			"--lease-ttl", e2eLease.String()}
		if external {
			c.nats = append(c.nats, ext.URL(i%ext.Len()))
			args = append(args, "--cluster", ext.URLs())
		} else {
			c.nats = append(c.nats, fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[n+i]))
			args = append(args, "--embed-nats", "--nats-listen", fmt.Sprintf("127.0.0.1:%d", ports[n+i]),
				"--nats-route-listen", routes[i], "--nats-routes", strings.Join(routes, ","))
		}
		args = append(args, c.bus...)
		c.args = append(c.args, append(args, extra...))
		c.nodes = append(c.nodes, nil)
	}
	c.startAll(t, 20*time.Second)
	return c
}

// startAll starts every node's process, waits for each to listen, then
// for the partitions to spread over all of them within the time given.
func (c *hubCluster) startAll(t *testing.T, within time.Duration) {
	t.Helper()
	listening := make([]chan string, len(c.args))
	for i := range c.args {
		listening[i] = c.spawn(t, i)
	}
	for i := range c.args {
		c.await(t, i, listening[i])
	}
	c.waitSpread(t, c.ids, within)
}

// spawn starts node i's process; await waits for it to listen.
func (c *hubCluster) spawn(t *testing.T, i int) chan string {
	t.Helper()
	d := &daemon{t: t, data: c.args[i][slices.Index(c.args[i], "--data")+1], closed: make(chan struct{})}
	d.cmd = exec.Command(hubdBinary(t), c.args[i]...)
	stderr, _ := d.cmd.StderrPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go d.collect(stderr, listening)
	t.Cleanup(func() { d.stop(syscall.SIGKILL) })
	c.nodes[i] = d
	return listening
}

func (c *hubCluster) await(t *testing.T, i int, listening chan string) {
	t.Helper()
	d := c.nodes[i]
	select {
	case d.addr = <-listening:
	case <-d.closed:
		t.Fatalf("node %s did not start:\n%s", c.ids[i], d.log())
	case <-time.After(40 * time.Second):
		t.Fatalf("node %s did not listen within 40s:\n%s", c.ids[i], d.log())
	}
}

// addrs returns the gRPC addresses of the nodes not in skip, comma-
// separated (hubload's --hub).
func (c *hubCluster) addrs(skip ...int) string {
	var out []string
	for i, d := range c.nodes {
		if !slices.Contains(skip, i) {
			out = append(out, d.addr)
		}
	}
	return strings.Join(out, ",")
}

// status runs `hubd cluster status --json` against NATS server i.
func (c *hubCluster) status(t *testing.T, i int) (*clusterState, bool) {
	t.Helper()
	code, out, _ := hubd(t, append([]string{"cluster", "status", "--nats", c.nats[i], "--json"}, c.bus...)...)
	if code != 0 {
		return nil, false
	}
	var st clusterState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("cluster status --json: %v\n%s", err, out)
	}
	return &st, true
}

// trouble returns the last warnings and errors each node logged (NATS's
// own route retries left out), for a failure's message.
func (c *hubCluster) trouble() string {
	var b strings.Builder
	for i, d := range c.nodes {
		var lines []string
		for _, l := range strings.Split(d.log(), "\n") {
			if (strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`)) &&
				!strings.Contains(l, "Error trying to connect to route") {
				lines = append(lines, l)
			}
		}
		fmt.Fprintf(&b, "node %s, its last warnings and errors:\n%s\n", c.ids[i], strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	return b.String()
}

// waitSpread waits until every partition is owned by one of owners, each
// owning some, as NATS server of owners[0]'s index reports; it returns how
// long that took.
func (c *hubCluster) waitSpread(t *testing.T, owners []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	via := slices.Index(c.ids, owners[0])
	var last *clusterState
	for time.Since(start) < within {
		if st, ok := c.status(t, via); ok {
			last = st
			counts := map[string]int{}
			for _, p := range st.Partitions {
				counts[p.Owner]++
			}
			n := 0
			for _, o := range owners {
				if counts[o] > 0 {
					n += counts[o]
				}
			}
			// Balanced too: no node holds more than its share, so none
			// is about to hand partitions back.
			balanced := true
			for _, o := range owners {
				balanced = balanced && counts[o] <= (e2ePartitions+len(owners)-1)/len(owners)
			}
			if n == e2ePartitions && len(counts) == len(owners) && balanced {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, d := range c.nodes {
		var lines []string
		for _, l := range strings.Split(d.log(), "\n") {
			if strings.Contains(l, "cluster:") || strings.Contains(l, "partition") {
				lines = append(lines, l)
			}
		}
		t.Logf("node %s:\n%s", c.ids[i], strings.Join(lines[max(0, len(lines)-40):], "\n"))
		if dir := os.Getenv("HUBD_CLUSTER_LOGS"); dir != "" {
			os.WriteFile(filepath.Join(dir, c.ids[i]+".log"), []byte(d.log()), 0o644)
		}
	}
	t.Fatalf("partitions not spread over %v within %v: %+v", owners, within, last)
	return 0
}

// TestE2EClusterKillNode kills one of three nodes with SIGKILL under
// hubload --verify spread over all three: its partitions move to the two
// others within the lease and a hydrate, the load carries on, and
// hubload --check through the survivors finds every acknowledged
// envelope, each session's seqs dense and no ended session reopened.
func TestE2EClusterKillNode(t *testing.T) {
	t.Parallel() // mostly waiting on leases and restarts: it overlaps another such test
	c := startCluster(t, false)
	load := buildBinary(t, "./cmd/hubload")
	verify := filepath.Join(t.TempDir(), "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", c.addrs(), "--agents", "12", "--sessions", "6", "--duration", "60s",
		"--warmup", "0s", "--verify", verify)
	deadline := time.Now().Add(30 * time.Second)
	for countLines(verify) < 300 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	before := countLines(verify)
	if before < 300 {
		t.Fatalf("only %d acknowledged sends before the kill\n%s", before, lgOut.String())
	}
	// A listing through a survivor is the whole cluster's, before the kill
	// and after, and while the killed node's partitions move it is refused
	// (NOT_OWNER, retry shortly), never partial.
	operator := dialWith(t, c.nodes[0].addr, "x-hubd-agent", "operator")
	list := func() (int, error) {
		resp, err := operator.ListSessions(ctx, &hubpb.ListSessionsRequest{})
		return len(resp.GetSessions()), err
	}
	sessions, err := list()
	if err != nil || sessions != 6 {
		t.Fatalf("ListSessions before the kill: %d, %v; want hubload's 6", sessions, err)
	}
	listed := map[string]int{}
	stopListing := make(chan struct{})
	listing := make(chan struct{})
	go func() {
		defer close(listing)
		for {
			select {
			case <-stopListing:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n, err := list()
			code, reason := wiretest.ReasonOf(err)
			switch {
			case err == nil && n == sessions:
				listed["whole"]++
			case code == codes.Unavailable && reason == "NOT_OWNER":
				listed["refused"]++
			default:
				listed[fmt.Sprintf("%d sessions, %v", n, err)]++
			}
		}
	}()
	killed := time.Now()
	c.nodes[1].stop(syscall.SIGKILL)
	moved := c.waitSpread(t, []string{c.ids[0], c.ids[2]}, 60*time.Second)
	close(stopListing)
	<-listing
	t.Logf("%s killed: its partitions moved in %v (lease %v); listings meanwhile: %v", c.ids[1], moved.Round(time.Millisecond), e2eLease, listed)
	if len(listed) > 2 || listed["whole"]+listed["refused"] == 0 {
		t.Fatalf("listings through %s during the failover: %v, want the whole list or NOT_OWNER", c.ids[0], listed)
	}
	for _, i := range []int{0, 2} {
		waitFor(t, "a listing through "+c.ids[i]+" after the move", 10*time.Second, func() bool {
			resp, err := dialWith(t, c.nodes[i].addr, "x-hubd-agent", "operator").ListSessions(ctx, &hubpb.ListSessionsRequest{})
			return err == nil && len(resp.GetSessions()) == sessions
		})
	}
	// The load goes on: more sends are acknowledged after the move.
	after := countLines(verify)
	deadline = time.Now().Add(30 * time.Second)
	for countLines(verify) < after+200 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := countLines(verify); n < after+200 {
		t.Fatalf("the load did not carry on after the move: %d acknowledged before the kill, %d after the move, %d now\nload:\n%s\n%s",
			before, after, n, stopLoad(lg, lgOut), c.trouble())
	}
	lg.Process.Signal(syscall.SIGINT)
	lg.Wait()
	acked := countLines(verify)
	out, err := exec.CommandContext(ctx, load, "--hub", c.addrs(1), "--check", verify).CombinedOutput()
	first := strings.SplitN(string(out), "\n", 2)[0]
	if err != nil || first != fmt.Sprintf("acked %d, found %d", acked, acked) {
		t.Fatalf("check after kill -9 of a node: %v\n%s\nload:\n%s", err, out, lgOut.String())
	}
	t.Logf("%s; %v from the kill to the end of the check; load: %s", first, time.Since(killed).Round(time.Millisecond),
		strings.SplitN(lgOut.String(), "\n", 3)[1])
}

// TestE2EClusterPausedOwner stops the node that owns a set of sessions
// (SIGSTOP) for longer than its lease, while their TTLs fall due; another
// node takes their partition, hydrates and expires them. Once the old
// owner resumes (SIGCONT), its own firings of those timers fail on the
// fence or on the lost lease: each session ends exactly once, its log
// dense. The NATS servers are external here (in the test process), so
// that the pause stops a hub and not a NATS server with it.
func TestE2EClusterPausedOwner(t *testing.T) {
	t.Parallel() // mostly waiting on leases and restarts: it overlaps another such test
	c := startCluster(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	peers := strings.Split(c.addrs(), ",")
	dial := func(node int) *agentsdk.Client {
		t.Helper()
		cl, err := agentsdk.Dial(ctx, c.nodes[node].addr, agentsdk.Options{Name: "alice", Peers: peers, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	a := dial(0)
	const sessions, ttl = 12, 3 * time.Second
	var ids []string
	for range sessions {
		resp, err := a.Raw().Open(ctx, &hubpb.OpenRequest{Type: "conversation@1", Ttl: durationpb.New(ttl),
			Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.GetSession().GetMeta().GetSessionId())
	}
	owner := c.nodes[0]
	if err := owner.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Its partitions move to the others once its lease expires (and its
	// NATS server's stream leaders are replaced).
	moved := c.waitSpread(t, []string{c.ids[1], c.ids[2]}, 30*time.Second)
	t.Logf("%s stopped: its partitions moved in %v", c.ids[0], moved.Round(time.Millisecond))
	b := dial(1)
	for _, id := range ids {
		waitState(t, ctx, b, id, "EXPIRED")
	}
	// The TTLs fell due while the owner was stopped: its timers fire as
	// soon as it resumes.
	time.Sleep(max(0, ttl-time.Since(stopped)))
	if err := owner.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resumed node gives its partitions up", 15*time.Second, func() bool {
		return strings.Count(owner.log(), "partition no longer served") >= 1
	})
	time.Sleep(time.Second) // let its timers and appends run into the fence
	for _, id := range ids {
		lg, err := b.ReadLog(ctx, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		ends := 0
		for i, e := range lg {
			if e.GetSeq() != uint64(i+1) {
				t.Fatalf("session %s: envelope %d has seq %d", id, i, e.GetSeq())
			}
			if session.Ends(e.GetType()) {
				ends++
			}
		}
		if ends != 1 || !session.Ends(lg[len(lg)-1].GetType()) {
			t.Fatalf("session %s: %d ends in its log of %d envelopes, want 1, last", id, ends, len(lg))
		}
	}
	logs := owner.log()
	t.Logf("resumed node: %d appends refused by the fence, %d for a partition no longer owned, %d timer retries",
		strings.Count(logs, "fenced"), strings.Count(logs, "not owned by this node"), strings.Count(logs, "timer envelopes not written"))
}

// waitState waits until a session's state is want.
func waitState(t *testing.T, ctx context.Context, c *agentsdk.Client, id, want string) {
	t.Helper()
	waitFor(t, "session "+id+" "+want, 30*time.Second, func() bool {
		s, err := c.GetSession(ctx, id)
		return err == nil && s.GetState() == want
	})
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2EClusterRollingRestart restarts the three nodes one by one with
// SIGTERM under hubload --verify: each hands its partitions back before it
// stops, the load carries on through every restart, and hubload --check
// finds every acknowledged envelope.
func TestE2EClusterRollingRestart(t *testing.T) {
	t.Parallel() // mostly waiting on leases and restarts: it overlaps another such test
	c := startCluster(t, false)
	load := buildBinary(t, "./cmd/hubload")
	verify := filepath.Join(t.TempDir(), "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", c.addrs(), "--agents", "12", "--sessions", "6", "--duration", "120s",
		"--warmup", "0s", "--verify", verify)
	progress := func(what string) {
		t.Helper()
		n := countLines(verify)
		deadline := time.Now().Add(20 * time.Second)
		for countLines(verify) < n+100 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if countLines(verify) < n+100 {
			t.Fatalf("the load stalled %s: %d acknowledged\nload:\n%s\n%s", what, countLines(verify), stopLoad(lg, lgOut), c.trouble())
		}
	}
	progress("at the start")
	for i := range c.nodes {
		start := time.Now()
		c.nodes[i].stop(syscall.SIGTERM)
		if !strings.Contains(c.nodes[i].log(), "partition no longer served") {
			t.Fatalf("%s stopped without handing its partitions back:\n%s", c.ids[i], c.nodes[i].log())
		}
		c.await(t, i, c.spawn(t, i))
		c.waitSpread(t, c.ids, 30*time.Second)
		t.Logf("%s restarted and back to its share in %v", c.ids[i], time.Since(start).Round(time.Millisecond))
		progress("after restarting " + c.ids[i])
	}
	lg.Process.Signal(syscall.SIGINT)
	lg.Wait()
	acked := countLines(verify)
	out, err := exec.CommandContext(ctx, load, "--hub", c.addrs(), "--check", verify).CombinedOutput()
	first := strings.SplitN(string(out), "\n", 2)[0]
	if err != nil || first != fmt.Sprintf("acked %d, found %d", acked, acked) {
		t.Fatalf("check after a rolling restart: %v\n%s\nload:\n%s", err, out, lgOut.String())
	}
	t.Logf("%s; load: %s", first, strings.SplitN(lgOut.String(), "\n", 3)[1])
}

// TestE2EClusterWireThroughGateway runs the wire acceptance checks
// against a three-node cluster through a node that serves no partition
// (--gateway): plain gRPC clients of the gateway, which know nothing of
// the cluster, get the owners' answers through it, and each bad input
// gets the owner's precise refusal and writes nothing.
func TestE2EClusterWireThroughGateway(t *testing.T) {
	c := startCluster(t, false, "--max-envelope-bytes", "4096") // as wiretest.BadInput wants
	gw := c.gateway(t, "gw1")
	plain := func(name string) hubsvc.HubClient { return dialWith(t, gw.addr, "x-hubd-agent", name) }
	id := wiretest.Pipeline(t, plain("alice"))
	if info, err := plain("alice").GetSession(context.Background(), &hubpb.GetSessionRequest{SessionId: id}); err != nil || info.GetMeta().GetSessionId() != id {
		t.Fatalf("GetSession on the gateway: %v, %v", info, err)
	}
	wiretest.BadInput(t, plain, anonClient(t, gw.addr))
	if n := strings.Count(gw.log(), "partition served"); n != 0 {
		t.Fatalf("a gateway served %d partitions", n)
	}
}

// gateway starts a node that serves no partition (--gateway) on c's NATS
// servers, with extra serve flags.
func (c *hubCluster) gateway(t *testing.T, id string, extra ...string) *daemon {
	t.Helper()
	port := natstest.FreePorts(t, 1)[0]
	gw := &daemon{t: t, data: t.TempDir(), closed: make(chan struct{})}
	gw.cmd = exec.Command(hubdBinary(t), append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--http", "off",
		"--data", gw.data, "--log-format", "json", "--node-id", id, "--gateway", "--cluster", strings.Join(c.nats, ","),
		"--partitions", strconv.Itoa(e2ePartitions), "--lease-ttl", e2eLease.String(), "--max-envelope-bytes", "4096"}, slices.Concat(c.bus, extra)...)...)
	stderr, _ := gw.cmd.StderrPipe()
	if err := gw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go gw.collect(stderr, listening)
	t.Cleanup(func() { gw.stop(syscall.SIGKILL) })
	select {
	case gw.addr = <-listening:
	case <-gw.closed:
		t.Fatalf("gateway %s did not start:\n%s", id, gw.log())
	case <-time.After(40 * time.Second):
		t.Fatalf("gateway %s did not listen within 40s:\n%s", id, gw.log())
	}
	return gw
}

// TestE2EClusterRouting: three nodes, forwarding on (the default), with
// sessions opened through each so that they lie in partitions of all
// three. Every node answers ListSessions (as a participant and as an
// operator, paged with each page asked of another node), ListQuestions
// and PendingTurns with the same complete answer; a plain gRPC client,
// which does not follow NOT_OWNER, sends turns and reads sessions through
// nodes that do not serve them, and so does curl-style HTTP JSON.
func TestE2EClusterRouting(t *testing.T) {
	c := startCluster(t, false, "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	raw := func(i int, agent string) hubsvc.HubClient { return dialWith(t, c.nodes[i].addr, "x-hubd-agent", agent) }
	// Four sessions opened through each node: in that node's partitions.
	var ids []string
	for i := range c.nodes {
		for range 4 {
			resp, err := raw(i, "alice").Open(ctx, &hubpb.OpenRequest{Type: "conversation@1",
				Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
			if err != nil {
				t.Fatalf("open through %s: %v", c.ids[i], err)
			}
			ids = append(ids, resp.GetSession().GetMeta().GetSessionId())
		}
	}
	slices.Sort(ids)
	st, ok := c.status(t, 0)
	if !ok {
		t.Fatal("cluster status failed")
	}
	ownerOf := map[string]int{} // session → index of the node serving it
	for _, id := range ids {
		k := jetstream.Partition(session.MustParseID(id), e2ePartitions)
		ownerOf[id] = slices.Index(c.ids, st.Partitions[k].Owner)
	}
	// A question for carol in a session of each node, asked through the
	// next node.
	var asked []string
	for i := range c.nodes {
		id := ""
		for _, x := range ids {
			if ownerOf[x] == i && id == "" {
				id = x
			}
		}
		if id == "" {
			t.Fatalf("node %s serves none of %v", c.ids[i], ids)
		}
		if _, err := raw((i+1)%3, "bob").Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventQuestion,
			Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{QuestionId: fmt.Sprint("q", i), Text: "ok?", Answerer: "carol"}}}}); err != nil {
			t.Fatalf("question through %s: %v", c.ids[(i+1)%3], err)
		}
		asked = append(asked, id)
	}
	// Every node lists the cluster's sessions, questions and turns.
	for i := range c.nodes {
		for _, who := range []string{"alice", "operator"} {
			resp, err := retrying(func() (*hubpb.ListSessionsResponse, error) {
				return raw(i, who).ListSessions(ctx, &hubpb.ListSessionsRequest{})
			})
			var got []string
			for _, s := range resp.GetSessions() {
				got = append(got, s.GetMeta().GetSessionId())
			}
			if err != nil || !slices.Equal(got, ids) {
				t.Fatalf("ListSessions through %s as %s: %v, %v; want %v", c.ids[i], who, got, err, ids)
			}
		}
		qs, err := retrying(func() (*hubpb.ListQuestionsResponse, error) {
			return raw(i, "carol").ListQuestions(ctx, &hubpb.ListQuestionsRequest{})
		})
		if err != nil || len(qs.GetQuestions()) != len(asked) {
			t.Fatalf("ListQuestions through %s: %v, %v", c.ids[i], qs, err)
		}
		for j, q := range qs.GetQuestions() {
			if q.GetSessionId() != asked[j] {
				t.Fatalf("ListQuestions through %s: question %d in %s, want %s (oldest first)", c.ids[i], j, q.GetSessionId(), asked[j])
			}
		}
		turns, err := retrying(func() (*hubpb.PendingTurnsResponse, error) {
			return raw(i, "alice").PendingTurns(ctx, &hubpb.PendingTurnsRequest{})
		})
		if err != nil || len(turns.GetTurns()) != len(ids)-len(asked) {
			t.Fatalf("PendingTurns through %s: %d, %v; want %d", c.ids[i], len(turns.GetTurns()), err, len(ids)-len(asked))
		}
	}
	var paged []string
	token := ""
	for page := 0; page < 10; page++ {
		resp, err := retrying(func() (*hubpb.ListSessionsResponse, error) {
			return raw(page%3, "alice").ListSessions(ctx, &hubpb.ListSessionsRequest{PageSize: 5, PageToken: token})
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range resp.GetSessions() {
			paged = append(paged, s.GetMeta().GetSessionId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if !slices.Equal(paged, ids) {
		t.Fatalf("pages of 5, each from the next node: %v, want %v", paged, ids)
	}

	// notOn returns a session node i does not serve whose turn no
	// question holds.
	notOn := func(i int) string {
		for _, id := range ids {
			if ownerOf[id] != i && !slices.Contains(asked, id) {
				return id
			}
		}
		t.Fatalf("no session for node %s to forward", c.ids[i])
		return ""
	}
	// A plain gRPC client sends and reads through a node that does not
	// serve the session.
	for i := range c.nodes {
		id := notOn(i)
		ack, err := raw(i, "alice").Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventText,
			ClientMsgId: "raw-" + c.ids[i], Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "through " + c.ids[i]}}}})
		if err != nil {
			t.Fatalf("send through %s, which does not serve %s: %v", c.ids[i], id, err)
		}
		info, err := raw(i, "bob").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
		if err != nil || info.GetSeq() != ack.GetSeq() {
			t.Fatalf("GetSession through %s: %v, %v; want seq %d", c.ids[i], info, err, ack.GetSeq())
		}
		lg, err := raw(i, "bob").ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
		if n := len(lg.GetEnvelopes()); err != nil || n == 0 || lg.GetEnvelopes()[n-1].GetText().GetText() != "through "+c.ids[i] {
			t.Fatalf("ReadLog through %s: %v, %v", c.ids[i], lg, err)
		}
	}
	// So does curl on the HTTP JSON API.
	id := notOn(0)
	base := "http://" + c.nodes[0].httpAddr(t)
	sent := post(t, base+"/v1/sessions/"+id+"/envelopes", "alice", `{"type":"text","client_msg_id":"curl","text":{"text":"over HTTP"}}`)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+id, nil)
	req.Header.Set("X-Hubd-Agent", "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != 200 || info["seq"] != sent["seq"] {
		t.Fatalf("GET /v1/sessions/%s through %s, which does not serve it: %d %v %v; the send had seq %v", id, c.ids[0],
			resp.StatusCode, info, err, sent["seq"])
	}
}

// retrying calls f again, for up to 20 s, while it answers NOT_OWNER with
// no owner address ("retry shortly": a partition changing hands or being
// loaded), as clients are told to; it returns the first other answer.
func retrying[T any](f func() (T, error)) (T, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := f()
		if err == nil || !isNotOwner(err) || ownerAddr(err) != "" || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ownerAddr is the owner_addr of a NOT_OWNER status ("" for none).
func ownerAddr(err error) string {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["owner_addr"]
		}
	}
	return ""
}

// isNotOwner reports whether err is NOT_OWNER.
func isNotOwner(err error) bool {
	_, reason := wiretest.ReasonOf(err)
	return reason == hubpb.Reason_NOT_OWNER.String()
}
