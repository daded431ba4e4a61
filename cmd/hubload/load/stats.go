package load

import (
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Stats gathers the measurements of a load run. Times are kept as offsets
// from base (monotonic); the window is [from, until).
type Stats struct {
	base        time.Time
	from, until atomic.Int64
	accepted    atomic.Uint64
	ack, told   histogram

	// started is closed by the first acknowledgement recorded, in the
	// window or not.
	started   chan struct{}
	startOnce sync.Once

	mu       sync.Mutex
	rejected map[string]uint64
}

// NewStats returns a recorder whose window is not open yet.
func NewStats() *Stats {
	s := &Stats{base: time.Now(), rejected: map[string]uint64{}, started: make(chan struct{})}
	s.from.Store(math.MaxInt64)
	s.until.Store(math.MaxInt64)
	return s
}

// Open starts the measurement window at t.
func (s *Stats) Open(t time.Time) { s.from.Store(int64(t.Sub(s.base))) }

// Shut ends the measurement window at t.
func (s *Stats) Shut(t time.Time) { s.until.Store(int64(t.Sub(s.base))) }

// Window returns the length of the measurement window.
func (s *Stats) Window() time.Duration {
	from, until := s.from.Load(), s.until.Load()
	if from == math.MaxInt64 || until < from {
		return 0
	}
	return time.Duration(until - from)
}

// in reports whether t falls in the measurement window.
func (s *Stats) in(t time.Time) bool {
	d := int64(t.Sub(s.base))
	return d >= s.from.Load() && d < s.until.Load()
}

// Acked records a send begun at start and acknowledged at done; it counts
// when it began in the window.
func (s *Stats) Acked(start, done time.Time) {
	s.startOnce.Do(func() { close(s.started) })
	if s.in(start) {
		s.accepted.Add(1)
		s.ack.record(done.Sub(start))
	}
}

// ToldAfter records the time from a send begun at start to the next
// speaker being told.
func (s *Stats) ToldAfter(start time.Time, d time.Duration) {
	if s.in(start) {
		s.told.record(d)
	}
}

// Started is closed by the first acknowledgement recorded, in the window
// or not.
func (s *Stats) Started() <-chan struct{} { return s.started }

// Accepted is how many sends begun in the window were acknowledged.
func (s *Stats) Accepted() uint64 { return s.accepted.Load() }

// SendToAck summarises the acknowledged sends' latencies.
func (s *Stats) SendToAck() Latency { return summarize(&s.ack) }

// SendToTold summarises the times from a send to the next speaker told.
func (s *Stats) SendToTold() Latency { return summarize(&s.told) }

// Add adds what o recorded in its window to s: its acknowledged sends
// and both latencies (s's own window is left as it is).
func (s *Stats) Add(o *Stats) {
	s.accepted.Add(o.accepted.Load())
	s.ack.add(&o.ack)
	s.told.add(&o.told)
}

// reject counts a failure by reason.
func (s *Stats) reject(reason string) {
	s.mu.Lock()
	s.rejected[reason]++
	s.mu.Unlock()
}

// rejections returns a copy of the failure counts.
func (s *Stats) rejections() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.rejected)
}

// correlator matches, in one session, the acknowledgement of a send (which
// gives its seq and start) with the your_turn delivery of that seq to the
// next speaker, in whichever order they arrive.
type correlator struct {
	mu    sync.Mutex
	start map[uint64]time.Time // acked, not yet told
	told  map[uint64]time.Time // told, not yet acked
}

// sent records that the send begun at start was acknowledged as seq; if
// the next speaker was already told, it returns the latency.
func (c *correlator) sent(seq uint64, start time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.told[seq]; ok {
		delete(c.told, seq)
		return at.Sub(start), true
	}
	c.start = remember(c.start, seq, start)
	return 0, false
}

// toldAt records that the next speaker was told at at that seq began its
// turn; if the send was already acknowledged, it returns its start and the
// latency.
func (c *correlator) toldAt(seq uint64, at time.Time) (time.Time, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if start, ok := c.start[seq]; ok {
		delete(c.start, seq)
		return start, at.Sub(start), true
	}
	c.told = remember(c.told, seq, at)
	return time.Time{}, 0, false
}

// remember stores t at seq, forgetting entries far behind it (a send
// whose told never comes: the session closed, or a stream was reopened).
func remember(m map[uint64]time.Time, seq uint64, t time.Time) map[uint64]time.Time {
	if m == nil {
		m = map[uint64]time.Time{}
	}
	if len(m) > 16 {
		for k := range m {
			if k+16 < seq {
				delete(m, k)
			}
		}
	}
	m[seq] = t
	return m
}
