package cluster

import (
	"context"
	"sync"
	"time"
)

// partition is this node's view of one partition's lease, and the
// goroutine that runs its callbacks in order.
type partition struct {
	k      int
	events chan event

	mu      sync.Mutex
	held    bool
	rev     uint64    // the lease's last revision written by this node
	epoch   uint64    // the revision that acquired it
	valid   time.Time // the lease has not expired before then, by this node's clock
	cancel  context.CancelFunc
	pending int // callbacks queued or running: no new lease until they are done
}

// event is one callback to run.
type event struct {
	acquire bool
	ctx     context.Context
	epoch   uint64
	done    chan struct{} // closed once run, if set
}

func newPartition(k int) *partition {
	return &partition{k: k, events: make(chan event, 4)}
}

// run calls the callbacks in the order the lease changed.
func (p *partition) run(c LeaseConfig) {
	for ev := range p.events {
		if ev.acquire {
			c.OnAcquire(ev.ctx, p.k, ev.epoch)
		} else {
			c.OnLose(p.k)
		}
		p.mu.Lock()
		p.pending--
		p.mu.Unlock()
		if ev.done != nil {
			close(ev.done)
		}
	}
}

// close ends run once the queued callbacks are done.
func (p *partition) close() { close(p.events) }

// holds reports a lease held and, by this node's clock, unexpired.
func (p *partition) holds() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held && time.Now().Before(p.valid)
}

// unexpired reports that no other node can have taken the lease last
// held here: it is held, or was handed back, and is not expired by this
// node's clock.
func (p *partition) unexpired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.valid)
}

// idle reports a partition not held whose callbacks have all run: it may
// be acquired.
func (p *partition) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.held && p.pending == 0
}

// lease returns the held lease's revision and epoch.
func (p *partition) lease() (rev, epoch uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rev, p.epoch, p.held
}

// acquired records a new lease, valid until valid, and queues OnAcquire.
func (p *partition) acquired(rev uint64, valid time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.held, p.rev, p.epoch, p.valid, p.cancel = true, rev, rev, valid, cancel
	p.pending++
	p.mu.Unlock()
	p.events <- event{acquire: true, ctx: ctx, epoch: rev}
}

// renewed records a renewal of the lease of epoch, unless it was lost
// meanwhile.
func (p *partition) renewed(epoch, rev uint64, valid time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held && p.epoch == epoch {
		p.rev, p.valid = rev, valid
	}
}

// drop ends the lease of epoch (any if 0): not held from now, its
// OnAcquire context done, OnLose queued. It returns the lease's last
// revision and a channel closed once OnLose has run; ok is false if that
// lease was no longer held. A lease lost (expired, taken, its renewal
// refused) is over at once (unexpired says no); one handed back keeps its
// validity, as no other node can take it before it is deleted.
func (p *partition) drop(epoch uint64, lost bool) (rev uint64, done chan struct{}, ok bool) {
	p.mu.Lock()
	if !p.held || (epoch != 0 && p.epoch != epoch) {
		p.mu.Unlock()
		return 0, nil, false
	}
	p.held = false
	if lost {
		p.valid = time.Time{}
	}
	p.cancel()
	p.pending++
	rev = p.rev
	p.mu.Unlock()
	done = make(chan struct{})
	p.events <- event{done: done}
	return rev, done, true
}

// lose hands back whatever lease is held and waits for OnLose.
func (p *partition) lose() (uint64, bool) {
	rev, done, ok := p.drop(0, false)
	if ok {
		<-done
	}
	return rev, ok
}
