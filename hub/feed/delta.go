package feed

import (
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
)

// The bounds on the deltas one subscription holds unread, apart from its
// deliveries of logged envelopes: past either, a delta is dropped (and
// counted, Config.DeltaDropped), never an envelope.
const (
	maxQueuedDeltas     = 256
	maxQueuedDeltaBytes = 256 << 10
)

// Delta implements hub.Consumer: it hands a delta of session s, best
// effort, to the session's watches and to the subscriptions of its
// participants but the writer, those that asked for deltas. A subscription
// with too many deltas unread drops it; the hub holds the tree's lock, so
// deltas and envelopes of a session are queued in the order the hub took
// them.
func (f *Feed) Delta(s *hub.Session, d *hubpb.Delta) {
	dl := &hubpb.Delivery{Delta: d}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, w := range f.watches[s.ID()] {
		if w.deltas {
			w.pushDelta(dl)
		}
	}
	for _, p := range s.Meta().GetParticipants() {
		name := p.GetName()
		if name == d.GetFrom() {
			continue
		}
		for _, sub := range f.subs[name] {
			if sub.deltas {
				sub.pushDelta(dl)
			}
		}
	}
}

// pushDelta queues delta delivery d unless the subscription already holds
// as many deltas unread as it may: then d is dropped and counted.
func (sub *Subscription) pushDelta(d *hubpb.Delivery) {
	n := len(d.GetDelta().GetText())
	sub.mu.Lock()
	if sub.err != nil {
		sub.mu.Unlock()
		return
	}
	if sub.ndeltas >= maxQueuedDeltas || sub.deltaBytes+n > maxQueuedDeltaBytes {
		sub.mu.Unlock()
		sub.f.dropped.Add(1)
		if f := sub.f.cfg.DeltaDropped; f != nil {
			f()
		}
		return
	}
	sub.queue = append(sub.queue, d)
	sub.sizes = append(sub.sizes, 0) // a delta holds no place among the logged deliveries' bytes
	sub.ndeltas++
	sub.deltaBytes += n
	sub.mu.Unlock()
	sub.wakeUp()
}

// DeltasDropped returns how many deltas subscriptions dropped, being too
// far behind, since the feed began.
func (f *Feed) DeltasDropped() int64 { return f.dropped.Load() }
