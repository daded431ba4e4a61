package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// ClusterConfig makes the server one node of a cluster: its sessions live
// in JetStream partition streams (wal/jetstream) instead of a badger
// directory, and it serves the partitions whose leases it holds
// (internal/cluster).
type ClusterConfig struct {
	// NATS are the client URLs of the NATS servers. With Embed they may be
	// empty: the node connects to its own server (which routes to the
	// others).
	NATS []string
	// Embed, when set, runs a NATS server with JetStream in this process
	// (cluster.StartNATS), so that the hubd processes are the whole
	// deployment.
	Embed *cluster.NATSConfig
	// NodeID names the node (required): letters, digits, '-', '_', '='.
	NodeID string
	// Advertise is the gRPC address peers and clients reach this node at,
	// written into its leases for NOT_OWNER answers; default the listen
	// address.
	Advertise string
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
	// and forwards it to the owner (or, with NoForward, answers NOT_OWNER
	// with the owner's address); peers do not count it when they share
	// the partitions.
	Gateway bool
	// Creds are the nodes' credentials on the NATS bus (cluster.Creds):
	// the node connects as the nodes' user, an embedded server accepts it
	// alone, and calls between nodes are signed and must be. Nil: a bus
	// without credentials, where whoever reaches NATS acts as a node.
	Creds *cluster.Creds
	// TLS, when set, is used to connect to NATS servers given by URL
	// (their certificates verified against its CA). An embedded server's
	// TLS is Embed.TLS; the node connects to its own server in-process.
	TLS *cluster.TLS
	// NoForward turns forwarding off: a call for a session another node
	// serves is answered NOT_OWNER with the owner's address instead of
	// being run there on the caller's behalf (route.go). Listings are
	// gathered from every node either way.
	NoForward bool
}

// node is the server's part in a cluster: the NATS connections, the log,
// the leases, and which partitions the hub serves.
type node struct {
	cfg     ClusterConfig
	logger  zerolog.Logger     // with the node id
	base    zerolog.Logger     // without (the leases add it)
	ns      *natsserver.Server // embedded; nil for an external cluster
	nc, lc  *nats.Conn         // the log's and the leases' connections
	cc      *nats.Conn         // the calls' between nodes (route.go)
	log     *jetstream.Log
	leases  *cluster.Leases
	held    atomic.Pointer[cluster.Leases] // leases, once started: read by the log's appends
	hub     *hub.Hub
	serving []atomic.Bool  // per partition: hydrated and served
	fenced  atomic.Int64   // appends refused by the fence
	calls   *cluster.Calls // calls to and from the other nodes; nil until serveCalls
	router  *router        // nil until serveCalls
	foreign prometheus.Counter

	mu    sync.Mutex
	loads map[int]LoadStat // the last load of each partition
}

// LoadStat is how one partition was taken over: when the lease was
// acquired, how long hydrating took and what it read.
type LoadStat struct {
	Partition int
	Epoch     uint64
	Acquired  time.Time
	Hydrate   time.Duration
	Sessions  int
	Records   int
}

// startNode starts the embedded NATS server if asked, connects, and opens
// the partition log. The leases start later (startLeases), once the hub
// exists.
func startNode(ctx context.Context, cc ClusterConfig, listen string, lg zerolog.Logger) (*node, error) {
	n := &node{cfg: cc, logger: lg.With().Str("node", cc.NodeID).Logger(), base: lg, loads: map[int]LoadStat{},
		foreign: prometheus.NewCounter(prometheus.CounterOpts{Name: "hubd_cluster_foreign_messages_total",
			Help: "Messages in partition streams whose subjects name no session (not written by a node), skipped when a partition was loaded."})}
	if n.cfg.Partitions == 0 {
		n.cfg.Partitions = cluster.DefaultPartitions
	}
	if n.cfg.Advertise == "" {
		n.cfg.Advertise = listen
	}
	urls := cc.NATS
	var via []nats.Option // how the node reaches NATS
	if cc.Embed != nil {
		ec := *cc.Embed
		ec.Logger = lg
		ns, err := cluster.StartNATS(ec)
		if err != nil {
			return nil, err
		}
		n.ns = ns
		if len(urls) == 0 {
			// Its own server, in the process: no socket, no TLS (a
			// tls:// URL would make the client ask for it).
			urls, via = []string{strings.Replace(ns.ClientURL(), "tls://", "nats://", 1)}, []nats.Option{cluster.InProcess(ns)}
		}
	}
	if len(urls) == 0 {
		n.close()
		return nil, errors.New("cluster: no NATS server: give --cluster URLs or --embed-nats")
	}
	if via == nil && cc.TLS != nil {
		via = append(via, nats.Secure(cc.TLS.ClientConfig()))
	}
	if cc.Creds != nil {
		via = append(via, cc.Creds.Option())
	}
	var err error
	connect := func(name string) (*nats.Conn, error) {
		return nats.Connect(strings.Join(urls, ","), append([]nats.Option{nats.Name("hubd-" + cc.NodeID + "-" + name),
			nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.ReconnectBufSize(-1),
			nats.RetryOnFailedConnect(true), nats.Timeout(2 * time.Second)}, via...)...)
	}
	if n.nc, err = connect("log"); err != nil {
		n.close()
		return nil, fmt.Errorf("cluster: connecting to NATS %v: %w", urls, err)
	}
	if n.lc, err = connect("leases"); err != nil {
		n.close()
		return nil, fmt.Errorf("cluster: connecting to NATS %v: %w", urls, err)
	}
	if n.cc, err = connect("calls"); err != nil {
		n.close()
		return nil, fmt.Errorf("cluster: connecting to NATS %v: %w", urls, err)
	}
	n.log, err = jetstream.Open(ctx, jetstream.Options{Conn: n.nc, Partitions: n.cfg.Partitions, Replicas: cc.Replicas,
		Root: rootOf, Logger: lg, Holds: n.leaseValid})
	if err != nil {
		n.close()
		return nil, fmt.Errorf("cluster: opening the partition log: %w", err)
	}
	n.serving = make([]atomic.Bool, n.cfg.Partitions)
	return n, nil
}

// hubConfig makes hc a partitioned hub on the node's log.
func (n *node) hubConfig(hc hub.Config) hub.Config {
	hc.Log, hc.Partitioned, hc.Route, hc.NewRootID = jsLog{n.log, n}, true, n.route, n.newRootID
	if max := n.log.MaxRecordBytes(); hc.MaxEnvelopeBytes == 0 || hc.MaxEnvelopeBytes > max {
		hc.MaxEnvelopeBytes = max
	}
	return hc
}

// startLeases starts taking partitions for h.
func (n *node) startLeases(ctx context.Context, h *hub.Hub) error {
	n.hub = h
	var err error
	n.leases, err = cluster.Start(ctx, cluster.Config{Conn: n.lc, NodeID: n.cfg.NodeID, Addr: n.cfg.Advertise,
		Partitions: n.cfg.Partitions, TTL: n.cfg.LeaseTTL, Replicas: n.cfg.Replicas,
		OnAcquire: n.acquire, OnLose: n.lose, Logger: n.base, Observer: n.cfg.Gateway})
	if err != nil {
		return fmt.Errorf("cluster: starting the leases: %w", err)
	}
	n.held.Store(n.leases)
	return nil
}

// leaseValid is the log's Options.Holds: whether no other node can have
// taken partition k since this node held it (cluster.Leases.Unexpired): an
// append acknowledged later may have landed after the next owner's read.
// Before the leases are known (no append comes before a partition is
// acquired) it does not judge.
func (n *node) leaseValid(k int) bool {
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
func (n *node) acquire(ctx context.Context, k int, epoch uint64) {
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
			n.mu.Lock()
			n.loads[k] = LoadStat{Partition: k, Epoch: epoch, Acquired: acquired, Hydrate: took, Sessions: loaded, Records: st.Records}
			n.mu.Unlock()
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
func (n *node) foreignAt(k int) func(subject string, sseq uint64, err error) {
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
func (n *node) lose(k int) {
	n.serving[k].Store(false)
	n.log.Disown(k)
	why := &hub.NotOwnerError{Partition: k, Why: fmt.Sprintf("partition %d moved away from node %s: resubscribe from your cursors", k, n.cfg.NodeID)}
	dropped := n.hub.UnloadSessions(func(root session.ID) bool { return n.log.PartitionOf(root) == k }, why)
	start := time.Now()
	n.log.Settle(k)
	n.logger.Info().Int("partition", k).Int("sessions", dropped).Str("settled", time.Since(start).Round(time.Millisecond).String()).
		Msg("partition no longer served")
}

// route answers for a session the hub does not hold: where its partition
// is served.
func (n *node) route(ctx context.Context, id session.ID) error {
	k, found, err := n.log.Locate(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("session %v: locating its partition: %v: %w", id, err, hub.ErrSessionFailed)
	case !found:
		return nil
	}
	if o, ok := n.leases.Owner(k); ok && o.NodeID == n.cfg.NodeID {
		// Ours, being loaded: NOT_OWNER with no address, "retry shortly".
		return &hub.NotOwnerError{Session: id.String(), Partition: k,
			Why: fmt.Sprintf("session %v: partition %d is being loaded on this node; retry shortly", id, k)}
	}
	return n.notOwner(id, k)
}

// notOwner is NOT_OWNER for session id in partition k (-1: unknown).
func (n *node) notOwner(id session.ID, k int) *hub.NotOwnerError {
	e := &hub.NotOwnerError{Session: id.String(), Partition: k}
	if k < 0 || n.leases == nil {
		return e
	}
	if o, ok := n.leases.Owner(k); ok && o.NodeID != n.cfg.NodeID {
		e.Node, e.Addr = o.NodeID, o.Addr
	}
	return e
}

// newRootIDTries bounds the ids drawn for a new root: with h of P
// partitions served, one lands in them with probability h/P.
const newRootIDTries = 1 << 16

// newRootID draws UUIDv7s until one's tree lands in a partition this node
// serves: a new root session is opened where it is asked. An open with a
// key (an idempotency or thread key: hub.Config.NewRootID) lands in the
// key's own partition, so that its retries and the next sessions of its
// thread are found by the one node that serves it: when that is not this
// node, the open is answered NOT_OWNER with the owner's address.
func (n *node) newRootID(key string) (uuid.UUID, error) {
	if key != "" {
		return n.keyedRootID(key)
	}
	any := false
	for k := range n.serving {
		any = any || n.serving[k].Load()
	}
	if any {
		for range newRootIDTries {
			id := uuid.Must(uuid.NewV7())
			if k := n.log.PartitionOf(id); n.serving[k].Load() && n.leases.Holds(k) {
				return id, nil
			}
		}
	}
	e := &hub.NotOwnerError{Partition: -1, Why: "node " + n.cfg.NodeID + " serves no partition at the moment"}
	owners := n.leases.Owners()
	for _, k := range slices.Sorted(maps.Keys(owners)) {
		if o := owners[k]; o.NodeID != n.cfg.NodeID && o.Addr != "" {
			e.Node, e.Addr = o.NodeID, o.Addr
			break
		}
	}
	return uuid.UUID{}, e
}

// keyedRootID draws an id in the partition of key, if this node serves it.
func (n *node) keyedRootID(key string) (uuid.UUID, error) {
	k := keyPartition(key, len(n.serving))
	if n.serving[k].Load() && n.leases.Holds(k) {
		for range newRootIDTries {
			if id := uuid.Must(uuid.NewV7()); n.log.PartitionOf(id) == k {
				return id, nil
			}
		}
	}
	e := n.notOwner(session.ID{}, k)
	e.Session, e.Why = "", fmt.Sprintf("an open with this key is served by the node of partition %d", k)
	if o, ok := n.leases.Owner(k); ok && o.NodeID == n.cfg.NodeID {
		e.Why = fmt.Sprintf("an open with this key is served by partition %d, being loaded on this node; retry shortly", k)
	}
	return uuid.UUID{}, e
}

// keyPartition is the partition of an open's key: the partition a root
// whose id had the key's hash as its bytes would be in.
func keyPartition(key string, partitions int) int {
	sum := sha256.Sum256([]byte(key))
	return jetstream.Partition([16]byte(sum[:16]), partitions)
}

// Loads returns how each partition this node took over was loaded.
func (n *node) Loads() []LoadStat {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]LoadStat, 0, len(n.loads))
	for _, s := range n.loads {
		out = append(out, s)
	}
	return out
}

// handBack releases every lease (its partitions stop being served here
// first), so that peers take them at once rather than after a TTL.
func (n *node) handBack(ctx context.Context) error {
	if n.leases == nil {
		return nil
	}
	return n.leases.Close(ctx)
}

// close closes the log, the connections and the embedded server.
func (n *node) close() error {
	if n.calls != nil {
		n.calls.Close()
	}
	var err error
	if n.log != nil {
		if e := n.log.Close(); e != nil && !errors.Is(e, jetstream.ErrClosed) {
			err = e
		}
	}
	for _, c := range []*nats.Conn{n.nc, n.lc, n.cc} {
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
// ascending; nil on a single node.
func (s *Server) Served() []int {
	if s.node == nil {
		return nil
	}
	var out []int
	for k := range s.node.serving {
		if s.node.serving[k].Load() {
			out = append(out, k)
		}
	}
	return out
}

// PartitionOf returns the partition of a tree given its root session id,
// -1 on a single node.
func (s *Server) PartitionOf(root session.ID) int {
	if s.node == nil {
		return -1
	}
	return s.node.log.PartitionOf(root)
}

// Loads returns how each partition this node took over was loaded; nil on
// a single node.
func (s *Server) Loads() []LoadStat {
	if s.node == nil {
		return nil
	}
	return s.node.Loads()
}
