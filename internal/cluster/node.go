package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// Config makes a hubd server one node of a cluster: its sessions live in
// JetStream partition streams (wal/jetstream) instead of a badger
// directory, and it serves the partitions whose leases it holds.
type Config struct {
	// NATS are the client URLs of the NATS servers. With Embed they may be
	// empty: the node connects to its own server (which routes to the
	// others).
	NATS []string
	// Embed, when set, runs a NATS server with JetStream in this process
	// (bus.StartNATS), so that the hubd processes are the whole
	// deployment.
	Embed *bus.NATSConfig
	// NodeID names the node (required): letters, digits, '-', '_', '='.
	NodeID string
	// Advertise is the gRPC address clients reach this node at, written
	// into its leases for NOT_OWNER answers; default the listen address.
	Advertise string
	// NodeListen is the address of the node service, which the other
	// nodes call (nodeservice.go); default the host of the listen address, any
	// free port.
	NodeListen string
	// NodeAdvertise is the node service's address as the other nodes
	// reach it, written into the leases; default Advertise's host with
	// the node service's port.
	NodeAdvertise string
	// Partitions is P (default 32), the same on every node, fixed once the
	// streams exist.
	Partitions int
	// LeaseTTL is the partition lease (default 10s): how long a dead
	// node's partitions wait before another node takes them.
	LeaseTTL time.Duration
	// Replicas of the streams and buckets (default 3; 1 for one NATS
	// server).
	Replicas int
	// Gateway makes a node that serves no partition: it takes every call
	// and stream and routes it to the nodes that serve its sessions; peers
	// do not count it when they share the partitions.
	Gateway bool
	// Creds are the nodes' credentials (bus.Creds): the node connects to
	// NATS as the nodes' user, an embedded server accepts it alone, and
	// the nodes' CA of the calls between nodes is derived from them. Nil:
	// a cluster without credentials, where whoever reaches NATS or a node
	// service acts as a node (development, or --insecure-nats).
	Creds *bus.Creds
	// TLS, when set, is used to connect to NATS servers given by URL
	// (their certificates verified against its CA). An embedded server's
	// TLS is Embed.TLS; the node connects to its own server in-process.
	TLS *bus.TLS
}

// Node is a hubd server's part in a cluster: the NATS connections, the
// partition log, the leases, which partitions the hub serves, the node
// service the other nodes call, and the routing of every call and stream
// to the node that serves its sessions (route.go, gather.go, feed.go,
// watch.go).
type Node struct {
	cfg     Config
	listen  string             // the clients' gRPC address
	logger  zerolog.Logger     // with the node id
	base    zerolog.Logger     // without (the leases add it)
	ns      *natsserver.Server // embedded; nil for an external cluster
	nc, lc  *nats.Conn         // the log's and the leases' connections
	log     *jetstream.Log
	leases  *Leases
	held    atomic.Pointer[Leases] // leases, once started: read by the log's appends
	hub     *hub.Hub
	serving []atomic.Bool // per partition: hydrated and served
	fenced  atomic.Int64  // appends refused by the fence
	foreign prometheus.Counter
	tls     *nodeTLS     // the node calls' certificates; nil without credentials
	service *nodeService // the node service; nil until Serve
	peers   *peers       // connections to the other nodes' node services
	methods methods      // the Hub service's unary methods
}

// Open starts the embedded NATS server if asked, connects, and opens the
// partition log; listen is the server's gRPC address. The hub is made
// next (HubConfig), then Serve starts the leases and the node service.
func Open(ctx context.Context, cc Config, listen string, lg zerolog.Logger) (*Node, error) {
	if !nodeIDRE.MatchString(cc.NodeID) {
		return nil, fmt.Errorf("%w: node id %q: letters, digits, '-', '_' and '=' only", ErrConfig, cc.NodeID)
	}
	n := &Node{cfg: cc, listen: listen, logger: lg.With().Str("node", cc.NodeID).Logger(), base: lg,
		foreign: prometheus.NewCounter(prometheus.CounterOpts{Name: "hubd_cluster_foreign_messages_total",
			Help: "Messages in partition streams whose subjects name no session (not written by a node), skipped when a partition was loaded."})}
	if n.cfg.Partitions == 0 {
		n.cfg.Partitions = DefaultPartitions
	}
	if n.cfg.Advertise == "" {
		n.cfg.Advertise = listen
	}
	var err error
	if n.methods, err = hubMethods(); err != nil {
		return nil, err
	}
	if cc.Creds != nil {
		if n.tls, err = newNodeTLS(cc.Creds, cc.NodeID); err != nil {
			return nil, err
		}
	}
	n.peers = newPeers(n.tls, n.logger)
	urls := cc.NATS
	var via []nats.Option // how the node reaches NATS
	if cc.Embed != nil {
		ec := *cc.Embed
		ec.Logger = lg
		ns, err := bus.StartNATS(ec)
		if err != nil {
			return nil, err
		}
		n.ns = ns
		if len(urls) == 0 {
			// Its own server, in the process: no socket, no TLS (a
			// tls:// URL would make the client ask for it).
			urls, via = []string{strings.Replace(ns.ClientURL(), "tls://", "nats://", 1)}, []nats.Option{bus.InProcess(ns)}
		}
	}
	if len(urls) == 0 {
		n.Close()
		return nil, errors.New("cluster: no NATS server: give --cluster URLs or --embed-nats")
	}
	if via == nil && cc.TLS != nil {
		via = append(via, nats.Secure(cc.TLS.ClientConfig()))
	}
	if cc.Creds != nil {
		via = append(via, cc.Creds.Option())
	}
	connect := func(name string) (*nats.Conn, error) {
		return nats.Connect(strings.Join(urls, ","), append([]nats.Option{nats.Name("hubd-" + cc.NodeID + "-" + name),
			nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.ReconnectBufSize(-1),
			nats.RetryOnFailedConnect(true), nats.Timeout(2 * time.Second)}, via...)...)
	}
	if n.nc, err = connect("log"); err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: connecting to NATS %v: %w", urls, err)
	}
	if n.lc, err = connect("leases"); err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: connecting to NATS %v: %w", urls, err)
	}
	n.log, err = jetstream.Open(ctx, jetstream.Options{Conn: n.nc, Partitions: n.cfg.Partitions, Replicas: cc.Replicas,
		Root: rootOf, Logger: lg, Holds: n.leaseValid})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: opening the partition log: %w", err)
	}
	n.serving = make([]atomic.Bool, n.cfg.Partitions)
	return n, nil
}

// HubConfig makes hc a partitioned hub on the node's log.
func (n *Node) HubConfig(hc hub.Config) hub.Config {
	hc.Log, hc.Partitioned, hc.Route, hc.NewRootID = jsLog{n.log, n}, true, n.route, n.newRootID
	if max := n.log.MaxRecordBytes(); hc.MaxEnvelopeBytes == 0 || hc.MaxEnvelopeBytes > max {
		hc.MaxEnvelopeBytes = max
	}
	return hc
}

// Serve starts serving: the node service, which the other nodes call
// (nodeservice.go), then the leases, which take this node's share of the
// partitions for the hub.
func (n *Node) Serve(ctx context.Context, l Local) error {
	n.hub = l.Hub
	svc, err := n.serveNodeService(l)
	if err != nil {
		return err
	}
	n.service = svc
	n.leases, err = StartLeases(ctx, LeaseConfig{Conn: n.lc, NodeID: n.cfg.NodeID, Addr: n.cfg.Advertise, NodeAddr: svc.addr,
		Partitions: n.cfg.Partitions, TTL: n.cfg.LeaseTTL, Replicas: n.cfg.Replicas,
		OnAcquire: n.acquire, OnLose: n.lose, Logger: n.base, Observer: n.cfg.Gateway})
	if err != nil {
		svc.close()
		n.service = nil
		return fmt.Errorf("cluster: starting the leases: %w", err)
	}
	n.held.Store(n.leases)
	return nil
}

// Foreign is the counter of messages in partition streams that name no
// session (hubd_cluster_foreign_messages_total), for the server's
// metrics.
func (n *Node) Foreign() prometheus.Collector { return n.foreign }

// leaseValid is the log's Options.Holds: whether no other node can have
// taken partition k since this node held it (Leases.Unexpired): an
// append acknowledged later may have landed after the next owner's read.
// Before the leases are known (no append comes before a partition is
// acquired) it does not judge.
func (n *Node) leaseValid(k int) bool {
	l := n.held.Load()
	return l == nil || l.Unexpired(k)
}

// acquire loads partition k into the hub once its lease is held: the log
// may write it, its sessions are hydrated (timers re-armed from what the
// log holds, the previous owner's firings included), then it serves. A
// session whose messages are damaged is quarantined and the others serve;
// a message that names no session is skipped and reported (foreignAt); a
// hydrate that fails whole (JetStream unavailable) is retried while the
// lease lasts.
func (n *Node) acquire(ctx context.Context, k int, epoch uint64) {
	acquired := time.Now()
	n.log.Own(k)
	for try := 0; ; try++ {
		start := time.Now()
		var st jetstream.HydrateStats
		loaded, err := n.hub.LoadSessions(ctx, func(meta func([16]byte, []byte) error, record func([16]byte, uint64, []byte) error,
			broken func([16]byte, error)) error {
			var err error
			st, err = n.log.Hydrate(ctx, k, jetstream.Visitor{Meta: meta, Record: record, Broken: broken, Foreign: n.foreignAt(k)})
			return err
		})
		if err == nil {
			n.serving[k].Store(true)
			took := time.Since(start)
			n.logger.Info().Int("partition", k).Uint64("epoch", epoch).Int("sessions", loaded).Int("records", st.Records).
				Int("damaged", st.Broken).Int("foreign", st.Foreign).
				Str("hydrate", took.Round(time.Millisecond).String()).Str("acquired_at", acquired.UTC().Format(time.RFC3339Nano)).
				Str("served_at", time.Now().UTC().Format(time.RFC3339Nano)).Msg("partition served")
			return
		}
		if ctx.Err() != nil {
			return
		}
		n.logger.Error().Err(err).Int("partition", k).Int("try", try).Msg("partition not hydrated; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(try+1)*200*time.Millisecond, 2*time.Second)):
		}
	}
}

// maxForeignLogged bounds the foreign messages one load of a partition
// logs one by one (the metric counts them all).
const maxForeignLogged = 10

// foreignAt is the hydrate's Visitor.Foreign of partition k: a message
// whose subject names no session (nothing a node writes: something else
// published into the partition's subjects) is skipped, logged at error
// level and counted, and the partition loads around it.
func (n *Node) foreignAt(k int) func(subject string, sseq uint64, err error) {
	seen := 0
	return func(subject string, sseq uint64, err error) {
		n.foreign.Inc()
		if seen++; seen <= maxForeignLogged {
			n.logger.Error().Err(err).Int("partition", k).Str("subject", subject).Uint64("stream_seq", sseq).
				Msg("a message in a partition stream names no session: skipped")
		}
	}
}

// lose stops serving partition k at once: nothing more is written to it,
// its sessions leave the hub and their streams end with NOT_OWNER. It
// returns once the appends in flight to k have settled, so that a lease
// handed back after it (a rebalance, a drain) is read by its next owner
// with every write this node acknowledged.
func (n *Node) lose(k int) {
	n.serving[k].Store(false)
	n.log.Disown(k)
	why := &hub.NotOwnerError{Partition: k, Why: fmt.Sprintf("partition %d moved away from node %s: resubscribe from your cursors", k, n.cfg.NodeID)}
	dropped := n.hub.UnloadSessions(func(root session.ID) bool { return n.log.PartitionOf(root) == k }, why)
	start := time.Now()
	n.log.Settle(k)
	n.logger.Info().Int("partition", k).Int("sessions", dropped).Str("settled", time.Since(start).Round(time.Millisecond).String()).
		Msg("partition no longer served")
}

// HandBack releases every lease (its partitions stop being served here
// first), so that peers take them at once rather than after a TTL.
func (n *Node) HandBack(ctx context.Context) error {
	if n.leases == nil {
		return nil
	}
	return n.leases.Close(ctx)
}

// Close stops the node service, then closes the connections to the
// other nodes, the log, the NATS connections and the embedded server.
func (n *Node) Close() error {
	if n.service != nil {
		n.service.close()
	}
	n.peers.close()
	var err error
	if n.log != nil {
		if e := n.log.Close(); e != nil && !errors.Is(e, jetstream.ErrClosed) {
			err = e
		}
	}
	for _, c := range []*nats.Conn{n.nc, n.lc} {
		if c != nil {
			c.Close()
		}
	}
	if n.ns != nil {
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
	}
	return err
}

// Served returns the partitions this node serves (hydrated, lease held),
// ascending.
func (n *Node) Served() []int { return n.servedNow() }

// PartitionOf returns the partition of a tree given its root session id.
func (n *Node) PartitionOf(root session.ID) int { return n.log.PartitionOf(root) }

// MaxRecordBytes is the largest record the partition log takes.
func (n *Node) MaxRecordBytes() int { return n.log.MaxRecordBytes() }
