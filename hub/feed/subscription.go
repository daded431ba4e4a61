package feed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Cursors returns the cursors of WatchOptions.Cursors a tree watch
// honoured: those naming a descendant it watches (for a participant, one
// it takes part in). The others name nothing the watch hands out, and
// were dropped.
func (sub *Subscription) Cursors() map[string]uint64 { return maps.Clone(sub.cursors) }

// sees reports whether the subscriber may see e: an agent what is
// addressed to it, a participant's watch what the participant may read
// (its own envelopes too), an operator's watch everything.
func (sub *Subscription) sees(e *hubpb.Envelope) bool {
	if sub.tree && !sub.verbose && e.GetSessionId() != sub.watch.String() && !treeNotice(e.GetType()) {
		return false
	}
	switch {
	case sub.agent != "":
		return session.Addressed(e, sub.agent)
	case sub.viewer != "":
		return session.Visible(e, sub.viewer)
	}
	return true
}

// treeNotice reports whether a terse tree watch shows a descendant's
// envelope of type t: what calls and people say to each other.
func treeNotice(t string) bool {
	switch t {
	case session.EventQuestion, session.EventAnswer, session.EventQuestionClosed, session.EventDelegation, session.EventDelegationResult:
		return true
	}
	return false
}

// push appends live deliveries, all or none; it never blocks (the
// OnReady function it may call must not either).
func (sub *Subscription) push(ds ...*hubpb.Delivery) {
	if sub.pushLocked(ds) {
		sub.wakeUp()
	}
}

// wakeUp wakes the reader: Next waiting, or the OnReady function.
func (sub *Subscription) wakeUp() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
	sub.mu.Lock()
	f := sub.ready
	sub.mu.Unlock()
	if f != nil {
		f()
	}
}

// pushLocked appends ds under sub.mu and reports whether the reader needs
// waking.
func (sub *Subscription) pushLocked(ds []*hubpb.Delivery) bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.err != nil || len(ds) == 0 {
		return false
	}
	var one [1]int
	sizes := one[:0]
	n := 0
	for _, d := range ds {
		sz := d.GetEnvelope().SizeVT() // proto.Size, without reflection
		sizes = append(sizes, sz)
		n += sz
	}
	cfg := &sub.f.cfg
	logged := len(sub.queue) - sub.ndeltas // deltas do not count against these bounds
	switch {
	case logged+len(ds) > cfg.SubscriberBuffer:
		sub.cut(sub.f.limitErr("--subscriber-buffer", cfg.SubscriberBuffer, hub.ErrSlowSubscriber,
			"the subscriber's buffer of deliveries is full (%d unread, %d more to queue)", logged, len(ds)))
	case logged > 0 && sub.queued+n > cfg.SubscriberBufferBytes:
		sub.cut(sub.f.limitErr("--subscriber-buffer-bytes", cfg.SubscriberBufferBytes, hub.ErrSlowSubscriber,
			"the subscriber's buffer of bytes is full (%d deliveries, %d bytes unread, %d more to queue)", logged, sub.queued, n))
	default:
		if err := sub.reserve(n); err != nil {
			sub.cut(err)
			break
		}
		sub.sizes = append(sub.sizes, sizes...)
		sub.queue = append(sub.queue, ds...)
		sub.queued += n
	}
	return true
}

// cut ends a subscriber that fell behind; sub.mu is held.
func (sub *Subscription) cut(err error) {
	sub.err = err
	sub.unreserve(sub.queued)
	sub.queue, sub.sizes, sub.queued, sub.ndeltas, sub.deltaBytes = nil, nil, 0, 0, 0
	sub.f.cfg.Logger.Warn().Str("agent", sub.holder).Str("session", sub.watch.String()).Err(err).Msg("slow subscriber cut off")
	go sub.unregister()
}

// fail ends the subscription with err.
func (sub *Subscription) fail(err error) {
	sub.mu.Lock()
	if sub.err == nil {
		sub.err = err
		sub.unreserve(sub.queued)
		sub.queue, sub.sizes, sub.queued, sub.ndeltas, sub.deltaBytes = nil, nil, 0, 0, 0
	}
	sub.mu.Unlock()
	sub.wakeUp()
}

// Close ends the subscription; Next then returns hub.ErrClosed.
func (sub *Subscription) Close() {
	sub.fail(hub.ErrClosed)
	sub.unregister()
}

// unregister removes the subscription from delivery and frees its place
// among its agent's streams.
func (sub *Subscription) unregister() {
	sub.f.releaseStream(sub)
	sub.f.remove(sub)
}

// Next returns the next delivery, waiting until there is one or ctx is
// done. After the subscription ends it returns why: ErrSlowSubscriber,
// ErrClosed, or a log read error; a tree watch returns io.EOF once its root
// has ended and everything written with that end was handed out.
func (sub *Subscription) Next(ctx context.Context) (*hubpb.Delivery, error) {
	d, _, err := sub.take(ctx, true)
	return d, err
}

// TryNext is Next without the wait: it returns false when no delivery is
// ready now. It still reads a catch-up from the log. A reader that uses
// it learns of new deliveries from OnReady.
func (sub *Subscription) TryNext(ctx context.Context) (*hubpb.Delivery, bool, error) {
	return sub.take(ctx, false)
}

// OnReady sets f to be called, on the goroutine that queues a delivery or
// ends the subscription, each time a reader using TryNext may find
// something new. f must return at once (it may start a goroutine); it is
// called outside the subscription's locks. Set it before the first
// TryNext, and call TryNext until it reports nothing after each call of f.
func (sub *Subscription) OnReady(f func()) {
	sub.mu.Lock()
	sub.ready = f
	sub.mu.Unlock()
}

// take is Next, waiting for a delivery when wait is set.
func (sub *Subscription) take(ctx context.Context, wait bool) (*hubpb.Delivery, bool, error) {
	d, ok, err := sub.next(ctx, wait)
	if !ok || err != nil {
		return nil, false, err
	}
	if sub.tree && d.GetEnvelope().GetSessionId() == sub.watch.String() && session.Ends(d.GetEnvelope().GetType()) {
		sub.over = true
	}
	if d.GetYourTurn() && sub.turnView != nil {
		d = sub.withView(ctx, d)
	}
	return d, true, nil
}

// withView returns turn notice d with the agent's view of its session
// (SubscribeOptions.TurnView), built now, on the reader's goroutine and
// outside every lock: what GetView called on receipt would return, one
// round trip sooner. Deliveries are shared between subscriptions, so d is
// copied. A view that cannot be built (the session is gone) is left out:
// the agent asks for it as before.
func (sub *Subscription) withView(ctx context.Context, d *hubpb.Delivery) *hubpb.Delivery {
	id, err := session.ParseID(d.GetEnvelope().GetSessionId())
	if err != nil {
		return d
	}
	v, err := sub.f.View(ctx, sub.agent, id, *sub.turnView)
	if err != nil {
		return d
	}
	return &hubpb.Delivery{Envelope: d.GetEnvelope(), YourTurn: true, View: v}
}

func (sub *Subscription) next(ctx context.Context, wait bool) (*hubpb.Delivery, bool, error) {
	for {
		if err := sub.errNow(); err != nil {
			return nil, false, err
		}
		if d, ok := sub.nextReady(); ok {
			return d, true, nil
		}
		if len(sub.spans) > 0 {
			if err := sub.readSpan(ctx); err != nil {
				sub.fail(err)
			}
			continue
		}
		if d, ok, err := sub.pop(); err != nil {
			return nil, false, err
		} else if ok {
			if d.GetDelta() != nil {
				return d, true, nil // best-effort, outside the seq bookkeeping
			}
			if d, keep := sub.filter(d); keep {
				return d, true, nil
			}
			continue
		}
		if sub.over {
			return nil, false, io.EOF
		}
		if !wait {
			return nil, false, nil
		}
		select {
		case <-sub.wake:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

func (sub *Subscription) errNow() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// nextReady returns a catch-up delivery, or a pending turn once catch-up is
// over.
func (sub *Subscription) nextReady() (*hubpb.Delivery, bool) {
	for len(sub.batch) > 0 {
		d := sub.batch[0]
		sub.batch = sub.batch[1:]
		if seq, ok := sub.turnAt[d.GetEnvelope().GetSessionId()]; ok && seq == d.GetEnvelope().GetSeq() {
			d.YourTurn = true // one map lookup: a catch-up over N sessions costs O(N), not O(N²)
		}
		if d, keep := sub.filter(d); keep {
			return d, true
		}
	}
	if len(sub.spans) > 0 {
		return nil, false
	}
	for len(sub.turns) > 0 {
		d := sub.turns[0]
		sub.turns = sub.turns[1:]
		if d, keep := sub.filter(d); keep {
			return d, true
		}
	}
	return nil, false
}

// filter drops what was already handed out and records what is. An
// envelope is handed out once; a turn is told once per trigger, on the
// envelope itself when it is handed out with it, else on its own. A terse
// subscription drops what does not ask its agent to act (acts), after
// recording it: a turn told before is not told again.
func (sub *Subscription) filter(d *hubpb.Delivery) (*hubpb.Delivery, bool) {
	e := d.GetEnvelope()
	id, seq := e.GetSessionId(), e.GetSeq()
	fresh := seq > sub.sent[id]
	turn := d.GetYourTurn() && seq > sub.told[id]
	if !fresh && !turn {
		return d, false
	}
	if fresh {
		sub.sent = setSeq(sub.sent, id, seq)
	}
	if turn {
		sub.told = setSeq(sub.told, id, seq)
	}
	if turn != d.GetYourTurn() {
		d = &hubpb.Delivery{Envelope: e, YourTurn: turn} // deliveries are shared: never change one
	}
	if sub.terse && !acts(d, sub.agent) {
		return d, false
	}
	return d, true
}

// setSeq sets m[id] to seq, making m on first use (an idle subscription
// holds no map).
func setSeq(m map[string]uint64, id string, seq uint64) map[string]uint64 {
	if m == nil {
		m = map[string]uint64{}
	}
	m[id] = seq
	return m
}

func (sub *Subscription) pop() (*hubpb.Delivery, bool, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.err != nil {
		return nil, false, sub.err
	}
	if len(sub.queue) == 0 {
		return nil, false, nil
	}
	d := sub.queue[0]
	sub.queue[0] = nil
	sub.queue = sub.queue[1:]
	sub.queued -= sub.sizes[0]
	sub.unreserve(sub.sizes[0])
	sub.sizes = sub.sizes[1:]
	if dl := d.GetDelta(); dl != nil {
		sub.ndeltas--
		sub.deltaBytes -= len(dl.GetText())
	}
	return d, true, nil
}

// catchupChunk is how many log records a catch-up reads at a time, at
// most MaxReadBytes of them past the first.
const catchupChunk = 256

// readSpan reads the next chunk of the first catch-up span from the log.
func (sub *Subscription) readSpan(ctx context.Context) error {
	sp := &sub.spans[0]
	n, size := 0, 0
	// A chunk is short; reading it does not depend on the caller giving up.
	err := sub.f.h.Log().Scan(context.WithoutCancel(ctx), sp.id, sp.from, func(seq uint64, data []byte) error {
		if seq > sp.to || n >= catchupChunk || (n > 0 && size+len(data) > MaxReadBytes) {
			return errStop
		}
		n, size = n+1, size+len(data)
		sp.from = seq + 1
		e, err := session.UnmarshalEnvelope(data)
		if err != nil {
			return err
		}
		e.Call = sp.call
		if sub.sees(e) {
			sub.batch = append(sub.batch, &hubpb.Delivery{Envelope: e})
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("catching up session %v from seq %d: %w", sp.id, sp.from, err)
	}
	if sp.from > sp.to || n == 0 {
		sub.spans = sub.spans[1:]
	}
	return nil
}

// acts reports whether a terse subscription of agent hands out d: what
// asks the agent to act (its turn, an invite naming it, a question or its
// withdrawal) or ends its work in a session.
func acts(d *hubpb.Delivery, agent string) bool {
	if d.GetYourTurn() {
		return true
	}
	e := d.GetEnvelope()
	switch t := e.GetType(); t {
	case session.EventInvite:
		return slices.Contains(e.GetInvite().GetInvitees(), agent)
	case session.EventQuestion, session.EventQuestionClosed:
		return true
	default:
		return session.Ends(t)
	}
}

// visibleTo returns e, or a copy without its payload when name may not see
// it.
func visibleTo(e *hubpb.Envelope, name string) *hubpb.Envelope {
	if session.Visible(e, name) {
		return e
	}
	c := proto.CloneOf(e)
	c.Payload = nil
	return c
}
