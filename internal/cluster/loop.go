package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loop renews, registers and rebalances every TTL/3, and rebalances
// whenever the watches see a lease or a node go. The first acquisitions
// wait for the first tick, so that peers started at the same moment are
// known and partitions go to their preferred nodes straight away.
func (l *Leases) loop(ctx context.Context) {
	tick := time.NewTicker(l.cfg.TTL / 3)
	defer tick.Stop()
	started := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if l.cfg.Observer {
				continue
			}
			l.renew(ctx)
			if err := l.register(ctx); err != nil && ctx.Err() == nil {
				l.logger.Warn().Err(err).Msg("cluster: membership not refreshed")
			}
			started = true
		case <-l.kick:
			if !started || l.cfg.Observer {
				continue
			}
		}
		l.rebalance(ctx)
	}
}

// renew updates every held lease, all at once, each bounded by TTL/3. A
// lease whose renewal is refused is dropped at once (OnLose); one whose
// renewal gets no answer is kept while it is valid by this node's clock.
func (l *Leases) renew(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range l.parts {
		rev, epoch, ok := p.lease()
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, l.cfg.TTL/3)
			defer cancel()
			nrev, err := l.owners.Update(rctx, key(p.k), l.value(epoch), rev)
			if err == nil {
				p.renewed(epoch, nrev, l.validFrom(start))
				return
			}
			if ctx.Err() != nil {
				return // closing: Close releases
			}
			if unanswered(err) && p.holds() {
				// No answer is no refusal (the bucket's leader moves after
				// a NATS server is lost): keep the lease while it is valid
				// by this node's clock, and renew at the next tick.
				l.logger.Debug().Err(err).Int("partition", p.k).Msg("cluster: lease renewal unanswered; retrying while it is valid")
				return
			}
			if _, _, dropped := p.drop(epoch, true); dropped {
				l.logger.Warn().Err(err).Int("partition", p.k).Uint64("epoch", epoch).Msg("cluster: lease renewal failed; partition dropped")
			}
		}()
	}
	wg.Wait()
}

// unanswered reports an error that refuses nothing: the request got no
// answer in time.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// validFrom is how long a lease written at start lasts by this node's
// clock: the TTL, less a tenth for the clocks' rates.
func (l *Leases) validFrom(start time.Time) time.Time {
	return start.Add(l.cfg.TTL - l.cfg.TTL/10)
}

// value is the lease value this node writes.
func (l *Leases) value(epoch uint64) []byte {
	v, _ := json.Marshal(Owner{NodeID: l.cfg.NodeID, Addr: l.cfg.Addr, NodeAddr: l.cfg.NodeAddr, Epoch: epoch})
	return v
}

// rebalance moves this node toward ceil(P/N) partitions: it releases its
// least preferred ones above that, and acquires free ones below it, its
// most preferred first (rendezvous hashing of node and partition). A free
// partition for which another live node is preferred is left to that node
// for one renewal period.
func (l *Leases) rebalance(ctx context.Context) {
	live := l.liveIDs()
	target := (l.cfg.Partitions + len(live) - 1) / len(live)
	var held []int
	for _, p := range l.parts {
		if _, _, ok := p.lease(); ok {
			held = append(held, p.k)
		}
	}
	score := func(k int) uint64 { return hrw(l.cfg.NodeID, k) }
	if len(held) > target {
		slices.SortFunc(held, func(a, b int) int { return cmpU64(score(a), score(b)) })
		for _, k := range held[:len(held)-target] {
			l.release(ctx, k)
		}
		return
	}
	for _, k := range l.candidates(live) {
		if len(held) >= target || ctx.Err() != nil {
			return
		}
		if l.acquire(ctx, k) {
			held = append(held, k)
		}
	}
}

// liveIDs returns the live nodes' ids, this node's among them. A node
// whose membership key the watch has not seen refreshed for more than a
// TTL and a third before this node last refreshed its own counts as gone
// even if the watch missed its expiry (a KV leader change can lose the
// marker): otherwise its share of the partitions would stay free. While
// this node cannot refresh its own (the bucket has no leader), nobody is
// judged.
func (l *Leases) liveIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := []string{l.cfg.NodeID}
	for id := range l.live {
		if id != l.cfg.NodeID && l.joined.Sub(l.liveSeen[id]) <= l.cfg.TTL+l.cfg.TTL/3 {
			ids = append(ids, id)
		}
	}
	return ids
}

// candidates returns the partitions this node may try to acquire now, its
// most preferred first: free (no lease, or one not renewed for longer
// than a TTL and a third, whose expiry the watch missed), not held, and
// either preferred for this node among the live ones or free for a
// renewal period already.
func (l *Leases) candidates(live []string) []int {
	now := time.Now()
	l.mu.Lock()
	var out []int
	for k, p := range l.parts {
		o, leased := l.table[k]
		stale := leased && now.Sub(o.seen) > l.cfg.TTL+l.cfg.TTL/3
		if (leased && !stale) || !p.idle() {
			continue
		}
		since, ok := l.freeFrom[k]
		if !ok {
			since, l.freeFrom[k] = now, now
		}
		if preferred(l.cfg.NodeID, k, live) || stale || now.Sub(since) >= l.cfg.TTL/3 {
			out = append(out, k)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b int) int { return cmpU64(hrw(l.cfg.NodeID, b), hrw(l.cfg.NodeID, a)) })
	return out
}

// acquire creates partition k's lease and, on success, writes its epoch
// (the creating revision) into it and calls OnAcquire.
func (l *Leases) acquire(ctx context.Context, k int) bool {
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, l.cfg.TTL/3)
	defer cancel()
	epoch, err := l.owners.Create(actx, key(k), l.value(0))
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
			l.logger.Warn().Err(err).Int("partition", k).Msg("cluster: lease not created")
		}
		return false
	}
	rev, err := l.owners.Update(actx, key(k), l.value(epoch), epoch)
	if err != nil {
		l.logger.Warn().Err(err).Int("partition", k).Msg("cluster: lease created but not confirmed; left to expire")
		return false
	}
	l.parts[k].acquired(epoch, l.validFrom(start))
	l.parts[k].renewed(epoch, rev, l.validFrom(start))
	l.logger.Info().Int("partition", k).Uint64("epoch", epoch).Msg("cluster: partition acquired")
	return true
}

// release hands partition k back: it stops holding it now, and in the
// background, once OnLose has run, deletes the lease key at the revision
// this node last wrote, so a peer can create it.
func (l *Leases) release(ctx context.Context, k int) {
	rev, done, ok := l.parts[k].drop(0, false)
	if !ok {
		return
	}
	l.loops.Add(1)
	go func() {
		defer l.loops.Done()
		<-done
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.TTL/3)
		defer cancel()
		if err := l.deleteLease(dctx, k, rev); err != nil {
			l.logger.Warn().Err(err).Int("partition", k).Msg("cluster: released lease not deleted; it will expire")
			return
		}
		l.logger.Info().Int("partition", k).Msg("cluster: partition released")
	}()
}

// deleteLease deletes partition k's lease if its revision is still rev.
func (l *Leases) deleteLease(ctx context.Context, k int, rev uint64) error {
	err := l.owners.Delete(ctx, key(k), jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return nil // taken or expired meanwhile: nothing to hand back
	}
	return err
}

// hrw is the rendezvous weight of node for partition k.
func hrw(node string, k int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(k)))
	return mix(h.Sum64())
}

// mix spreads FNV's weak low bits (splitmix64's finalizer).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// preferred reports whether node has the highest weight for k among live.
func preferred(node string, k int, live []string) bool {
	w := hrw(node, k)
	for _, n := range live {
		if n != node && (hrw(n, k) > w || (hrw(n, k) == w && n > node)) {
			return false
		}
	}
	return true
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// watch starts the watches of the leases and of the nodes, and returns
// once both have delivered their current values.
func (l *Leases) watch(ctx context.Context) error {
	ow, err := l.owners.WatchAll(ctx)
	if err != nil {
		return err
	}
	nw, err := l.nodes.WatchAll(ctx)
	if err != nil {
		ow.Stop()
		return err
	}
	ready := make(chan struct{}, 2)
	for _, w := range []struct {
		kw    jetstream.KeyWatcher
		apply func(jetstream.KeyValueEntry)
	}{{ow, l.applyLease}, {nw, l.applyNode}} {
		l.loops.Add(1)
		go func() {
			defer l.loops.Done()
			defer w.kw.Stop()
			first := true
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-w.kw.Updates():
					if !ok {
						return
					}
					if e == nil {
						if first {
							ready <- struct{}{}
							first = false
						}
						continue
					}
					w.apply(e)
				}
			}
		}()
	}
	for range 2 {
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			return errors.New("cluster: the watches did not start")
		}
	}
	return nil
}

// applyLease updates the lease table from a watched entry, and drops this
// node's lease at once when the entry shows it expired or taken.
func (l *Leases) applyLease(e jetstream.KeyValueEntry) {
	k, err := strconv.Atoi(strings.TrimPrefix(e.Key(), "p"))
	if err != nil || k < 0 || k >= l.cfg.Partitions || !strings.HasPrefix(e.Key(), "p") {
		return
	}
	var o Owner
	put := e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &o) == nil
	o.Revision, o.Updated, o.seen = e.Revision(), e.Created(), time.Now()
	l.mu.Lock()
	was, had := l.table[k]
	if put {
		l.table[k] = o
		delete(l.freeFrom, k)
	} else {
		delete(l.table, k)
	}
	if had != put || was.NodeID != o.NodeID || was.NodeAddr != o.NodeAddr {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
	p := l.parts[k]
	if rev, epoch, held := p.lease(); held && e.Revision() > rev && (!put || o.NodeID != l.cfg.NodeID) {
		if _, _, dropped := p.drop(epoch, true); dropped {
			l.logger.Warn().Int("partition", k).Uint64("epoch", epoch).Str("op", e.Operation().String()).
				Msg("cluster: lease expired or taken; partition dropped")
		}
	}
	if !put {
		l.logger.Info().Int("partition", k).Str("op", e.Operation().String()).Str("seen_at", o.seen.UTC().Format(time.RFC3339Nano)).
			Msg("cluster: partition free")
		l.poke()
	}
}

// applyNode updates the live nodes from a watched entry.
func (l *Leases) applyNode(e jetstream.KeyValueEntry) {
	var n Member
	l.mu.Lock()
	if e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &n) == nil {
		l.live[e.Key()] = n
		l.liveSeen[e.Key()] = time.Now()
	} else {
		delete(l.live, e.Key())
		delete(l.liveSeen, e.Key())
	}
	l.mu.Unlock()
	l.poke()
}

// poke asks the loop for a rebalance.
func (l *Leases) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}
