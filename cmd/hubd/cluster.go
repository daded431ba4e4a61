package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/exitcode"
)

// clusterFlags are serve's cluster flags.
type clusterFlags struct {
	natsURLs, nodeID, advertise, natsListen, natsRouteListen, natsRoutes string
	nodeListen, nodeAdvertise                                            string
	embed, gateway                                                       bool
	partitions, replicas                                                 int
	leaseTTL                                                             time.Duration
	bus                                                                  busFlags
	listen                                                               string // serve's --listen, for the node service's default
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.natsURLs, "cluster", "", "run as a node of a cluster whose sessions live in NATS JetStream: the comma-separated client `URLs` of the NATS servers (nats://h1:4222,nats://h2:4222); with --embed-nats, may be empty")
	fs.StringVar(&f.nodeID, "node-id", "", "this node's `id` in the cluster (letters, digits, '-', '_', '='); required in a cluster")
	fs.StringVar(&f.advertise, "advertise", "", "gRPC `address` clients and peers reach this node at, handed out with NOT_OWNER (default --listen)")
	fs.BoolVar(&f.embed, "embed-nats", false, "run a NATS server with JetStream inside this process (storage under --data), so the hubd processes are the whole deployment")
	fs.StringVar(&f.natsListen, "nats-listen", "127.0.0.1:4222", "client `address` of the embedded NATS server")
	fs.StringVar(&f.natsRouteListen, "nats-route-listen", "", "route `address` of the embedded NATS server, for its peers (host:port); required with --nats-routes")
	fs.StringVar(&f.natsRoutes, "nats-routes", "", "comma-separated route `addresses` (host:port) of every embedded NATS server of the cluster, this one's included")
	fs.IntVar(&f.partitions, "partitions", cluster.DefaultPartitions, "number of partitions (`P`), the same on every node and fixed once the streams exist: choose it high (16-64)")
	fs.IntVar(&f.replicas, "replicas", 0, "replicas of the partition streams and lease buckets (default 3, or the number of NATS servers when fewer)")
	fs.StringVar(&f.nodeListen, "node-listen", "", "`address` of the node service, which the other nodes call (mutual TLS with a certificate the nodes' credentials make); default the host of --listen, any free port: give a fixed one when a firewall sits between the nodes")
	fs.StringVar(&f.nodeAdvertise, "node-advertise", "", "the node service's `address` as the other nodes reach it (default the host of --advertise with the port of --node-listen)")
	fs.BoolVar(&f.gateway, "gateway", false, "join the cluster without serving any partition: every call and stream for a session goes to the node that serves it")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", cluster.DefaultTTL, "partition lease: how long a dead node's partitions wait before another node takes them")
	f.bus.register(fs)
}

// on reports whether any cluster flag asks for a cluster.
func (f *clusterFlags) on() bool { return f.natsURLs != "" || f.embed }

// config makes the server's cluster configuration; data is --data.
func (f *clusterFlags) config(data string) (*cluster.Config, error) {
	if !f.on() {
		if f.nodeID != "" {
			return nil, exitcode.Usage("serve: --node-id needs --cluster or --embed-nats")
		}
		return nil, nil
	}
	if f.nodeID == "" {
		return nil, exitcode.Usage("serve: a cluster node needs --node-id")
	}
	if f.partitions < 1 || f.partitions > 1024 {
		return nil, exitcode.Usage("serve: --partitions %d: want 1 to 1024", f.partitions)
	}
	if f.leaseTTL < 300*time.Millisecond {
		return nil, exitcode.Usage("serve: --lease-ttl %v: want at least 300ms", f.leaseTTL)
	}
	creds, tls, err := f.bus.load()
	if err != nil {
		return nil, err
	}
	cc := &cluster.Config{NATS: splitList(f.natsURLs), NodeID: f.nodeID, Advertise: f.advertise,
		NodeListen: f.nodeListen, NodeAdvertise: f.nodeAdvertise,
		Partitions: f.partitions, LeaseTTL: f.leaseTTL, Replicas: f.replicas, Gateway: f.gateway,
		Creds: creds, TLS: tls}
	servers := len(cc.NATS)
	if f.embed {
		host, port, err := splitHostPort(f.natsListen)
		if err != nil {
			return nil, exitcode.Usage("serve: --nats-listen %q: %v", f.natsListen, err)
		}
		ec := &bus.NATSConfig{Name: f.nodeID, StoreDir: filepath.Join(data, "nats"), Host: host, Port: port, Creds: creds}
		if f.bus.tlsCert != "" {
			ec.TLS = tls
		}
		if routes := splitList(f.natsRoutes); len(routes) > 0 {
			rh, rp, err := splitHostPort(f.natsRouteListen)
			if err != nil || rp == 0 {
				return nil, exitcode.Usage("serve: --nats-route-listen %q: want the host:port of this server's routes", f.natsRouteListen)
			}
			ec.ClusterHost, ec.ClusterPort, ec.Routes = rh, rp, routes
			servers = len(routes)
		} else {
			servers = 1
		}
		cc.Embed = ec
	}
	if cc.Replicas == 0 {
		cc.Replicas = min(3, max(servers, 1))
	}
	return cc, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// runCluster runs `hubd cluster status`.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage: hubd cluster status --nats URLS [--nats-creds FILE] [--nats-tls-ca FILE] [--output table|json]\n       hubd cluster creds FILE\n\n"+
			"status: the live nodes, every partition's owner and lease age, and each partition stream's leader, replicas and size.\n"+
			"creds: new credentials for the nodes of a cluster (--nats-creds), and the NATS account they need on a NATS cluster of your own.")
		if len(args) == 0 {
			return exitcode.Usage("cluster: a subcommand is required (status, creds)")
		}
		return nil
	}
	switch args[0] {
	case "creds":
		return runCreds(args[1:], stdout)
	case "status":
	default:
		return exitcode.Usage("cluster: unknown subcommand %q (status, creds)", args[0])
	}
	fs := newCommand("cluster status", "--nats URLS [--nats-creds FILE] [--nats-tls-ca FILE] [--output table|json]", "Show the cluster's nodes, partition owners and lease ages, and partition streams.", stdout)
	urls := fs.String("nats", "nats://127.0.0.1:4222", "comma-separated client `URLs` of the NATS servers")
	creds := fs.String("nats-creds", "", "the nodes' credentials `file` (hubd serve --nats-creds)")
	ca := fs.String("nats-tls-ca", "", "the CA (PEM `file`) of the NATS servers' certificates (with tls:// URLs)")
	out := outputFlags(fs, "the output `format`: table (for people: the nodes, then a partition per line) or json (for programs: the same, indented)", formatTable, formatJSON)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	opts, err := busOptions(*creds, *ca)
	if err != nil {
		return err
	}
	st, err := clusterStatus(ctx, *urls, opts...)
	if err != nil {
		return err
	}
	if out.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printStatus(stdout, st)
	return nil
}

// clusterState is what `hubd cluster status` shows.
type clusterState struct {
	Nodes      []cluster.Member `json:"nodes"`
	Partitions []partStatus     `json:"partitions"`
}

type partStatus struct {
	Partition int     `json:"partition"`
	Owner     string  `json:"owner,omitempty"`
	Addr      string  `json:"grpc_addr,omitempty"`
	Epoch     uint64  `json:"epoch,omitempty"`
	LeaseAge  float64 `json:"lease_age_seconds,omitempty"` // since the last renewal
	Stream    string  `json:"stream"`
	Leader    string  `json:"stream_leader,omitempty"`
	Replicas  string  `json:"replicas,omitempty"` // current/lagging replicas
	Messages  uint64  `json:"messages"`
	Bytes     uint64  `json:"bytes"`
	Error     string  `json:"error,omitempty"`
}

// clusterStatus reads the lease and node buckets and the partition
// streams.
func clusterStatus(ctx context.Context, urls string, opts ...nats.Option) (*clusterState, error) {
	nc, err := nats.Connect(urls, append([]nats.Option{nats.Timeout(3 * time.Second)}, opts...)...)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("cluster status: connecting to %s: %w (the cluster's nodes have credentials: give --nats-creds)", urls, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster status: connecting to %s: %w", urls, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	owners, err := js.KeyValue(ctx, cluster.DefaultBucket)
	if err != nil {
		return nil, fmt.Errorf("cluster status: the lease bucket %s: %w (is this a hubd cluster?)", cluster.DefaultBucket, err)
	}
	st := &clusterState{}
	if nodes, err := js.KeyValue(ctx, cluster.DefaultNodesBucket); err == nil {
		for _, k := range keys(ctx, nodes) {
			if e, err := nodes.Get(ctx, k); err == nil {
				var n cluster.Member
				if json.Unmarshal(e.Value(), &n) == nil {
					st.Nodes = append(st.Nodes, n)
				}
			}
		}
	}
	byPart := map[int]partStatus{}
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		k, ok := strings.CutPrefix(name, "HUB_P")
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			continue
		}
		ps := partStatus{Partition: n, Stream: name}
		if s, err := js.Stream(ctx, name); err != nil {
			ps.Error = err.Error()
		} else {
			info := s.CachedInfo()
			ps.Messages, ps.Bytes = info.State.Msgs, info.State.Bytes
			if ci := info.Cluster; ci != nil {
				ps.Leader = ci.Leader
				current := 1
				for _, r := range ci.Replicas {
					if r.Current && !r.Offline {
						current++
					}
				}
				ps.Replicas = fmt.Sprintf("%d/%d", current, len(ci.Replicas)+1)
			}
		}
		byPart[n] = ps
	}
	now := time.Now()
	for _, k := range keys(ctx, owners) {
		n, err := strconv.Atoi(strings.TrimPrefix(k, "p"))
		if err != nil {
			continue
		}
		e, err := owners.Get(ctx, k)
		if err != nil {
			continue
		}
		var o cluster.Owner
		if json.Unmarshal(e.Value(), &o) != nil {
			continue
		}
		ps := byPart[n]
		ps.Partition, ps.Owner, ps.Addr, ps.Epoch = n, o.NodeID, o.Addr, o.Epoch
		ps.LeaseAge = now.Sub(e.Created()).Round(time.Millisecond).Seconds()
		if ps.Stream == "" {
			ps.Stream = fmt.Sprintf("HUB_P%02d", n)
		}
		byPart[n] = ps
	}
	for _, ps := range byPart {
		st.Partitions = append(st.Partitions, ps)
	}
	sort.Slice(st.Partitions, func(i, j int) bool { return st.Partitions[i].Partition < st.Partitions[j].Partition })
	if len(st.Partitions) == 0 {
		return nil, errors.New("cluster status: no partition streams and no leases: no hubd node has started on this NATS cluster")
	}
	return st, nil
}

// keys lists a bucket's keys (none for an empty bucket).
func keys(ctx context.Context, kv jetstream.KeyValue) []string {
	ks, err := kv.Keys(ctx)
	if err != nil {
		return nil
	}
	sort.Strings(ks)
	return ks
}

func printStatus(w io.Writer, st *clusterState) {
	fmt.Fprintf(w, "nodes: %d\n", len(st.Nodes))
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "  %s\t%s\n", n.NodeID, n.Addr)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tOWNER\tADDR\tEPOCH\tLEASE AGE\tSTREAM\tLEADER\tREPLICAS\tMESSAGES")
	owned := map[string]int{}
	for _, p := range st.Partitions {
		owner, age := p.Owner, ""
		if owner == "" {
			owner = "(free)"
		} else {
			owned[owner]++
			age = fmt.Sprintf("%.1fs", p.LeaseAge)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", p.Partition, owner, p.Addr, p.Epoch, age, p.Stream, p.Leader, p.Replicas, p.Messages)
	}
	tw.Flush()
	ids := make([]string, 0, len(owned))
	for id := range owned {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(w, "%s owns %d partitions\n", id, owned[id])
	}
}
