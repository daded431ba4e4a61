package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// Defaults of LeaseConfig.
const (
	DefaultPartitions  = 32
	DefaultTTL         = 10 * time.Second
	DefaultReplicas    = 3
	DefaultBucket      = bus.LeaseBucket
	DefaultNodesBucket = bus.NodesBucket
)

// ErrConfig reports an invalid LeaseConfig or Config.
var ErrConfig = errors.New("cluster: invalid config")

// ErrClosed is returned by Close after the first call.
var ErrClosed = errors.New("cluster: leases closed")

// LeaseConfig configures StartLeases.
type LeaseConfig struct {
	// Conn is the NATS connection (required). Leases do not close it.
	Conn *nats.Conn
	// NodeID names this node (required): letters, digits, '-', '_', '='.
	NodeID string
	// Addr is the address clients reach this node's gRPC at, written
	// into every lease it holds (NOT_OWNER hands it out).
	Addr string
	// NodeAddr is the address of this node's node service (nodeservice.go),
	// written beside Addr: where the other nodes call it.
	NodeAddr string
	// Partitions is P (default 32), as the log's.
	Partitions int
	// TTL is the lease (default 10s; 1-2s in tests): a lease not renewed
	// for TTL expires and another node takes the partition. Renewals run
	// every TTL/3.
	TTL time.Duration
	// Replicas of the two buckets (default 3; 1 for a single server).
	Replicas int
	// Bucket holds the leases, key p<k> (default "hub_owners").
	Bucket string
	// NodesBucket holds one membership key per live node (default
	// "hub_nodes"), with the same TTL.
	NodesBucket string
	// OnAcquire is called when this node acquires partition k, with the
	// lease's epoch (strictly greater than any earlier lease of k) and a
	// context that ends when the lease is lost or released. It runs in the
	// partition's own goroutine and may take its time (hydrate); the
	// lease is renewed meanwhile.
	OnAcquire func(ctx context.Context, partition int, epoch uint64)
	// OnLose is called when this node stops holding partition k: a renew
	// failed, or it released k (rebalancing, Close). It must return
	// promptly: stop serving k, at once. It runs after OnAcquire of the
	// same lease has returned (whose context is already done), in the
	// partition's goroutine.
	OnLose func(partition int)
	// Logger receives acquisitions, losses and failures; default none.
	Logger zerolog.Logger
	// Observer makes a node that serves no partition: it keeps no
	// membership key (peers do not count it) and acquires nothing, but
	// watches the leases, so Owner answers for routing.
	Observer bool
}

var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9_=-]+$`)

// Validate reports a missing or invalid field.
func (c LeaseConfig) Validate() error {
	var errs []error
	if c.Conn == nil {
		errs = append(errs, fmt.Errorf("%w: Conn is required", ErrConfig))
	}
	if !nodeIDRE.MatchString(c.NodeID) {
		errs = append(errs, fmt.Errorf("%w: NodeID %q: letters, digits, '-', '_' and '=' only", ErrConfig, c.NodeID))
	}
	if c.Partitions < 0 || c.TTL < 0 || c.Replicas < 0 {
		errs = append(errs, fmt.Errorf("%w: negative setting", ErrConfig))
	}
	if c.TTL > 0 && c.TTL < 300*time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: TTL %v under 300ms", ErrConfig, c.TTL))
	}
	return errors.Join(errs...)
}

func (c LeaseConfig) withDefaults() LeaseConfig {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.NodesBucket == "" {
		c.NodesBucket = DefaultNodesBucket
	}
	if c.OnAcquire == nil {
		c.OnAcquire = func(context.Context, int, uint64) {}
	}
	if c.OnLose == nil {
		c.OnLose = func(int) {}
	}
	return c
}

// Owner is the value of a lease: who holds partition p<k>.
type Owner struct {
	NodeID   string `json:"node_id"`
	Addr     string `json:"grpc_addr"`
	NodeAddr string `json:"node_addr,omitempty"`
	Epoch    uint64 `json:"epoch"`
	// Revision is the lease's KV revision; Updated the server's time of
	// its last renewal.
	Revision uint64    `json:"-"`
	Updated  time.Time `json:"-"`
	seen     time.Time // when this node's watch delivered it
}

// Member is a live node's membership value.
type Member struct {
	NodeID   string `json:"node_id"`
	Addr     string `json:"grpc_addr"`
	NodeAddr string `json:"node_addr,omitempty"`
}

// Leases holds this node's share of the partitions: it acquires, renews
// and releases leases in the KV bucket, keeps a table of every lease and
// every live node from watches, and calls OnAcquire and OnLose.
type Leases struct {
	cfg    LeaseConfig
	owners jetstream.KeyValue
	nodes  jetstream.KeyValue
	logger zerolog.Logger
	parts  []*partition

	mu       sync.Mutex
	table    map[int]Owner // every lease, from the watch
	live     map[string]Member
	liveSeen map[string]time.Time // when the watch last delivered each live node's key
	joined   time.Time            // this node's last successful membership refresh
	freeFrom map[int]time.Time    // when a partition was first seen free
	changed  chan struct{}        // closed when an owner changes (Changed)

	kick    chan struct{}
	stop    context.CancelFunc
	loops   sync.WaitGroup // the renew loop and the watches
	workers sync.WaitGroup // the partitions' callback goroutines
	closed  bool
}

// StartLeases creates the buckets if needed (retrying in short attempts: a
// cluster answers once it has a meta leader), registers the node, starts
// the watches and the renew loop, and returns. Partitions are acquired in
// the background: OnAcquire says when.
func StartLeases(ctx context.Context, cfg LeaseConfig) (*Leases, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	js, err := jetstream.New(c.Conn)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	l := &Leases{
		cfg: c, logger: c.Logger.With().Str("node", c.NodeID).Logger(),
		table: map[int]Owner{}, live: map[string]Member{}, liveSeen: map[string]time.Time{}, freeFrom: map[int]time.Time{},
		kick: make(chan struct{}, 1), changed: make(chan struct{}),
	}
	// On disk, so that the buckets outlive a restart of the whole NATS
	// cluster and the leases' revisions, the epochs, keep growing.
	if l.owners, err = bucket(ctx, js, c, c.Bucket, "hubd partition leases"); err != nil {
		return nil, err
	}
	if l.nodes, err = bucket(ctx, js, c, c.NodesBucket, "hubd live nodes"); err != nil {
		return nil, err
	}
	if !c.Observer {
		if err := l.register(ctx); err != nil {
			return nil, err
		}
	}
	runCtx, stop := context.WithCancel(context.Background())
	l.stop = stop
	l.parts = make([]*partition, c.Partitions)
	for k := range l.parts {
		l.parts[k] = newPartition(k)
		l.workers.Add(1)
		go func() { defer l.workers.Done(); l.parts[k].run(c) }()
	}
	if err := l.watch(runCtx); err != nil {
		stop()
		l.stopPartitions()
		return nil, err
	}
	l.loops.Add(1)
	go func() { defer l.loops.Done(); l.loop(runCtx) }()
	return l, nil
}

// bucket creates or binds a KV bucket with the lease TTL, retrying.
func bucket(ctx context.Context, js jetstream.JetStream, c LeaseConfig, name, desc string) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket: name, Description: desc, History: 1, TTL: c.TTL, Replicas: c.Replicas,
		Storage: jetstream.FileStorage, LimitMarkerTTL: c.TTL,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		kv, err := js.CreateOrUpdateKeyValue(actx, cfg)
		cancel()
		if err == nil {
			return kv, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster: bucket %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// register writes (or refreshes) this node's membership key.
func (l *Leases) register(ctx context.Context) error {
	v, _ := json.Marshal(Member{NodeID: l.cfg.NodeID, Addr: l.cfg.Addr, NodeAddr: l.cfg.NodeAddr})
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TTL/3)
	defer cancel()
	if _, err := l.nodes.Put(ctx, l.cfg.NodeID, v); err != nil {
		return fmt.Errorf("cluster: registering node %s: %w", l.cfg.NodeID, err)
	}
	l.mu.Lock()
	l.joined = time.Now()
	l.mu.Unlock()
	return nil
}

// Held returns the partitions this node holds a valid lease on, ascending.
func (l *Leases) Held() []int {
	var out []int
	for k, p := range l.parts {
		if p.holds() {
			out = append(out, k)
		}
	}
	return out
}

// Holds reports whether this node holds partition k's lease and its last
// renewal is recent enough that the lease has not expired by this node's
// clock: what a write path checks before it writes (the log's fence
// catches the rest).
func (l *Leases) Holds(k int) bool { return l.parts[k].holds() }

// Unexpired reports whether no other node can have taken partition k's
// lease since this node last held it: held, or handed back (Close, a
// rebalance) and not yet expired by this node's clock; false once it was
// lost (expired, taken, a renewal refused). A write acknowledged while it
// reports true is in the next owner's read of the partition.
func (l *Leases) Unexpired(k int) bool { return l.parts[k].unexpired() }

// Owner returns who holds partition k according to this node's watch of
// the leases (any node may answer): for routing. ok is false for a free
// partition.
func (l *Leases) Owner(k int) (Owner, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.table[k]
	return o, ok
}

// Owners returns every lease as this node's watch sees it.
func (l *Leases) Owners() map[int]Owner {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]Owner, len(l.table))
	for k, o := range l.table {
		out[k] = o
	}
	return out
}

// Changed returns a channel closed once a partition's owner changes (its
// lease taken by another node, expired or handed back), for whoever
// follows the set of serving nodes; renewals change nothing.
func (l *Leases) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Nodes returns the live nodes (their membership keys have not expired),
// sorted by id.
func (l *Leases) Nodes() []Member {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Member, 0, len(l.live))
	for _, n := range l.live {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

// Close hands every lease back: OnLose for each (waited for), then the
// lease key is deleted so a peer takes the partition at once instead of
// after a TTL, and the membership key last. ctx bounds the deletes.
func (l *Leases) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	l.stop()
	l.loops.Wait() // the loop and the watches have ended; partitions still run
	dctx, cancel := context.WithTimeout(ctx, l.cfg.TTL)
	defer cancel()
	if l.cfg.Observer {
		l.stopPartitions()
		return nil
	}
	if err := l.nodes.Delete(dctx, l.cfg.NodeID); err != nil {
		l.logger.Warn().Err(err).Msg("cluster: deleting the membership key")
	}
	var errs []error
	for _, p := range l.parts {
		if rev, ok := p.lose(); ok {
			errs = append(errs, l.deleteLease(dctx, p.k, rev))
		}
	}
	l.stopPartitions()
	return errors.Join(errs...)
}

// stopPartitions ends the partitions' goroutines.
func (l *Leases) stopPartitions() {
	var wg sync.WaitGroup
	for _, p := range l.parts {
		wg.Add(1)
		go func() { defer wg.Done(); p.close() }()
	}
	wg.Wait()
	l.workers.Wait()
}

// key is partition k's lease key.
func key(k int) string { return fmt.Sprintf("p%d", k) }
