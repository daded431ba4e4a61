package feed

import (
	"sync/atomic"

	"github.com/hubd/hubd/hub"
)

// takeStream counts a new stream of agent's, or refuses it past the
// feed's MaxStreamsPerAgent, unless it rides on place (the agent stream
// it is delivered on, counted already); either way its unread bytes count
// against agent's AgentBufferBytes.
func (f *Feed) takeStream(sub *Subscription, agent string, place *StreamPlace) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if place == nil {
		if err := f.countStream(agent); err != nil {
			return err
		}
		sub.counted.Store(true)
	}
	sub.holder = agent
	b := f.bufs[agent]
	if b == nil {
		b = &agentBuf{}
		f.bufs[agent] = b
	}
	b.streams++
	sub.buf = b
	sub.attached.Store(true)
	return nil
}

// countStream counts a stream of agent's, or refuses it past
// MaxStreamsPerAgent; f.mu is held.
func (f *Feed) countStream(agent string) error {
	if n := f.streams[agent]; n >= f.cfg.MaxStreamsPerAgent {
		return f.limitErr("--max-streams-per-agent", f.cfg.MaxStreamsPerAgent, hub.ErrLimit,
			"%q holds %d streams (AgentStream, Subscribe and Watch) over all its connections", agent, n)
	}
	f.streams[agent]++
	return nil
}

// uncountStream frees a place counted by countStream; f.mu is held.
func (f *Feed) uncountStream(agent string) {
	if f.streams[agent]--; f.streams[agent] <= 0 {
		delete(f.streams, agent)
	}
}

// releaseStream uncounts a stream (once). The flags are changed under the
// feed's mutex with the counts, so a Close racing the cut-off's own
// release returns only once the place is free.
func (f *Feed) releaseStream(sub *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sub.counted.CompareAndSwap(true, false) {
		f.uncountStream(sub.holder)
	}
	if sub.attached.CompareAndSwap(true, false) {
		if sub.buf.streams--; sub.buf.streams <= 0 && f.bufs[sub.holder] == sub.buf {
			delete(f.bufs, sub.holder)
		}
	}
}

// StreamPlace is one of an agent's places among its streams
// (MaxStreamsPerAgent) held by a stream that is not a subscription or a
// watch of the hub's: an agent's stream, which may carry one
// subscription (SubscribeOptions.Place) and sends. Release it when the
// stream ends.
type StreamPlace struct {
	f     *Feed
	agent string
	held  atomic.Bool
}

// TakeStream takes a place among agent's streams, or refuses it with
// LIMIT_REACHED past MaxStreamsPerAgent: a stream that only sends counts
// as one that subscribes does, over all the agent's connections.
func (f *Feed) TakeStream(agent string) (*StreamPlace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.countStream(agent); err != nil {
		return nil, err
	}
	p := &StreamPlace{f: f, agent: agent}
	p.held.Store(true)
	return p, nil
}

// Release frees the place (once).
func (p *StreamPlace) Release() {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.held.CompareAndSwap(true, false) {
		p.f.uncountStream(p.agent)
	}
}

// reserve counts n more bytes unread against the agent's and the hub's
// bounds, or returns the bound it would pass (and counts nothing).
func (sub *Subscription) reserve(n int) error {
	f, b := sub.f, sub.buf
	if b != nil && f.cfg.AgentBufferBytes > 0 {
		if v := b.bytes.Add(int64(n)); v > int64(f.cfg.AgentBufferBytes) {
			b.bytes.Add(-int64(n))
			return f.limitErr("--agent-buffer-bytes", f.cfg.AgentBufferBytes, hub.ErrSlowSubscriber,
				"%q's streams hold %d bytes unread over all its connections, and this delivery is %d more", sub.holder, v-int64(n), n)
		}
	} else if b != nil {
		b.bytes.Add(int64(n))
	}
	if v := f.buffered.Add(int64(n)); f.cfg.TotalBufferBytes > 0 && v > int64(f.cfg.TotalBufferBytes) {
		sub.unreserve(n)
		return f.limitErr("--total-buffer-bytes", f.cfg.TotalBufferBytes, hub.ErrSlowSubscriber,
			"the hub's streams hold %d bytes unread, and this delivery is %d more", v-int64(n), n)
	}
	return nil
}

// unreserve uncounts n bytes handed out or dropped.
func (sub *Subscription) unreserve(n int) {
	if n == 0 {
		return
	}
	if b := sub.buf; b != nil {
		b.bytes.Add(-int64(n))
	}
	sub.f.buffered.Add(-int64(n))
}
